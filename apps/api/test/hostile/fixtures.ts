import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { createUser } from "../../src/organizations/organizations.js";
import { addTeamMember } from "../../src/teams/service.js";
import { makeImage, makePdf, upload } from "../files.js";
import {
  type ApiResponse,
  as,
  type Client,
  createTestOrganization,
  type TestApi,
  type TestOrganization,
} from "../harness.js";

/** Every resource type of the API, by the name its path parameter carries (`{contact_id}` -> contact). */
export const resourcePrefixes = {
  contact: "cnt",
  conversation: "conv",
  message: "msg",
  note: "note",
  tag: "tag",
  custom_field: "cf",
  team: "team",
  user: "usr",
  channel: "chn",
  webhook: "wh",
  delivery: "whd",
  event: "evt",
  attachment: "att",
} as const;
export type Resource = keyof typeof resourcePrefixes;
export const resources = Object.keys(resourcePrefixes) as Resource[];

/** One organization's environment, populated with one of everything (more of some). */
export interface TenantFixture {
  org: TestOrganization;
  environment: "live" | "test";
  key: string;
  client: Client;
  /** Ids by resource; the first of each is "the" resource of that type. */
  ids: Record<Resource, string[]>;
  /** Values filters can match: the first contact's and conversation's. */
  contactEmail: string;
  contactPhone: string;
  contactExternalId: string;
  contactName: string;
  conversationExternalId: string;
  tagName: string;
  customFieldKey: string;
  /** The conversation on a channel carrying media (test: sandbox WhatsApp; live: a manual record). */
  conversationId: string;
  /** The sandbox email channel (test environment only). */
  emailChannelId: string | undefined;
}

function ok(response: ApiResponse, what: string, status = [200, 201]) {
  expect(status, `${what}: ${response.status} ${JSON.stringify(response.body)}`).toContain(response.status);
  return response.body;
}

let pngCache: Buffer | undefined;
export async function tinyPng(): Promise<Buffer> {
  pngCache ??= await makeImage("png", { width: 8, height: 6, exif: null });
  return pngCache;
}

/**
 * Creates, through the API, a contact (tagged, with a custom field), conversations (on a
 * channel where there is one, and a manual record), messages (text and document), a note,
 * a tag, custom fields, a team with an agent, a webhook endpoint with one (failed) delivery,
 * and uploads; events follow from these.
 */
