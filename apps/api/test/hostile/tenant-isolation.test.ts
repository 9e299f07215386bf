import { type Operation, operations } from "@parley/schema";
import { beforeAll, describe, expect, it } from "vitest";
import { type ApiResponse, call, createTestOrganization, expectError, useTestApi } from "../harness.js";
import { populateTenant, type Resource, resources, type TenantFixture } from "./fixtures.js";
import { digestChanges, tenantDigest } from "./support.js";
import {
  KNOWN_UNFILTERED_SHAPES,
  normalizeStatement,
  statementShape,
  unfilteredTenantTables,
} from "./tenant-statements.js";

/**
 * Every resource of a victim's test environment, attacked by every operation of the
 * catalogue that takes its id in the path, with the key of another organization and with
 * the victim organization's own live key: always 404, never a change. Then the lists, with
 * filters that would match the victim's rows. Agents (users) belong to the organization,
 * not to an environment (docs/decisions.md): the victim's own live key sees them.
 */

/** Every statement the app sent while the tenants were populated and attacked (see the last block). */
const statements: string[] = [];
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "1000000" }, { onQuery: (query) => statements.push(query) });

/** The path parameter naming each resource. */
const paramOf: Record<Resource, string> = {
  contact: "contact_id",
  conversation: "conversation_id",
  message: "message_id",
  note: "note_id",
  tag: "tag_id",
  custom_field: "custom_field_id",
  team: "team_id",
  user: "user_id",
  channel: "channel_id",
  webhook: "webhook_id",
  delivery: "delivery_id",
  event: "event_id",
  attachment: "attachment_id",
};

const resourceNames: Record<Resource, string> = {
  contact: "contact",
  conversation: "conversation",
  message: "message",
  note: "note",
  tag: "tag",
  custom_field: "custom field",
  team: "team",
  user: "user (agent)",
  channel: "channel",
  webhook: "webhook endpoint",
  delivery: "webhook delivery",
  event: "event",
  attachment: "attachment",
};

/** The operations of the catalogue whose path takes the resource's id. */
function operationsOn(resource: Resource): Operation[] {
  return operations.filter((operation) => operation.path.includes(`{${paramOf[resource]}}`));
}

type AttackerKind = "another organization" | "the same organization's live environment";
const attackers: AttackerKind[] = ["another organization", "the same organization's live environment"];

let victim: TenantFixture;
let victimLive: TenantFixture;
let other: TenantFixture;
const actorOf = (kind: AttackerKind) => (kind === "another organization" ? other : victimLive);

function victimId(resource: Resource): string {
  // The email channel: receiving an email is the one channel operation that writes.
  if (resource === "channel") return victim.emailChannelId as string;
  return victim.ids[resource][0] as string;
}

/**
 * The request of `operation` by `actor` on the victim's `resource`: the other path
 * parameters and the body name the actor's own resources, so only the victim's id can
 * make it fail.
 */
function requestFor(operation: Operation, resource: Resource | undefined, actor: TenantFixture) {
  const path = operation.path.replace(/\{(\w+)\}/g, (_, param: string) => {
    if (resource && param === paramOf[resource]) return victimId(resource);
    // A delivery is reached through its endpoint: the victim's endpoint with the victim's delivery.
    if (resource === "webhook" && param === "delivery_id") return victim.ids.delivery[0] as string;
    const own = (Object.entries(paramOf) as [Resource, string][]).find(([, name]) => name === param)?.[0];
    if (!own) throw new Error(`no fixture for ${param}`);
    if (own === "channel") return actor.emailChannelId ?? (actor.ids.channel[0] as string);
    if (own === "conversation") return actor.conversationId;
    return actor.ids[own][0] as string;
  });
  const rfc822 = [
    "From: Mallory <mallory@example.com>",
    "To: support@example.com",
    "Subject: Hello",
    `Message-ID: <${Date.now()}.${Math.random()}@example.com>`,
    "",
    "Hello there",
  ].join("\r\n");
  const bodies: Record<string, unknown> = {
    "contacts.update": { name: "Renamed by someone else" },
    "conversations.update": { status: "pending", metadata: { touched: true } },
    "conversations.assign": { user_id: actor.ids.user[0], team_id: actor.ids.team[0] },
    "conversations.tags.add": { tag_id: actor.ids.tag[0] },
    "conversations.notes.create": { body: "A note from elsewhere" },
    "conversations.notes.update": { body: "Rewritten from elsewhere" },
    "custom_fields.update": { name: "Renamed from elsewhere" },
    "teams.update": { name: "Renamed from elsewhere" },
    "teams.users.add": { user_id: actor.ids.user[0] },
    "tags.update": { name: `renamed-${Math.random()}`, color: "#000000" },
    "webhooks.update": { description: "hijacked", url: "http://127.0.0.1:9/hijacked", enabled: false },
  };
  if (operation.requestContentType === "message/rfc822") {
    return {
      method: operation.method.toUpperCase(),
      path,
      rawBody: rfc822,
      headers: { "content-type": "message/rfc822" },
    };
  }
  const body = bodies[operation.id];
  return { method: operation.method.toUpperCase(), path, ...(body ? { body } : {}) };
}

