const BLOCK_TAGS = new Set(["p", "div", "tr", "table", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "pre", "hr"]);
const HIDDEN_TAGS = new Set(["head", "style", "script", "title", "template"]);

/**
 * Crude HTML to text for mail without a plain part: tags dropped, blocks and <br> as line
 * breaks, <blockquote> as "> " lines so that the reply parser recognises quoted history.
 * Tags are found with `<[^<>]*>`, which stops at the next "<": linear on hostile input.
 */
export function htmlToText(html: string): string {
  const out = new LineWriter();
  let hiddenUntil: string | null = null;
  for (const token of html.split(/(<[^<>]*>)/)) {
    const tag = /^<\s*(\/?)\s*([a-z][a-z0-9]*)/i.exec(token);
    if (!tag) {
      if (hiddenUntil === null && !token.startsWith("<!")) out.text(decodeEntities(token));
      continue;
    }
    const closing = tag[1] === "/";
    const name = (tag[2] ?? "").toLowerCase();
    if (hiddenUntil !== null) {
      if (closing && name === hiddenUntil) hiddenUntil = null;
    } else if (HIDDEN_TAGS.has(name) && !closing && !token.endsWith("/>")) {
      hiddenUntil = name;
    } else {
      out.tag(name, closing);
    }
  }
  return out.done();
}

/** Collects text into lines, each prefixed by the blockquote depth it started in. */
class LineWriter {
  private lines: string[] = [];
  private line = "";
  private lineDepth = 0;
  private depth = 0;

  text(value: string): void {
    const collapsed = value.replace(/\s+/g, " ");
    if (!this.line.trim()) this.lineDepth = this.depth;
    this.line += collapsed;
  }

  tag(name: string, closing: boolean): void {
    if (name === "br") this.newline();
    else if (name === "li" && !closing) this.newline("* ");
    else if (name === "blockquote") {
      this.newline();
      this.depth = Math.max(0, this.depth + (closing ? -1 : 1));
    } else if (BLOCK_TAGS.has(name)) this.newline();
  }

  done(): string {
    this.newline();
    return this.lines
      .join("\n")
      .replace(/\n{3,}/g, "\n\n")
      .trim();
  }

  private newline(start = ""): void {
    const content = this.line.trim();
    const prefix = "> ".repeat(this.lineDepth);
    // Consecutive block tags each end a line: keep at most one blank line between blocks.
    if (content || this.lines.at(-1) !== "") this.lines.push(content ? prefix + content : "");
    this.line = start;
    this.lineDepth = this.depth;
  }
}

const NAMED_ENTITIES: Record<string, string> = {
  nbsp: " ",
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  hellip: "…",
  mdash: "—",
  ndash: "–",
  rsquo: "’",
  lsquo: "‘",
  rdquo: "”",
  ldquo: "“",
  copy: "©",
  euro: "€",
};

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,8});/gi, (entity, body: string) => {
    if (body.startsWith("#")) {
      const code = body[1] === "x" || body[1] === "X" ? Number.parseInt(body.slice(2), 16) : Number(body.slice(1));
      // Control characters (tabs and line breaks among them) are spacing at most in HTML text.
      if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return " ";
      return code <= 0x10ffff ? String.fromCodePoint(code) : entity;
    }
    return NAMED_ENTITIES[body.toLowerCase()] ?? entity;
  });
}