export async function populateTenant(
  api: TestApi,
  org: TestOrganization,
  environment: "live" | "test",
  label: string,
): Promise<TenantFixture> {
  const key = environment === "test" ? org.test : org.live;
  const client = as(api, key);
  const unique = randomUUID().slice(0, 8);
  const ids = Object.fromEntries(resources.map((resource) => [resource, [] as string[]])) as Record<Resource, string[]>;

  const tagName = `vip-${label}-${unique}`;
  const tag = ok(await client.post("/tags", { body: { name: tagName, color: "#1A2B3C" } }), "tag");
  const otherTag = ok(await client.post("/tags", { body: { name: `other-${label}-${unique}` } }), "tag");
  ids.tag.push(tag.id, otherTag.id);

  const customFieldKey = "plan";
  const field = ok(await client.post("/custom-fields", { body: { name: "Plan", key: customFieldKey } }), "cf");
  const orgField = ok(
    await client.post("/custom-fields", { body: { name: "Region", scope: "organization", value: "EU" } }),
    "cf",
  );
  ids.custom_field.push(field.id, orgField.id);

  const contactEmail = `ada.${label}.${unique}@example.com`;
  const contactPhone = `+4420${Math.floor(Math.random() * 1e8)
    .toString()
    .padStart(8, "0")}`;
  const contactExternalId = `crm-${label}-${unique}`;
  const contactName = `Ada ${label} ${unique}`;
  const contact = ok(
    await client.post("/contacts", {
      body: {
        name: contactName,
        email: contactEmail,
        phone: contactPhone,
        external_id: contactExternalId,
        tags: [tag.id],
        custom_fields: { [customFieldKey]: "gold" },
        metadata: { source: label },
      },
    }),
    "contact",
  );
  const second = ok(await client.post("/contacts", { body: { name: `Grace ${label}` } }), "contact");
  ids.contact.push(contact.id, second.id);

  let channelId: string | undefined;
  let emailChannelId: string | undefined;
  if (environment === "test") {
    const channels = ok(await client.get("/channels", { query: { limit: 100 } }), "channels").data as {
      id: string;
      type: string;
    }[];
    ids.channel.push(...channels.map((channel) => channel.id));
    channelId = channels.find((channel) => channel.type === "whatsapp")?.id;
    emailChannelId = channels.find((channel) => channel.type === "email")?.id;
  }

  const conversationExternalId = `ticket-${label}-${unique}`;
  const conversation = ok(
    await client.post("/conversations", {
      body: {
        contact_id: contact.id,
        ...(channelId ? { channel_id: channelId } : {}),
        external_id: conversationExternalId,
        metadata: { label },
      },
    }),
    "conversation",
  );
  const manual = ok(await client.post("/conversations", { body: { contact_id: second.id } }), "conversation");
  ids.conversation.push(conversation.id, manual.id);

  if (environment === "test") {
    const inbound = ok(
      await client.post("/test-helpers/inbound-messages", {
        body: { conversation_id: conversation.id, type: "text", text: "Hello from the contact" },
      }),
      "inbound",
    );
    ids.message.push(inbound.id);
  }
  const text = ok(
    await client.post("/messages", { body: { conversation_id: conversation.id, type: "text", text: "Hi Ada" } }),
    "message",
  );
  ids.message.push(text.id);

  const pdf = ok(
    await upload(api, key, { bytes: makePdf(`Invoice ${label}`), type: "application/pdf", filename: "invoice.pdf" }),
    "upload",
  );
  const png = ok(await upload(api, key, { bytes: await tinyPng(), type: "image/png", filename: "dot.png" }), "upload");
  const unsent = ok(
    await upload(api, key, { bytes: Buffer.from("plain text\n"), type: "text/plain", filename: "notes.txt" }),
    "upload",
  );
  ids.attachment.push(pdf.id, png.id, unsent.id);
  const media = ok(
    await client.post("/messages", {
      body: { conversation_id: conversation.id, type: "document", attachment_id: pdf.id, text: "Your invoice" },
    }),
    "media message",
  );
  ids.message.push(media.id);

  const note = ok(
    await client.post(`/conversations/${conversation.id}/notes`, { body: { body: `Note ${label}` } }),
    "note",
  );
  ids.note.push(note.id);

  const team = ok(await client.post("/teams", { body: { name: `Support ${label}` } }), "team");
  ids.team.push(team.id);
  // Agents belong to the organization: created once, shared by both environments.
  const user = await createUser(api.context.db, {
    organizationId: org.id,
    name: `Agent ${label}`,
    email: `agent.${label}.${unique}@example.com`,
  });
  await addTeamMember(api.context.db, { organizationId: org.id, teamId: team.id, userId: user.id });
  ids.user.push(user.id);
  ok(
    await client.post(`/conversations/${conversation.id}/assign`, { body: { user_id: user.id, team_id: team.id } }),
    "assign",
  );

  // Port 9 (discard) is closed here: the test delivery fails at once and is recorded.
  const webhook = ok(
    await client.post("/webhooks", {
      body: { url: "http://127.0.0.1:9/hook", events: ["*"], description: `hook ${label}` },
    }),
    "webhook",
  );
  ids.webhook.push(webhook.id);
  const delivery = ok(await client.post(`/webhooks/${webhook.id}/test`), "webhook test");
  ids.delivery.push(delivery.id);

  const events = ok(await client.get("/events", { query: { limit: 5 } }), "events").data as { id: string }[];
  ids.event.push(...events.map((event) => event.id));

  return {
    org,
    environment,
    key,
    client,
    ids,
    contactEmail,
    contactPhone,
    contactExternalId,
    contactName,
    conversationExternalId,
    tagName,
    customFieldKey,
    conversationId: conversation.id,
    emailChannelId,
  };
}

export async function newOrganization(api: TestApi, name: string) {
  return createTestOrganization(api, name);
}