/** What the attacker must get: 404, with the code the spec gives each case. */
function expectedCode(operation: Operation, resource: Resource, kind: AttackerKind): string {
  if (operation.testOnly && kind === "the same organization's live environment") return "route_not_found";
  if (resource === "attachment") return "attachment_not_found";
  return "resource_not_found";
}

async function send(key: string, request: ReturnType<typeof requestFor>): Promise<ApiResponse> {
  const { method, path, ...options } = request;
  return call(api, method, path, { key, ...options });
}

/** Every id of the victim's test environment, to look for in other tenants' answers. */
function victimIds(): string[] {
  return Object.values(victim.ids).flat();
}

let digestsBefore: Record<string, string>;

beforeAll(async () => {
  const victimOrg = await createTestOrganization(api, "Victim");
  victim = await populateTenant(api, victimOrg, "test", "victim");
  victimLive = await populateTenant(api, victimOrg, "live", "victimlive");
  other = await populateTenant(api, await createTestOrganization(api, "Neighbour"), "test", "neighbour");
  digestsBefore = await tenantDigest(api.client.sql, [victimOrg.id, other.org.id]);
}, 60_000);

// ---------------------------------------------------------------- ids in paths

interface Case {
  resource: Resource;
  kind: AttackerKind;
  operation: Operation;
}

/** Reads first, then writes, deletes last (the contact, whose deletion cascades, at the very end). */
function rank(operation: Operation): number {
  if (operation.method === "get") return 0;
  if (operation.method !== "delete") return 1;
  if (operation.id === "contacts.delete") return 4;
  // Links go before the resources they link: a team's member before the team.
  return operation.id === "conversations.tags.remove" || operation.id === "teams.users.remove" ? 2 : 3;
}

const cases: Case[] = resources.flatMap((resource) =>
  attackers.flatMap((kind) => operationsOn(resource).map((operation) => ({ resource, kind, operation }))),
);
cases.sort((a, b) => rank(a.operation) - rank(b.operation));

describe("the catalogue's operations on ids in paths", () => {
  it("take the ids of these resources, and only these", () => {
    const params = new Set(
      operations.flatMap((operation) => [...operation.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])),
    );
    expect([...params].sort()).toEqual(
      resources
        .filter((resource) => operationsOn(resource).length > 0)
        .map((resource) => paramOf[resource])
        .sort(),
    );
    expect(cases.length).toBeGreaterThan(60);
  });
});

describe("another tenant's id in the path: 404, every resource × every operation taking it × both other tenants", () => {
  it.each(cases.map((each) => [resourceNames[each.resource], each.operation.id, each.kind, each] as const))(
    "%s via %s with %s's key",
    async (_resource, _operation, kind, { resource, operation }) => {
      const actor = actorOf(kind);
      const response = await send(actor.key, requestFor(operation, resource, actor));
      if (resource === "user" && kind === "the same organization's live environment") {
        // The exception docs/decisions.md makes: agents work in both environments. Taking
        // the agent out of a team of that environment it is not a member of changes nothing.
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        if (operation.method === "get") expect(JSON.stringify(response.body)).toContain(victimId("user"));
        else expect(response.body.id).toBe(actor.ids.team[0]);
        return;
      }
      expectError(response, 404, expectedCode(operation, resource, kind));
      expect(JSON.stringify(response.body)).not.toMatch(/"(object|name|email|url|body|text)":/);
    },
  );

  it("changed nothing in either organization", async () => {
    const after = await tenantDigest(api.client.sql, [victim.org.id, other.org.id]);
    expect(digestChanges(digestsBefore, after)).toEqual([]);
  });
});

