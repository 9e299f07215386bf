import { describe, expect, it } from "vitest";
import { as, createTestOrganization, eventually, useTestApi, useTestWorker } from "./harness.js";

const api = useTestApi({}, { ownDatabase: true });
useTestWorker(api);

describe("delivery smoke", () => {
  it("delivers a sandbox message", async () => {
    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    const channels = await client.get("/channels", { query: { type: "messenger" } });
    const contact = await client.post("/contacts", { body: { name: "A" } });
    const conversation = await client.post("/conversations", {
      body: { contact_id: contact.body.id, channel_id: channels.body.data[0].id },
    });
    const sent = await client.post("/messages", { body: { conversation_id: conversation.body.id, type: "text", text: "hi" } });
    expect(sent.body.status).toBe("queued");
    const final = await eventually(
      () => client.get(`/messages/${sent.body.id}`),
      (response) => response.body.status === "delivered",
    );
    expect(final.body.status).toBe("delivered");
  });
});
