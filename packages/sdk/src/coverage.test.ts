import { operations } from "@parley/schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { json, scriptedServer } from "../test/scripted-server.js";
import { Parley } from "./index.js";

/**
 * Each operation of the catalogue and the SDK call that performs it. A new route in the
 * catalogue fails this test until it has its SDK method (and its line here).
 */
const calls: Record<string, (parley: Parley) => PromiseLike<unknown>> = {
  "contacts.list": (p) => p.contacts.list(),
  "contacts.create": (p) => p.contacts.create({}),
  "contacts.get": (p) => p.contacts.get("cnt_1"),
  "contacts.update": (p) => p.contacts.update("cnt_1", {}),
  "contacts.delete": (p) => p.contacts.delete("cnt_1"),
  "contacts.opt_outs.list": (p) => p.contacts.optOuts.list("cnt_1"),
  "conversations.list": (p) => p.conversations.list(),
  "conversations.create": (p) => p.conversations.create({ contact_id: "cnt_1" }),
  "conversations.get": (p) => p.conversations.get("conv_1"),
  "conversations.update": (p) => p.conversations.update("conv_1", {}),
  "conversations.close": (p) => p.conversations.close("conv_1"),
  "conversations.reopen": (p) => p.conversations.reopen("conv_1"),
  "conversations.assign": (p) => p.conversations.assign("conv_1", { user_id: "usr_1" }),
  "conversations.unassign": (p) => p.conversations.unassign("conv_1"),
  "conversations.typing": (p) => p.conversations.typing("conv_1"),
  "conversations.tags.add": (p) => p.conversations.tags.add("conv_1", { tag_id: "tag_1" }),
  "conversations.tags.remove": (p) => p.conversations.tags.remove("conv_1", "tag_1"),
  "conversations.notes.list": (p) => p.conversations.notes.list("conv_1"),
  "conversations.notes.create": (p) => p.conversations.notes.create("conv_1", { body: "x" }),
  "conversations.notes.update": (p) => p.conversations.notes.update("conv_1", "note_1", { body: "y" }),
  "conversations.notes.delete": (p) => p.conversations.notes.delete("conv_1", "note_1"),
  "conversations.messages.list": (p) => p.conversations.messages.list("conv_1"),
  "messages.send": (p) => p.messages.send({ conversation_id: "conv_1", type: "text", text: "x" }),
  "messages.get": (p) => p.messages.get("msg_1"),
  "uploads.create": (p) => p.uploads.create(new Uint8Array([1]), { filename: "a.txt" }),
  "attachments.content": (p) => p.attachments.download("att_1"),
  "channels.list": (p) => p.channels.list(),
  "channels.get": (p) => p.channels.get("chn_1"),
  "channels.receive_email": (p) => p.channels.receiveEmail("chn_1", "From: a@example.com\r\n\r\nHi"),
  "users.list": (p) => p.users.list(),
  "users.get": (p) => p.users.get("usr_1"),
  "teams.list": (p) => p.teams.list(),
  "teams.create": (p) => p.teams.create({ name: "x" }),
  "teams.get": (p) => p.teams.get("team_1"),
  "teams.users.list": (p) => p.teams.users.list("team_1"),
  "teams.update": (p) => p.teams.update("team_1", {}),
  "teams.delete": (p) => p.teams.delete("team_1"),
  "teams.users.add": (p) => p.teams.users.add("team_1", { user_id: "usr_1" }),
  "teams.users.remove": (p) => p.teams.users.remove("team_1", "usr_1"),
  "tags.list": (p) => p.tags.list(),
  "tags.create": (p) => p.tags.create({ name: "x" }),
  "tags.update": (p) => p.tags.update("tag_1", {}),
  "tags.delete": (p) => p.tags.delete("tag_1"),
  "custom_fields.list": (p) => p.customFields.list(),
  "custom_fields.create": (p) => p.customFields.create({ name: "x" }),
  "custom_fields.update": (p) => p.customFields.update("cf_1", { name: "y" }),
  "custom_fields.delete": (p) => p.customFields.delete("cf_1"),
  "webhooks.list": (p) => p.webhooks.list(),
  "webhooks.create": (p) => p.webhooks.create({ url: "https://example.com", events: ["*"] }),
  "webhooks.get": (p) => p.webhooks.get("wh_1"),
  "webhooks.update": (p) => p.webhooks.update("wh_1", {}),
  "webhooks.delete": (p) => p.webhooks.delete("wh_1"),
  "webhooks.rotate_secret": (p) => p.webhooks.rotateSecret("wh_1"),
  "webhooks.test": (p) => p.webhooks.test("wh_1"),
  "webhooks.deliveries.list": (p) => p.webhooks.deliveries.list("wh_1"),
  "webhooks.deliveries.retry": (p) => p.webhooks.deliveries.retry("wh_1", "whd_1"),
  "events.list": (p) => p.events.list(),
  "events.get": (p) => p.events.get("evt_1"),
  "api_keys.current": (p) => p.apiKeys.current(),
  "test_helpers.inbound_messages.create": (p) =>
    p.testHelpers.inboundMessages.create({ conversation_id: "conv_1", type: "text", text: "x" }),
};

function pattern(path: string): RegExp {
  return new RegExp(`^/v1${path.replace(/\{\w+\}/g, "[^/?]+")}(\\?.*)?$`);
}

describe("the SDK covers the catalogue", () => {
  let server: Awaited<ReturnType<typeof scriptedServer>>;
  beforeAll(async () => {
    server = await scriptedServer((_request, _index, res) =>
      json(res, 200, { object: "list", data: [], pagination: { has_more: false, next_cursor: null } }),
    );
  });
  afterAll(() => server.close());

  it("has a method for every operation", () => {
    const missing = operations.map((operation) => operation.id).filter((id) => !(id in calls));
    expect(missing).toEqual([]);
  });

  for (const operation of operations) {
    it(`${operation.id} sends ${operation.method.toUpperCase()} ${operation.path}`, async () => {
      const call = calls[operation.id];
      if (!call) throw new Error(`no SDK call for ${operation.id}`);
      const before = server.requests.length;
      await call(new Parley({ apiKey: "parley_test_x", baseUrl: server.baseUrl, maxRetries: 0 }));
      const request = server.requests[before];
      expect(request?.method).toBe(operation.method.toUpperCase());
      expect(request?.url).toMatch(pattern(operation.path));
    });
  }
});
