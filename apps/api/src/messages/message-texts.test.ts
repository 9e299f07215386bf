import { describe, expect, it } from "vitest";
import { MessageTexts } from "./message-texts.js";

describe("MessageTexts", () => {
  it("keeps a text by message and row version: another version of the message is another text", () => {
    const texts = new MessageTexts();
    const text = Buffer.from('{"id":"msg_1","status":"queued"}');
    texts.set("msg_1", "100", text);
    expect(texts.get("msg_1", "100")).toBe(text);
    expect(texts.get("msg_1", "101")).toBeUndefined();
    expect(texts.get("msg_2", "100")).toBeUndefined();
  });

  it("holds one text per message, the last version's", () => {
    const texts = new MessageTexts();
    texts.set("msg_1", "100", Buffer.from("old"));
    texts.set("msg_1", "101", Buffer.from("new"));
    expect(texts.size).toBe(1);
    expect(texts.get("msg_1", "100")).toBeUndefined();
    expect(texts.get("msg_1", "101")?.toString()).toBe("new");
  });

  it("holds at most its bound of messages, dropping the first kept first", () => {
    const texts = new MessageTexts(3);
    for (const id of ["msg_1", "msg_2", "msg_3", "msg_4"]) texts.set(id, "1", Buffer.from(`text of ${id}`));
    expect(texts.size).toBe(3);
    expect(texts.get("msg_1", "1")).toBeUndefined();
    expect(["msg_2", "msg_3", "msg_4"].map((id) => texts.get(id, "1")?.toString())).toEqual([
      "text of msg_2",
      "text of msg_3",
      "text of msg_4",
    ]);
  });

  it("admits a conversation read again among the last pages read, and forgets one read before them", () => {
    const texts = new MessageTexts(10_000, 3);
    expect(texts.admits("conv_a")).toBe(false);
    expect(texts.admits("conv_a")).toBe(true);
    expect(texts.admits("conv_b")).toBe(false);
    expect(texts.admits("conv_c")).toBe(false);
    // conv_a's two reads are now out of the last three (a, b, c then d): a first read again.
    expect(texts.admits("conv_d")).toBe(false);
    expect(texts.admits("conv_a")).toBe(false);
    expect(texts.admits("conv_d")).toBe(true);
  });

  it("counts a conversation's reads among the last pages read", () => {
    const texts = new MessageTexts(10, 3);
    expect(texts.recentReadsOf("conv_a")).toBe(0);
    texts.admits("conv_a");
    texts.admits("conv_a");
    expect(texts.recentReadsOf("conv_a")).toBe(2);
    texts.admits("conv_b");
    texts.admits("conv_b");
    expect(texts.recentReadsOf("conv_a")).toBe(1);
    texts.admits("conv_b");
    expect(texts.recentReadsOf("conv_a")).toBe(0);
    expect(texts.recentReadsOf("conv_b")).toBe(3);
  });

  it("never admits traffic spread over more conversations than its recent reads", () => {
    const texts = new MessageTexts(10_000, 256);
    let admitted = 0;
    for (let read = 0; read < 10_000; read++) if (texts.admits(`conv_${read % 1000}`)) admitted++;
    expect(admitted).toBe(0);
  });
});
