import { describe, expect, it } from "vitest";
import { sendableConversation, sendText, testClient } from "./delivery-helpers.js";
import { makeImage, upload } from "./files.js";
import { useTestApi, walkList } from "./harness.js";

/**
 * The hot paths' levers (GROUP_COMMIT, MESSAGE_TEXTS) only make requests
 * cheaper: switched off to measure what each earns (bench/README.md), the API answers
 * exactly as with them on. Pages and sends, each lever off in turn and all together.
 */
const settings: Record<string, string>[] = [
  { MESSAGE_TEXTS: "false" },
  { MESSAGE_TEXTS: "false", GROUP_COMMIT: "false" },
];

describe.each(settings)("with %o", (env) => {
  const api = useTestApi(env);

  it("pages a conversation newest first, each message as GET answers it and as it is now", async () => {
    const { org, client } = await testClient(api);
    const conversation = await sendableConversation(client, "whatsapp");
    const image = await upload(api, org.test, {
      bytes: await makeImage("png", { width: 32, height: 32 }),
      type: "image/png",
      filename: "photo.png",
    });
    expect(image.status).toBe(201);
    const sent: { id: string }[] = [];
    for (let index = 0; index < 4; index++) sent.push(await sendText(client, conversation.id, `m${index}`));
    const withImage = await client.post("/messages", {
      body: { conversation_id: conversation.id, type: "image", attachment_id: image.body.id },
    });
    expect(withImage.status).toBe(201);
    const path = `/conversations/${conversation.id}/messages`;

    const first = await client.get(path);
    expect(first.status).toBe(200);
    const ids = first.body.data.map((message: { id: string }) => message.id);
    expect(ids.slice(0, 5)).toEqual([withImage.body.id, ...[...sent].reverse().map((message) => message.id)]);
    expect(first.body.data).toHaveLength(6);
    expect(first.body.data[5]).toMatchObject({ direction: "inbound" });
    for (const message of first.body.data) expect(message).toEqual((await client.get(`/messages/${message.id}`)).body);

    // Changed in place: the next read answers the change, twice.
    const changed = sent[0]?.id ?? "";
    await api.client.sql`update messages set status = 'failed', error_code = 'provider_rejected', error_message = 'One'
                         where id = ${changed}`;
    const failed = await client.get(path);
    expect(failed.body.data.find((message: { id: string }) => message.id === changed).error).toEqual({
      code: "provider_rejected",
      message: "One",
    });
    await api.client.sql`update messages set error_message = 'Two' where id = ${changed}`;
    const again = await client.get(path);
    expect(again.body.data.find((message: { id: string }) => message.id === changed).error.message).toBe("Two");

    // By pages of two, every message once; filtered by direction.
    expect((await walkList(client, path, { limit: 2 })).map((message) => message.id)).toEqual(ids);
    const inbound = await client.get(path, { query: { direction: "inbound" } });
    expect(inbound.body.data.map((message: { id: string }) => message.id)).toEqual([ids[5]]);
  });

  it("answers an empty page for a conversation without messages, 404 for an unknown one", async () => {
    const { client } = await testClient(api);
    const other = await sendableConversation(client, "whatsapp");
    const contact = await client.post("/contacts", { body: { name: "Quiet" } });
    const quiet = await client.post("/conversations", { body: { contact_id: contact.body.id } });
    const empty = await client.get(`/conversations/${quiet.body.id}/messages`);
    expect(empty.body).toEqual({ object: "list", data: [], pagination: { has_more: false, next_cursor: null } });
    const unknown = await client.get("/conversations/conv_01ARZ3NDEKTSV4RRFFQ69G5FAV/messages");
    expect(unknown.status).toBe(404);
    expect((await client.get(`/conversations/${other.id}/messages`)).body.data).toHaveLength(1);
  });

  it("stores each of many sends made at once, each answered with its own message", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "whatsapp");
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        client.post("/messages", {
          body: { conversation_id: conversation.id, type: "text", text: `at once ${index}` },
        }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(201));
    const stored = await walkList(client, `/conversations/${conversation.id}/messages`, { limit: 100 });
    for (const answer of answers) expect(stored).toContainEqual(answer.body);
  });
});
