import { expect, it } from "vitest";
import { jsonSyntaxErrorOffset, locateJsonSyntaxError } from "./json-syntax.js";

it("finds a fault exactly where JSON.parse finds one, and locates it by line and column", () => {
  const cases = [
    "{name:",
    '{"a":1,}',
    "abc",
    '{"a":1}x',
    '{"a": tru}',
    "",
    '{\n  "a": 1\n  "b": 2}',
    '{"a":"x\ty"}',
    '{"a": 01}',
    "[1,2",
    "{}",
    "[]",
    "[[[]]]",
    '{"a":[1,{"b":null}],"c":"\\u00e9\\n"}',
    " 1 ",
    '"s"',
    "-0.5e+3",
    "[1,]",
    '{"a"}',
    '{"a":}',
    '"\\x"',
    "[1 2]",
    '{"a":1 "b":2}',
    "-",
    "1.",
    "nul",
    "[",
    '{"a":{"b":[true,false]}} ',
    '"\\ud800"',
  ];
  for (const c of cases) {
    let valid = true;
    try {
      JSON.parse(c);
    } catch {
      valid = false;
    }
    expect(jsonSyntaxErrorOffset(c) === undefined, c).toBe(valid);
  }
  expect(locateJsonSyntaxError('{\n  "a": 1\n  "b": 2}')).toEqual({ line: 3, column: 3, reason: "unexpected '\"'" });
  expect(locateJsonSyntaxError('{"a": tru}')).toEqual({ line: 1, column: 7, reason: "unexpected 't'" });
  expect(jsonSyntaxErrorOffset("[".repeat(100000))).toBe(100000);
});
