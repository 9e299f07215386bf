import { describe, expect, it } from "vitest";
import { type MessageRow, messageJsonText, serializeMessage } from "./serialize.js";

const base: MessageRow = {
  id: "msg_01KB0ZT6V5S6X3MZ8Q4W7E2RAB",
  organizationId: "org_01KB0ZT6V5S6X3MZ8Q4W7E2RAB",
  environment: "test",
  conversationId: "conv_01KB0ZT6V5S6X3MZ8Q4W7E2RAB",
  direction: "outbound",
  type: "text",
  text: "Hello",
  attachmentId: null,
  metadata: {},
  status: "queued",
  errorCode: null,
  errorMessage: null,
  providerMessageId: null,
  authentication: null,
  smsSegments: null,
  smsEncoding: null,
  createdAt: new Date("2026-11-28T01:02:03.004Z"),
  updatedAt: new Date("2026-11-28T01:02:03.450Z"),
};

const variants: [string, Partial<MessageRow>][] = [
  ["a queued text", {}],
  ["an inbound message without status", { direction: "inbound", status: null }],
  ["no text", { text: null, type: "template" }],
  ["text to escape", { text: 'Quote " backslash \\ newline \n tab \t control \u0001 emoji 😀 é <script>' }],
  ["nested metadata", { metadata: { order: { id: 42, items: ["a", "b"] }, note: 'say "hi"', flag: true, none: null } }],
  ["a failure with code and message", { status: "failed", errorCode: "provider_rejected", errorMessage: 'No "route"' }],
  ["a failure without code or message", { status: "failed" }],
  ["SMS segments", { smsSegments: 3, smsEncoding: "UCS-2" }],
  ["half an SMS record", { smsSegments: 2 }],
  [
    "an inbound email's authentication",
    {
      direction: "inbound",
      status: null,
      authentication: { spf: "pass", dkim: "fail", dmarc: "none", verified: false } as MessageRow["authentication"],
    },
  ],
  ["a year before 1000", { createdAt: new Date("0999-01-01T00:00:00.000Z") }],
];

describe("messageJsonText", () => {
  it.each(variants)("writes %s as JSON.stringify writes its serialized message", (_name, change) => {
    const row = { ...base, ...change };
    const text = messageJsonText(row);
    expect(text).toBe(JSON.stringify(serializeMessage("https://parley.example", row, undefined)));
    expect(JSON.parse(text)).toEqual(serializeMessage("https://parley.example", row, undefined));
  });
});
