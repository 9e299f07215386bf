import { describe, expect, it } from "vitest";
import { as, createTestOrganization, useTestApi } from "../harness.js";
import {
  onlyConversation,
  openStream,
  startSession,
  streamedMessages,
  visitor,
  webchatChannel,
} from "../webchat-helpers.js";

const api = useTestApi();

const SECRET = "internal-crm-note-7f3a";
const PROVIDER_DETAIL = "provider-said-account-9921-suspended";
const VISITOR_FIELDS = ["created_at", "direction", "id", "status", "text", "type"];
/** A reply also names the agent the conversation is assigned to: the name only. */
const REPLY_FIELDS = ["agent_name", ...VISITOR_FIELDS].sort();

describe("what a web chat visitor sees of a message", () => {
  it("never carries the business's metadata or a provider's error details, on any visitor route or stream", async () => {
    const org = await createTestOrganization(api);
    const channelId = await webchatChannel(api, org.test);
    const token = await startSession(api, channelId);
    const own = await visitor(api, token).post("/session/messages", { text: "Hello" });
    expect(own.status).toBe(201);
    expect(Object.keys(own.body).sort()).toEqual(VISITOR_FIELDS);
    const conversationId = await onlyConversation(api, org.test, channelId);

    const stream = await openStream(api, token);
    const replies: string[] = [];
    for (const text of ["First reply", "Second reply"]) {
      const reply = await as(api, org.test).post("/messages", {
        body: { conversation_id: conversationId, type: "text", text, metadata: { crm_note: SECRET } },
      });
      expect(reply.status).toBe(201);
      expect(reply.body.metadata).toEqual({ crm_note: SECRET });
      replies.push(reply.body.id);
    }
    // A failed delivery: the provider's own words are the business's to read, not the visitor's.
    await api.client.sql`
      update messages set status = 'failed', error_code = 'provider_refused', error_message = ${PROVIDER_DETAIL}
      where id = ${replies[0] ?? ""}`;
    await api.client
      .sql`update messages set metadata = ${JSON.stringify({ crm_note: SECRET })}::jsonb where id = ${own.body.id}`;

    const streamed = await stream.readUntil((text) => replies.every((id) => text.includes(`id: ${id}`)));
    stream.close();
    const history = await visitor(api, token).get("/session/messages");
    expect(history.status).toBe(200);
    const restream = await openStream(api, token);
    const replayed = await restream.readUntil((text) => replies.every((id) => text.includes(`id: ${id}`)));
    restream.close();

    for (const text of [JSON.stringify(own.body), JSON.stringify(history.body), streamed, replayed]) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(PROVIDER_DETAIL);
      expect(text).not.toContain("metadata");
      expect(text).not.toContain(conversationId);
    }
    for (const message of [...history.body, ...streamedMessages(streamed), ...streamedMessages(replayed)]) {
      expect(Object.keys(message).sort()).toEqual(message.direction === "outbound" ? REPLY_FIELDS : VISITOR_FIELDS);
    }
    expect(history.body.map((message: { id: string }) => message.id)).toEqual([own.body.id, ...replies]);
    expect(history.body[1]).toMatchObject({
      direction: "outbound",
      type: "text",
      text: "First reply",
      status: "failed",
    });
  });
});
