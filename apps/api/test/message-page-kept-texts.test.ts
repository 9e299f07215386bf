import { describe, expect, it } from "vitest";
import { sendableConversation, sendText, testClient } from "./delivery-helpers.js";
import { useTestApi, walkList } from "./harness.js";

const statements: string[] = [];
const api = useTestApi({}, { onQuery: (query) => statements.push(query) });

/** The page statements sent since `from`: each reads the conversation's messages, whole or their versions only. */
function pageReadsSince(from: number) {
  return statements
    .slice(from)
    .filter((statement) => statement.includes('"row_version"'))
    .map((statement) => (statement.includes('"text"') ? "whole" : "versions"));
}

describe("a page read again, from its messages' kept texts", () => {
  it("reads only its messages' versions, and answers as a whole read does", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "whatsapp");
    for (let index = 0; index < 4; index++) await sendText(client, conversation.id, `m${index}`);
    const path = `/conversations/${conversation.id}/messages`;

    // Read whole the first time, and the second (the conversation was read again soon: its
    // texts are kept then); from the third, its versions only.
    let from = statements.length;
    const whole = await client.get(path);
    expect(whole.status).toBe(200);
    expect(pageReadsSince(from)).toEqual(["whole"]);
    from = statements.length;
    await client.get(path);
    expect(pageReadsSince(from)).toEqual(["whole"]);

    from = statements.length;
    const again = await client.get(path);
    expect(pageReadsSince(from)).toEqual(["versions"]);
    expect(again.body).toEqual(whole.body);

    // By pages of two, with their cursors: the same messages as one page.
    from = statements.length;
    const walked = await walkList(client, path, { limit: 2 });
    expect(walked).toEqual(whole.body.data);
    expect(pageReadsSince(from).every((read) => read === "versions")).toBe(true);
  });

  it("reads a page whole again when one of its messages changed, and answers the change", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "whatsapp");
    const sent = await sendText(client, conversation.id, "to change");
    const path = `/conversations/${conversation.id}/messages`;
    await client.get(path);
    await client.get(path);

    await api.client.sql`update messages set status = 'failed', error_code = 'provider_rejected', error_message = 'No'
                         where id = ${sent.id}`;
    const from = statements.length;
    const changed = await client.get(path);
    expect(pageReadsSince(from)).toEqual(["versions", "whole"]);
    const message = changed.body.data.find((each: { id: string }) => each.id === sent.id);
    expect(message).toMatchObject({ status: "failed", error: { code: "provider_rejected", message: "No" } });
    expect(message).toEqual((await client.get(`/messages/${sent.id}`)).body);
  });

  it("answers another organization's conversation 404, read again or not", async () => {
    const owner = await testClient(api);
    const conversation = await sendableConversation(owner.client, "whatsapp");
    await sendText(owner.client, conversation.id, "mine");
    const path = `/conversations/${conversation.id}/messages`;
    await owner.client.get(path);
    await owner.client.get(path);
    const stranger = await testClient(api);
    for (let read = 0; read < 2; read++) expect((await stranger.client.get(path)).status).toBe(404);
    expect((await owner.client.get(path)).body.data).toHaveLength(2);
  });
});
