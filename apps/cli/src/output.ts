/** How results reach the user: raw JSON, an aligned table on a terminal, or tab-separated text in a pipe. */
export type Mode = "json" | "table" | "tsv";

export interface Column {
  header: string;
  /** A path into the object, dots for nesting (`contact.name`). */
  path: string;
}

export function colorEnabled(stream: NodeJS.WriteStream): boolean {
  // NO_COLOR (https://no-color.org) wins whenever it is set, even to an empty string.
  return stream.isTTY === true && process.env.NO_COLOR === undefined;
}

const paint = (code: number) => (text: string, stream: NodeJS.WriteStream) =>
  colorEnabled(stream) ? `\u001b[${code}m${text}\u001b[0m` : text;
export const bold = paint(1);
export const red = paint(31);
export const dim = paint(2);

export function outputMode(json: boolean): Mode {
  if (json) return "json";
  return process.stdout.isTTY ? "table" : "tsv";
}

function pick(value: unknown, path: string): unknown {
  let current: unknown = value;
  for (const part of path.split(".")) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

function cell(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value.replace(/[\t\n]/g, " ");
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value) && value.every((item) => typeof item === "string")) return value.join(",");
  return JSON.stringify(value);
}

function write(text: string): void {
  process.stdout.write(`${text}\n`);
}

/** A list of resources. In JSON mode the items are printed as the API's list object. */
export function printList(
  mode: Mode,
  items: readonly unknown[],
  columns: Column[],
  nextCursor: string | null = null,
): void {
  const hasMore = nextCursor !== null;
  if (mode === "json") {
    write(
      JSON.stringify(
        { object: "list", data: items, pagination: { has_more: hasMore, next_cursor: nextCursor } },
        null,
        2,
      ),
    );
    return;
  }
  const rows = items.map((item) => columns.map((column) => cell(pick(item, column.path))));
  if (mode === "tsv") {
    // No header in a pipe, so `cut -f1` gives ids straight away.
    for (const row of rows) write(row.join("\t"));
    return;
  }
  const headers = columns.map((column) => column.header.toUpperCase());
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? "").length)));
  const line = (row: string[]) =>
    row
      .map((value, i) => value.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  write(bold(line(headers), process.stdout));
  for (const row of rows) write(line(row));
  if (items.length === 0) write(dim("(none)", process.stdout));
  if (hasMore) write(dim("(more: use --all or a larger --limit)", process.stdout));
}

/** One resource: every top-level field as `key value`. */
export function printObject(mode: Mode, value: unknown): void {
  if (mode === "json" || value === null || typeof value !== "object") {
    write(JSON.stringify(value, null, 2));
    return;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (mode === "tsv") {
    for (const [key, field] of entries) write(`${key}\t${cell(field)}`);
    return;
  }
  const width = Math.max(...entries.map(([key]) => key.length));
  for (const [key, field] of entries) write(`${bold(key.padEnd(width), process.stdout)}  ${cell(field)}`);
}
