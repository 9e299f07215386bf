import { capabilityMatrix, channelCapabilities } from "@parley/channels";
import { type ChannelType, channelTypes } from "@parley/schema";
import { describe, expect, it } from "vitest";
import { type Client, expectError, setupOrganization, TIMESTAMP, useTestApi, walkList } from "../../test/harness.js";
import { connectChannel } from "./service.js";

const api = useTestApi();

const CHANNEL_ID = /^chn_[0-9A-HJKMNP-TV-Z]{26}$/;
const UNKNOWN_CHANNEL = "chn_01ARZ3NDEKTSV4RRFFQ69G5FAV";
const PROVIDER_SECRET = "EAAG-provider-secret-token-4711";

const setup = () => setupOrganization(api);

async function listChannels(client: Client, query: Record<string, string | number | undefined> = {}) {
  const response = await client.get("/channels", { query: { limit: 100, ...query } });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.data;
}

async function connectLive(organizationId: string, type: ChannelType = "whatsapp") {
  return connectChannel(api.context.db, api.context.secretBox, {
    organizationId,
    environment: "live",
    type,
    name: `Live ${type}`,
    provider: "cloud_api",
    settings: { access_token: PROVIDER_SECRET, phone_number_id: "1234567890" },
  });
}

/** The matrix as the registry generates it for a channel without settings (every sandbox): the only place capabilities are written. */
function expectedCapabilities(type: ChannelType) {
  return capabilityMatrix(channelCapabilities({ type, settings: {} }));
}

describe("GET /channels", () => {
  it("lists exactly one sandbox channel of each type for a test key", async () => {
    const { client } = await setup();

    const channels = await listChannels(client);

    expect(channels).toHaveLength(channelTypes.length);
    expect(channels.map((channel: { type: string }) => channel.type).sort()).toEqual([...channelTypes].sort());
    for (const channel of channels) {
      expect(channel).toEqual({
        object: "channel",
        id: expect.stringMatching(CHANNEL_ID),
        type: channel.type,
        name: expect.any(String),
        environment: "test",
        sandbox: true,
        provider: "sandbox",
        capabilities: expectedCapabilities(channel.type),
        status: "active",
        status_reason: null,
        created_at: expect.stringMatching(TIMESTAMP),
        updated_at: expect.stringMatching(TIMESTAMP),
      });
    }
  });

  it("lists no channel for the live key of a new organization", async () => {
    const { live } = await setup();

    const response = await live.get("/channels");

    expect(response.status).toBe(200);
    expect(response.body).toEqual({ object: "list", data: [], pagination: { has_more: false, next_cursor: null } });
  });

  it("pages with a cursor, newest first", async () => {
    const { client } = await setup();
    const all = await listChannels(client);

    const page = await client.get("/channels", { query: { limit: 2 } });
    const walked = await walkList(client, "/channels", { limit: 2 });

    expect(page.body.data).toEqual(all.slice(0, 2));
    expect(page.body.pagination).toEqual({ has_more: true, next_cursor: expect.any(String) });
    expect(walked).toEqual(all);
    const stamps = all.map((channel: { created_at: string; id: string }) => `${channel.created_at}|${channel.id}`);
    expect(stamps).toEqual([...stamps].sort().reverse());
  });

  it.each(channelTypes)("filters by type=%s", async (type) => {
    const { client } = await setup();

    const channels = await listChannels(client, { type });

    expect(channels.map((channel: { type: string }) => channel.type)).toEqual([type]);
  });

  it.each([
    ["type", "telegram"],
    ["type", "WhatsApp"],
    ["limit", "0"],
    ["provider", "sandbox"],
  ])("refuses %s=%s with 422 naming it", async (param, value) => {
    const { client } = await setup();

    const response = await client.get("/channels", { query: { [param]: value } });

    expectError(response, 422, "validation_error", param);
  });

  it("refuses a cursor of another list with 422 invalid_cursor", async () => {
    const { client } = await setup();
    await client.post("/tags", { body: { name: "A" } });
    await client.post("/tags", { body: { name: "B" } });
    const tags = await client.get("/tags", { query: { limit: 1 } });

    expectError(
      await client.get("/channels", { query: { after: tags.body.pagination.next_cursor } }),
      422,
      "invalid_cursor",
    );
  });
});

describe("capability matrix", () => {
  it.each(channelTypes)("%s carries the registry's generated matrix in list and GET", async (type) => {
    const { client } = await setup();
    const [listed] = await listChannels(client, { type });

    const fetched = await client.get(`/channels/${listed.id}`);

    expect(listed.capabilities).toEqual(expectedCapabilities(type));
    expect(fetched.body.capabilities).toEqual(expectedCapabilities(type));
  });

  it("declares text only for web chat", async () => {
    const { client } = await setup();

    const [webchat] = await listChannels(client, { type: "webchat" });

    expect(webchat.capabilities.message_types).toEqual(["text"]);
  });

  it("declares a 24-hour session window and delivery and read receipts for WhatsApp", async () => {
    const { client } = await setup();

    const [whatsapp] = await listChannels(client, { type: "whatsapp" });

    expect(whatsapp.capabilities).toMatchObject({
      session_window: { hours: 24 },
      delivery_receipts: true,
      read_receipts: true,
    });
    expect(whatsapp.capabilities.message_types).toEqual(
      expect.arrayContaining(["text", "image", "video", "audio", "document"]),
    );
  });

  it("never lists template among the message types", async () => {
    const { client } = await setup();

    const channels = await listChannels(client);

    for (const channel of channels) expect(channel.capabilities.message_types).not.toContain("template");
  });

  it("gives every type the four named capabilities and nothing else", async () => {
    const { client } = await setup();

    for (const channel of await listChannels(client)) {
      expect(Object.keys(channel.capabilities).sort()).toEqual([
        "delivery_receipts",
        "message_types",
        "read_receipts",
        "session_window",
      ]);
    }
  });
});