// ---------------------------------------------------------------- ids in bodies and filters

describe("another tenant's id in a body or a filter", () => {
  it.each(attackers)("is not found, or matches nothing, with %s's key", async (kind) => {
    const actor = actorOf(kind);
    const key = actor.key;
    const before = await tenantDigest(api.client.sql, [victim.org.id, other.org.id]);
    const notFound = async (
      method: string,
      path: string,
      body: unknown,
      param?: string,
      code = "resource_not_found",
    ) => {
      const response = await call(api, method, path, { key, body });
      expectError(response, 404, code, param);
    };
    await notFound("POST", "/conversations", { contact_id: victimId("contact") }, "contact_id");
    await notFound(
      "POST",
      "/conversations",
      { contact_id: actor.ids.contact[0], channel_id: victimId("channel") },
      "channel_id",
    );
    await notFound(
      "POST",
      "/messages",
      { conversation_id: victim.conversationId, type: "text", text: "hi" },
      "conversation_id",
    );
    const media = { conversation_id: actor.conversationId, type: "document", attachment_id: victimId("attachment") };
    await notFound("POST", "/messages", media, undefined, "attachment_not_found");
    await notFound("POST", "/contacts", { name: "x", tags: [victimId("tag")] }, "tags.0");
    await notFound("PATCH", `/contacts/${actor.ids.contact[0]}`, { tags: [victimId("tag")] }, "tags.0");
    await notFound("POST", `/conversations/${actor.conversationId}/tags`, { tag_id: victimId("tag") }, "tag_id");
    await notFound("POST", `/conversations/${actor.conversationId}/assign`, { team_id: victimId("team") }, "team_id");
    if (kind === "another organization") {
      await notFound("POST", `/conversations/${actor.conversationId}/assign`, { user_id: victimId("user") }, "user_id");
      await notFound(
        "POST",
        "/test-helpers/inbound-messages",
        { conversation_id: victim.conversationId, type: "text", text: "hi" },
        "conversation_id",
      );
    } else {
      const inbound = await call(api, "POST", "/test-helpers/inbound-messages", {
        key,
        body: { conversation_id: victim.conversationId, type: "text", text: "hi" },
      });
      expectError(inbound, 404, "route_not_found");
    }
    expect(digestChanges(before, await tenantDigest(api.client.sql, [victim.org.id, other.org.id]))).toEqual([]);
  });

  it.each(attackers)(
    "lists none of the victim's rows with %s's key, even with filters that match them",
    async (kind) => {
      const actor = actorOf(kind);
      const sameOrganization = kind === "the same organization's live environment";
      // The actor holds look-alikes of the victim's rows: the filters work, and find only those.
      const twin = await call(api, "POST", "/contacts", {
        key: actor.key,
        body: {
          name: victim.contactName,
          email: victim.contactEmail,
          phone: victim.contactPhone,
          external_id: victim.contactExternalId,
          tags: [actor.ids.tag[0]],
        },
      });
      expect(twin.status, JSON.stringify(twin.body)).toBe(201);
      const twinConversation = await call(api, "POST", "/conversations", {
        key: actor.key,
        body: { contact_id: twin.body.id, external_id: victim.conversationExternalId },
      });
      expect(twinConversation.status).toBe(201);

      const lists: [string, Record<string, string>, string[]][] = [
        ["/contacts", { email: victim.contactEmail }, [twin.body.id]],
        ["/contacts", { email: victim.contactEmail.toUpperCase() }, [twin.body.id]],
        ["/contacts", { phone: victim.contactPhone }, [twin.body.id]],
        ["/contacts", { external_id: victim.contactExternalId }, [twin.body.id]],
        ["/contacts", { query: victim.contactName }, [twin.body.id]],
        ["/contacts", { tag_id: victimId("tag") }, []],
        ["/contacts", { created_after: "2000-01-01T00:00:00Z", limit: "100" }, []],
        ["/conversations", { external_id: victim.conversationExternalId }, [twinConversation.body.id]],
        ["/conversations", { contact_id: victimId("contact") }, []],
        ["/conversations", { channel_id: victimId("channel") }, []],
        ["/conversations", { tag_id: victimId("tag") }, []],
        ["/conversations", { team_id: victimId("team") }, []],
        ["/conversations", { channel_type: "email", limit: "100" }, []],
        ["/conversations", { status: "open", limit: "100" }, []],
        ["/events", { type: "contact.created", limit: "100" }, []],
        ["/events", { type: "webhook.test", limit: "100" }, []],
        ["/tags", { limit: "100" }, []],
        ["/custom-fields", { limit: "100" }, []],
        ["/teams", { limit: "100" }, []],
        ["/webhooks", { limit: "100" }, []],
        ["/channels", { limit: "100" }, []],
        [`/conversations/${actor.conversationId}/messages`, { limit: "100" }, []],
        [`/conversations/${actor.conversationId}/notes`, { limit: "100" }, []],
        [`/teams/${actor.ids.team[0]}/users`, { limit: "100" }, []],
        [`/webhooks/${actor.ids.webhook[0]}/deliveries`, { limit: "100" }, []],
      ];
      if (!sameOrganization) {
        lists.push(["/users", { limit: "100" }, []]);
        lists.push(["/conversations", { assigned_to: victimId("user") }, []]);
      }
      const hidden = victimIds();
      for (const [path, query, exactly] of lists) {
        const response = await call(api, "GET", path, { key: actor.key, query });
        expect(response.status, `${path} ${JSON.stringify(query)}: ${JSON.stringify(response.body)}`).toBe(200);
        const text = JSON.stringify(response.body);
        for (const id of hidden) expect(text, `${path} ${JSON.stringify(query)} shows ${id}`).not.toContain(id);
        if (exactly.length > 0) {
          expect(
            response.body.data.map((row: { id: string }) => row.id),
            `${path} ${JSON.stringify(query)}`,
          ).toEqual(exactly);
        }
      }
      if (sameOrganization) {
        // Agents belong to the organization: the live key lists the same people as the test key.
        const users = await call(api, "GET", "/users", { key: actor.key, query: { limit: 100 } });
        expect(users.body.data.map((user: { id: string }) => user.id)).toContain(victimId("user"));
      }
    },
  );
});

