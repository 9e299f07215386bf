import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  as,
  type Client,
  expectError,
  setupOrganization,
  TIMESTAMP,
  useTestApi,
  walkList,
} from "../../test/harness.js";
import { createApiKey } from "../organizations/api-keys.js";
import { createUser } from "../organizations/organizations.js";

const api = useTestApi();

const USER_ID = /^usr_[0-9A-HJKMNP-TV-Z]{26}$/;
const UNKNOWN_USER = "usr_01ARZ3NDEKTSV4RRFFQ69G5FAV";

const setup = () => setupOrganization(api);

async function createAgent(organizationId: string, name: string) {
  return createUser(api.context.db, {
    organizationId,
    name,
    email: `${name.toLowerCase()}-${randomUUID()}@example.com`,
  });
}

async function listIds(client: Client) {
  return (await walkList(client, "/users", { limit: 100 })).map((user) => user.id);
}

describe("GET /users", () => {
  it("lists the organization's agents newest first, as GET returns them", async () => {
    const { org, client } = await setup();
    const ada = await createAgent(org.id, "Ada");
    const bob = await createAgent(org.id, "Bob");

    const response = await client.get("/users");

    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      object: "list",
      data: [bob, ada],
      pagination: { has_more: false, next_cursor: null },
    });
    expect(ada).toEqual({
      object: "user",
      id: expect.stringMatching(USER_ID),
      name: "Ada",
      email: expect.stringMatching(/^ada-.*@example\.com$/),
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect((await client.get(`/users/${ada.id}`)).body).toEqual(ada);
  });

  it("lists an empty list for an organization without agents", async () => {
    const { client } = await setup();

    const response = await client.get("/users");

    expect(response.body).toEqual({ object: "list", data: [], pagination: { has_more: false, next_cursor: null } });
  });

  it("shows the same agents to the live and the test key of one organization", async () => {
    const { org, client, live } = await setup();
    const ada = await createAgent(org.id, "Ada");
    const bob = await createAgent(org.id, "Bob");

    expect(await listIds(client)).toEqual([bob.id, ada.id]);
    expect(await listIds(live)).toEqual([bob.id, ada.id]);
    expect((await live.get(`/users/${ada.id}`)).body).toEqual(ada);
    expect((await client.get(`/users/${ada.id}`)).body).toEqual(ada);
  });

  it("pages with a cursor", async () => {
    const { org, client } = await setup();
    const agents = [];
    for (const name of ["Ada", "Bob", "Cy"]) agents.push(await createAgent(org.id, name));

    const page = await client.get("/users", { query: { limit: 2 } });
    const next = await client.get("/users", { query: { limit: 2, after: page.body.pagination.next_cursor } });

    expect(page.body.data.map((user: { id: string }) => user.id)).toEqual([agents[2]?.id, agents[1]?.id]);
    expect(page.body.pagination).toEqual({ has_more: true, next_cursor: expect.any(String) });
    expect(next.body.data).toEqual([agents[0]]);
    expect(next.body.pagination).toEqual({ has_more: false, next_cursor: null });
    expect(await walkList(client, "/users", { limit: 1 })).toEqual([...agents].reverse());
  });

  it.each([
    ["limit", "0"],
    ["limit", "101"],
    ["email", "ada@example.com"],
  ])("refuses %s=%s with 422 naming it", async (param, value) => {
    const { client } = await setup();

    expectError(await client.get("/users", { query: { [param]: value } }), 422, "validation_error", param);
  });

  it("refuses a cursor it did not issue with 422 invalid_cursor", async () => {
    const { client } = await setup();

    expectError(await client.get("/users", { query: { after: "not-a-cursor" } }), 422, "invalid_cursor");
  });

  it("needs users:read", async () => {
    const { org } = await setup();
    const restricted = await createApiKey(api.context.db, {
      organizationId: org.id,
      environment: "test",
      scopes: ["teams:read", "conversations:read"],
    });

    expectError(await as(api, restricted.key).get("/users"), 403, "insufficient_scope");
  });
});

describe("GET /users/{user_id}", () => {
  it("returns the agent, also for an id in lower case", async () => {
    const { org, client } = await setup();
    const ada = await createAgent(org.id, "Ada");

    const response = await client.get(`/users/${ada.id.toLowerCase()}`);

    expect(response.status).toBe(200);
    expect(response.body).toEqual(ada);
  });

  it("answers 404 resource_not_found for an unknown or malformed id", async () => {
    const { client } = await setup();

    expectError(await client.get(`/users/${UNKNOWN_USER}`), 404, "resource_not_found");
    expectError(await client.get("/users/ada"), 404, "resource_not_found");
  });
});

describe("isolation", () => {
  it("hides another organization's agents from GET and lists, with either key", async () => {
    const owner = await setup();
    const other = await setup();
    const ada = await createAgent(owner.org.id, "Ada");
    const theirs = await createAgent(other.org.id, "Bob");

    expectError(await other.client.get(`/users/${ada.id}`), 404, "resource_not_found");
    expectError(await other.live.get(`/users/${ada.id}`), 404, "resource_not_found");
    expectError(await owner.client.get(`/users/${theirs.id}`), 404, "resource_not_found");
    expect(await listIds(other.client)).toEqual([theirs.id]);
    expect(await listIds(owner.live)).toEqual([ada.id]);
  });

  it("refuses a cursor issued to another organization with 422 invalid_cursor", async () => {
    const owner = await setup();
    const other = await setup();
    await createAgent(owner.org.id, "Ada");
    await createAgent(owner.org.id, "Bob");
    const page = await owner.client.get("/users", { query: { limit: 1 } });

    expectError(
      await other.client.get("/users", { query: { after: page.body.pagination.next_cursor } }),
      422,
      "invalid_cursor",
    );
  });
});