describe("GET /channels/{channel_id}", () => {
  it("returns the channel as the list does, also for an id in lower case", async () => {
    const { client } = await setup();
    const [channel] = await listChannels(client, { type: "email" });

    const fetched = await client.get(`/channels/${channel.id}`);
    const lower = await client.get(`/channels/${channel.id.toLowerCase()}`);

    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(channel);
    expect(lower.body).toEqual(channel);
  });

  it("answers 404 resource_not_found for an unknown or malformed id", async () => {
    const { client } = await setup();

    expectError(await client.get(`/channels/${UNKNOWN_CHANNEL}`), 404, "resource_not_found");
    expectError(await client.get("/channels/whatsapp"), 404, "resource_not_found");
  });
});

describe("live channels", () => {
  it("lists a connected live channel for the live key only", async () => {
    const { org, client, live } = await setup();

    const connected = await connectLive(org.id);

    const liveChannels = await listChannels(live);
    expect(liveChannels).toEqual([
      {
        object: "channel",
        id: connected.id,
        type: "whatsapp",
        name: "Live whatsapp",
        environment: "live",
        sandbox: false,
        provider: "cloud_api",
        capabilities: expectedCapabilities("whatsapp"),
        status: "active",
        status_reason: null,
        created_at: expect.stringMatching(TIMESTAMP),
        updated_at: expect.stringMatching(TIMESTAMP),
      },
    ]);
    expect((await live.get(`/channels/${connected.id}`)).body).toEqual(liveChannels[0]);
    expect(await listChannels(client)).toHaveLength(channelTypes.length);
    expect((await listChannels(client)).map((channel: { id: string }) => channel.id)).not.toContain(connected.id);
    expectError(await client.get(`/channels/${connected.id}`), 404, "resource_not_found");
  });

  it("hides the sandbox channels from the live key", async () => {
    const { client, live } = await setup();

    for (const channel of await listChannels(client)) {
      expectError(await live.get(`/channels/${channel.id}`), 404, "resource_not_found");
    }
  });

  it("never returns the provider settings", async () => {
    const { org, live } = await setup();
    const connected = await connectLive(org.id);
    const contact = await live.post("/contacts", { body: {} });

    const responses = [
      await live.get("/channels"),
      await live.get(`/channels/${connected.id}`),
      await live.get("/channels", { query: { type: "whatsapp" } }),
      await live.post("/conversations", { body: { contact_id: contact.body.id, channel_id: connected.id } }),
      await live.get("/conversations"),
    ];

    expect(JSON.stringify(connected)).not.toContain(PROVIDER_SECRET);
    for (const response of responses) {
      expect(response.status).toBeLessThan(300);
      const text = JSON.stringify(response.body);
      expect(text).not.toContain(PROVIDER_SECRET);
      expect(text).not.toContain("1234567890");
      expect(text).not.toContain("settings");
    }
  });

  it("keeps the capabilities of the type for a live channel", async () => {
    const { org, live } = await setup();

    const connected = await connectLive(org.id, "webchat");

    expect(connected.capabilities).toEqual(expectedCapabilities("webchat"));
    expect((await live.get(`/channels/${connected.id}`)).body.capabilities.message_types).toEqual(["text"]);
  });

  it("filters live channels by type", async () => {
    const { org, live } = await setup();
    const whatsapp = await connectLive(org.id, "whatsapp");
    const email = await connectLive(org.id, "email");

    expect((await listChannels(live, { type: "email" })).map((channel: { id: string }) => channel.id)).toEqual([
      email.id,
    ]);
    expect((await listChannels(live)).map((channel: { id: string }) => channel.id)).toEqual([email.id, whatsapp.id]);
  });
});

describe("isolation", () => {
  it("hides another organization's channels from GET and lists", async () => {
    const owner = await setup();
    const other = await setup();
    const liveChannel = await connectLive(owner.org.id);
    const ownChannels = await listChannels(owner.client);

    for (const channel of ownChannels) {
      expectError(await other.client.get(`/channels/${channel.id}`), 404, "resource_not_found");
    }
    expectError(await other.live.get(`/channels/${liveChannel.id}`), 404, "resource_not_found");
    const theirIds = (await listChannels(other.client)).map((channel: { id: string }) => channel.id);
    expect(theirIds).toHaveLength(channelTypes.length);
    for (const channel of ownChannels) expect(theirIds).not.toContain(channel.id);
    expect(await listChannels(other.live)).toEqual([]);
  });

  it("refuses a cursor issued to another organization with 422 invalid_cursor", async () => {
    const owner = await setup();
    const other = await setup();
    const page = await owner.client.get("/channels", { query: { limit: 1 } });

    expectError(
      await other.client.get("/channels", { query: { limit: 1, after: page.body.pagination.next_cursor } }),
      422,
      "invalid_cursor",
    );
  });
});
