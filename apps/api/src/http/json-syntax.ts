/** Where a JSON text first breaks the grammar, for a 400 that says where to look. */
export interface JsonSyntaxFault {
  /** 1-based, counting `\n` line breaks. */
  line: number;
  /** 1-based, in characters (UTF-16 code units) from the start of the line. */
  column: number;
  /** `unexpected end of input` or `unexpected '<character>'`. */
  reason: string;
}

const WHITESPACE = new Set([" ", "\t", "\n", "\r"]);
const ESCAPES = new Set(['"', "\\", "/", "b", "f", "n", "r", "t"]);
const HEX = /^[0-9a-fA-F]{4}$/;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

/**
 * The offset at which `text` stops being JSON, or undefined when it is valid JSON.
 * Iterative (an explicit stack), so a deeply nested body cannot exhaust the call stack.
 * Node's own parser names the position only for some faults; this one names it always.
 */
export function jsonSyntaxErrorOffset(text: string): number | undefined {
  let at = 0;
  const skipWhitespace = () => {
    while (at < text.length && WHITESPACE.has(text.charAt(at))) at++;
  };
  /** Reads a string starting at its opening quote; the offset of a fault, or undefined. */
  const readString = (): number | undefined => {
    at++;
    while (at < text.length) {
      const char = text.charAt(at);
      if (char === '"') {
        at++;
        return undefined;
      }
      if (char.charCodeAt(0) < 0x20) return at;
      if (char === "\\") {
        const escaped = text.charAt(at + 1);
        if (escaped === "u") {
          if (!HEX.test(text.slice(at + 2, at + 6))) return at + 1;
          at += 6;
        } else if (ESCAPES.has(escaped)) {
          at += 2;
        } else {
          return at + 1;
        }
      } else {
        at++;
      }
    }
    return at;
  };
  /** Reads a scalar or opens a container; the offset of a fault, or undefined. */
  const readValue = (stack: string[]): number | undefined => {
    skipWhitespace();
    const char = text.charAt(at);
    if (char === "{" || char === "[") {
      stack.push(char === "{" ? "}" : "]");
      at++;
      return undefined;
    }
    if (char === '"') return readString();
    for (const word of ["true", "false", "null"]) {
      if (text.startsWith(word, at)) {
        at += word.length;
        return undefined;
      }
    }
    NUMBER.lastIndex = at;
    if (NUMBER.test(text) && NUMBER.lastIndex > at) {
      // A number followed straight by a digit (`01`) is a fault at that digit, found by the caller.
      at = NUMBER.lastIndex;
      return undefined;
    }
    return at;
  };

  const stack: string[] = [];
  let fault = readValue(stack);
  if (fault !== undefined) return fault;
  // After a value or an opening bracket: read members until the stack empties.
  let justOpened = stack.length > 0;
  while (stack.length > 0) {
    const closing = stack[stack.length - 1];
    skipWhitespace();
    if (justOpened && text.charAt(at) === closing) {
      stack.pop();
      at++;
      justOpened = false;
      continue;
    }
    if (!justOpened) {
      if (text.charAt(at) === closing) {
        stack.pop();
        at++;
        continue;
      }
      if (text.charAt(at) !== ",") return at;
      at++;
      skipWhitespace();
    }
    justOpened = false;
    if (closing === "}") {
      if (text.charAt(at) !== '"') return at;
      fault = readString();
      if (fault !== undefined) return fault;
      skipWhitespace();
      if (text.charAt(at) !== ":") return at;
      at++;
    }
    const depth = stack.length;
    fault = readValue(stack);
    if (fault !== undefined) return fault;
    justOpened = stack.length > depth;
  }
  skipWhitespace();
  return at < text.length ? at : undefined;
}

/** Line, column and a short reason for the first fault of `text`; undefined when it is valid JSON. */
export function locateJsonSyntaxError(text: string): JsonSyntaxFault | undefined {
  const offset = jsonSyntaxErrorOffset(text);
  if (offset === undefined) return undefined;
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  const column = offset - (before.lastIndexOf("\n") + 1) + 1;
  const char = text.codePointAt(offset);
  const reason =
    char === undefined
      ? "unexpected end of input"
      : char < 0x20
        ? `unexpected control character U+${char.toString(16).toUpperCase().padStart(4, "0")}`
        : `unexpected '${String.fromCodePoint(char)}'`;
  return { line, column, reason };
}
