import EmailReplyParser from "email-reply-parser";

/*
 * email-reply-parser's regular expressions backtrack badly: a few kilobytes of crafted text
 * (many lines starting "Op ... schreef", one long line of "1234 from <x>", thousands of
 * blank lines) take seconds to minutes. Mail comes from anyone, so the parser only ever
 * sees bounded input: blank lines collapsed, long lines swapped for placeholders, and the
 * text in chunks, of which only the first few are parsed.
 */
const CHUNK_CHARS = 3_000;
const MAX_CHUNKS = 4;
const MAX_PARSED_LINE_CHARS = 300;
/** Private use: never meaningful in mail, removed from the text before it marks placeholders. */
const PLACEHOLDER = "\uE000";

/**
 * The reply without the quoted history under or between it. Only quoted fragments are
 * dropped: the parser's signature rules also match lines such as "---" or "Regards," and
 * would cut off what follows them. Text that is nothing but quote is returned whole.
 */
export function withoutQuotedHistory(text: string): string {
  const lines = normalizedLines(text);
  const kept: string[] = [];
  let start = 0;
  for (let chunk = 0; start < lines.length; chunk++) {
    if (chunk === MAX_CHUNKS) {
      // Unparsed, so kept: showing some history is better than losing any of the reply.
      kept.push(lines.slice(start).join("\n"));
      break;
    }
    const end = chunkEnd(lines, start);
    const parsed = replyOf(lines.slice(start, end));
    if (parsed.reply) kept.push(parsed.reply);
    if (parsed.historyStarts) break;
    start = end;
  }
  return kept.join("\n").trim() || text.trim();
}

/** Line ends trimmed and runs of blank lines made one: what costs the parser most, and shows nothing. */
function normalizedLines(text: string): string[] {
  const lines: string[] = [];
  for (const line of text.replaceAll(PLACEHOLDER, "").split(/\r?\n/)) {
    const trimmed = line.trimEnd();
    if (trimmed === "" && lines.at(-1) === "") continue;
    lines.push(trimmed);
  }
  return lines;
}

/** The end (exclusive) of the chunk starting at `start`: whole lines, at least one. */
function chunkEnd(lines: string[], start: number): number {
  const cost = (line: string | undefined) => Math.min(line?.length ?? 0, MAX_PARSED_LINE_CHARS) + 1;
  let end = start + 1;
  let chars = cost(lines[start]);
  while (end < lines.length && chars + cost(lines[end]) <= CHUNK_CHARS) {
    chars += cost(lines[end]);
    end++;
  }
  return end;
}

type Fragment = ReturnType<ReturnType<EmailReplyParser["read"]>["getFragments"]>[number];

/**
 * One chunk through the parser. `historyStarts`: the chunk ends inside quoted text that a
 * quote header opened ("On ... wrote:", "From: ...", "-----Original Message-----"), so the
 * rest is the earlier thread; a chunk ending in "> " lines may be an interleaved reply and
 * the next chunk is read too.
 */
function replyOf(lines: string[]): { reply: string; historyStarts: boolean } {
  const long = new Map<string, string>();
  const fragments = fragmentsOf(lines.map((line, index) => shieldLongLine(line, index, long)).join("\n"));
  if (!fragments) return { reply: lines.join("\n"), historyStarts: false };
  const reply = fragments
    .filter((fragment) => !fragment.isQuoted())
    .map((fragment) => restoreLongLines(fragment.getContent(), long))
    .join("\n")
    .trim();
  const last = fragments.findLast((fragment) => !fragment.isEmpty());
  const historyStarts = last?.isQuoted() === true && !last.getContent().trimStart().startsWith(">");
  return { reply, historyStarts };
}

function fragmentsOf(text: string): Fragment[] | null {
  try {
    return new EmailReplyParser().read(text).getFragments();
  } catch {
    return null;
  }
}

/** A long line is never a quote header: the parser sees a short stand-in, keeping a leading ">". */
function shieldLongLine(line: string, index: number, long: Map<string, string>): string {
  if (line.length <= MAX_PARSED_LINE_CHARS) return line;
  const stand = `${line.trimStart().startsWith(">") ? "> " : ""}${PLACEHOLDER}${index}${PLACEHOLDER}`;
  long.set(`${PLACEHOLDER}${index}${PLACEHOLDER}`, line);
  return stand;
}

function restoreLongLines(text: string, long: Map<string, string>): string {
  if (long.size === 0) return text;
  return text.replace(new RegExp(`(?:> )?${PLACEHOLDER}\\d+${PLACEHOLDER}`, "g"), (stand) => {
    const key = stand.startsWith(">") ? stand.slice(2) : stand;
    return long.get(key) ?? stand;
  });
}