// ---------------------------------------------------------------- controls, last: they change the victim

/** Each resource and operation once, in the same order: what the owner's key does with the very same request. */
const ownerCases = cases.filter((each) => each.kind === "another organization");
/** Deletes the controls already ran (a note is reached through its conversation and by itself): again, 404 or a no-op. */
const deletedByControls = new Set<string>();

describe("the same requests with the owner's key reach the resource (the 404s above are isolation, not typos)", () => {
  it.each(ownerCases.map((each) => [resourceNames[each.resource], each.operation.id, each] as const))(
    "%s via %s",
    async (_resource, _operation, { resource, operation }) => {
      const request = requestFor(operation, resource, victim);
      const response = await send(victim.key, request);
      expect(response.status, JSON.stringify(response.body)).toBeLessThan(500);
      const again = operation.method === "delete" && deletedByControls.has(request.path);
      const expected = again ? [200, 404] : [200, 201, 409];
      expect(expected, `${operation.id}: ${JSON.stringify(response.body)}`).toContain(response.status);
      if (operation.method === "delete") deletedByControls.add(request.path);
    },
  );
});

// ---------------------------------------------------------------- sharding on paper

describe("every statement of every operation above names its organization (docs/operations.md, Sharding)", () => {
  it("reads, changes or inserts tenant rows only with organization_id, but for the known statements", () => {
    // The recording saw the operations' statements (about 900: API keys come from the key
    // cache, so a request spends no statement on its key).
    expect(statements.length).toBeGreaterThan(500);
    const unfiltered = new Map<string, string>();
    for (const statement of statements) {
      if (unfilteredTenantTables(statement).length === 0) continue;
      const shape = statementShape(statement);
      if (!KNOWN_UNFILTERED_SHAPES.has(shape)) unfiltered.set(shape, normalizeStatement(statement).slice(0, 400));
    }
    const seen = new Set(statements.map(statementShape));
    const fixed = [...KNOWN_UNFILTERED_SHAPES].filter((shape) => !seen.has(shape));
    // A known statement that now names its organization: drop it from the list.
    if (fixed.length > 0)
      console.log(`no longer unfiltered (remove from KNOWN_UNFILTERED_SHAPES): ${fixed.join("; ")}`);
    expect(Object.fromEntries(unfiltered)).toEqual({});
  });
});
