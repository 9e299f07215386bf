import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  as,
  type Client,
  expectError,
  expectValidationError,
  setupOrganization,
  TIMESTAMP,
  useTestApi,
  walkList,
} from "../../test/harness.js";
import { createApiKey } from "../organizations/api-keys.js";
import { createUser } from "../organizations/organizations.js";
import { addTeamMember } from "./service.js";

const api = useTestApi();

const TEAM_ID = /^team_[0-9A-HJKMNP-TV-Z]{26}$/;
const UNKNOWN_TEAM = "team_01ARZ3NDEKTSV4RRFFQ69G5FAV";

const setup = () => setupOrganization(api);

async function createTeam(client: Client, name: string) {
  const response = await client.post("/teams", { body: { name } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function createAgent(organizationId: string, name: string) {
  return createUser(api.context.db, { organizationId, name, email: `${randomUUID()}@example.com` });
}

async function addMember(organizationId: string, teamId: string, userId: string) {
  await addTeamMember(api.context.db, { organizationId, teamId, userId });
}

async function listIds(client: Client, path = "/teams") {
  return (await walkList(client, path, { limit: 100 })).map((item) => item.id);
}

describe("POST /teams", () => {
  it("creates a team with 201, and GET returns it", async () => {
    const { client } = await setup();

    const response = await client.post("/teams", { body: { name: "Support" } });

    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      object: "team",
      id: expect.stringMatching(TEAM_ID),
      name: "Support",
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect((await client.get(`/teams/${response.body.id}`)).body).toEqual(response.body);
  });

  it("accepts a name of 80 characters", async () => {
    const { client } = await setup();

    expect((await createTeam(client, "n".repeat(80))).name).toBe("n".repeat(80));
  });

  it.each([
    ["a missing name", {}],
    ["an empty name", { name: "" }],
    ["a blank name", { name: "   " }],
    ["a name of 81 characters", { name: "n".repeat(81) }],
    ["a null name", { name: null }],
    ["a name that is not a string", { name: 7 }],
  ])("refuses %s with 422 naming name", async (_, body) => {
    const { client } = await setup();

    expectValidationError(await client.post("/teams", { body }), "name");
    expect(await listIds(client)).toEqual([]);
  });

  it("refuses an unknown field with 422 naming it", async () => {
    const { client } = await setup();

    expectValidationError(await client.post("/teams", { body: { name: "Support", members: [] } }), "members");
    expect(await listIds(client)).toEqual([]);
  });

  it("refuses a body that is not JSON with 400 invalid_json", async () => {
    const { client } = await setup();

    const response = await client.post("/teams", {
      rawBody: "{name:",
      headers: { "content-type": "application/json" },
    });

    expectError(response, 400, "invalid_json");
  });

  it("needs teams:write", async () => {
    const { org, client } = await setup();
    const restricted = await createApiKey(api.context.db, {
      organizationId: org.id,
      environment: "test",
      scopes: ["teams:read"],
    });

    expectError(await as(api, restricted.key).post("/teams", { body: { name: "x" } }), 403, "insufficient_scope");
    expect(await listIds(client)).toEqual([]);
  });
});

describe("GET /teams", () => {
  it("lists newest first and pages with a cursor", async () => {
    const { client } = await setup();
    const first = await createTeam(client, "First");
    const second = await createTeam(client, "Second");
    const third = await createTeam(client, "Third");

    const page = await client.get("/teams", { query: { limit: 2 } });
    const next = await client.get("/teams", { query: { limit: 2, after: page.body.pagination.next_cursor } });

    expect(page.status).toBe(200);
    expect(page.body.object).toBe("list");
    expect(page.body.data).toEqual([third, second]);
    expect(page.body.pagination).toEqual({ has_more: true, next_cursor: expect.any(String) });
    expect(next.body.data).toEqual([first]);
    expect(next.body.pagination).toEqual({ has_more: false, next_cursor: null });
    expect(await walkList(client, "/teams", { limit: 1 })).toEqual([third, second, first]);
  });

  it("lists an empty list for a new organization", async () => {
    const { client } = await setup();

    expect((await client.get("/teams")).body).toEqual({
      object: "list",
      data: [],
      pagination: { has_more: false, next_cursor: null },
    });
  });

  it.each([
    ["limit", "0"],
    ["name", "Support"],
  ])("refuses %s=%s with 422 naming it", async (param, value) => {
    const { client } = await setup();

    expectValidationError(await client.get("/teams", { query: { [param]: value } }), param);
  });
});

describe("GET /teams/{team_id}", () => {
  it("returns the team, also for an id in lower case", async () => {
    const { client } = await setup();
    const team = await createTeam(client, "Support");

    const response = await client.get(`/teams/${team.id.toLowerCase()}`);

    expect(response.status).toBe(200);
    expect(response.body).toEqual(team);
  });

  it("answers 404 resource_not_found for an unknown or malformed id", async () => {
    const { client } = await setup();

    expectError(await client.get(`/teams/${UNKNOWN_TEAM}`), 404, "resource_not_found");
    expectError(await client.get("/teams/support"), 404, "resource_not_found");
  });
});

describe("GET /teams/{team_id}/users", () => {
  it("lists the team's members, newest member first, and nobody else", async () => {
    const { org, client } = await setup();
    const support = await createTeam(client, "Support");
    const sales = await createTeam(client, "Sales");
    const ada = await createAgent(org.id, "Ada");
    const bob = await createAgent(org.id, "Bob");
    const cy = await createAgent(org.id, "Cy");
    await addMember(org.id, support.id, bob.id);
    await addMember(org.id, support.id, ada.id);
    await addMember(org.id, sales.id, cy.id);
    // Ada joined after Bob although she was created first: the join time orders the list.
    await api.client.sql`update team_members set created_at = '2021-01-01T00:00:00Z' where user_id = ${bob.id}`;
    await api.client.sql`update team_members set created_at = '2022-01-01T00:00:00Z' where user_id = ${ada.id}`;

    const response = await client.get(`/teams/${support.id}/users`);

    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      object: "list",
      data: [ada, bob],
      pagination: { has_more: false, next_cursor: null },
    });
    expect(await listIds(client, `/teams/${sales.id}/users`)).toEqual([cy.id]);
  });

  it("lists a member once even when added twice", async () => {
    const { org, client } = await setup();
    const team = await createTeam(client, "Support");
    const ada = await createAgent(org.id, "Ada");
    await addMember(org.id, team.id, ada.id);
    await addMember(org.id, team.id, ada.id);

    expect(await listIds(client, `/teams/${team.id}/users`)).toEqual([ada.id]);
  });

  it("pages the members with a cursor", async () => {
    const { org, client } = await setup();
    const team = await createTeam(client, "Support");
    const agents = [];
    for (const name of ["Ada", "Bob", "Cy"]) {
      const agent = await createAgent(org.id, name);
      await addMember(org.id, team.id, agent.id);
      agents.push(agent);
    }

    const page = await client.get(`/teams/${team.id}/users`, { query: { limit: 2 } });

    expect(page.body.data).toEqual([agents[2], agents[1]]);
    expect(page.body.pagination).toEqual({ has_more: true, next_cursor: expect.any(String) });
    expect(await walkList(client, `/teams/${team.id}/users`, { limit: 1 })).toEqual([...agents].reverse());
  });

  it("lists an empty list for a team without members", async () => {
    const { client } = await setup();
    const team = await createTeam(client, "Support");

    expect(await listIds(client, `/teams/${team.id}/users`)).toEqual([]);
  });

  it("refuses a cursor of another team's members with 422 invalid_cursor", async () => {
    const { org, client } = await setup();
    const support = await createTeam(client, "Support");
    const sales = await createTeam(client, "Sales");
    for (const name of ["Ada", "Bob"]) await addMember(org.id, support.id, (await createAgent(org.id, name)).id);
    const page = await client.get(`/teams/${support.id}/users`, { query: { limit: 1 } });

    expectError(
      await client.get(`/teams/${sales.id}/users`, { query: { after: page.body.pagination.next_cursor } }),
      422,
      "invalid_cursor",
    );
  });

  it("answers 404 resource_not_found for an unknown team", async () => {
    const { client } = await setup();

    expectError(await client.get(`/teams/${UNKNOWN_TEAM}/users`), 404, "resource_not_found");
  });
});

describe("environments and isolation", () => {
  it("keeps teams per environment: a test team is 404 for the live key, and the other way round", async () => {
    const { org, client, live } = await setup();
    const testTeam = await createTeam(client, "Sandbox team");
    const liveTeam = await createTeam(live, "Live team");
    const ada = await createAgent(org.id, "Ada");
    await addMember(org.id, testTeam.id, ada.id);

    expectError(await live.get(`/teams/${testTeam.id}`), 404, "resource_not_found");
    expectError(await live.get(`/teams/${testTeam.id}/users`), 404, "resource_not_found");
    expectError(await client.get(`/teams/${liveTeam.id}`), 404, "resource_not_found");
    expect(await listIds(client)).toEqual([testTeam.id]);
    expect(await listIds(live)).toEqual([liveTeam.id]);
  });

  it("lets one agent be a member of teams in both environments", async () => {
    const { org, client, live } = await setup();
    const testTeam = await createTeam(client, "Sandbox team");
    const liveTeam = await createTeam(live, "Live team");
    const ada = await createAgent(org.id, "Ada");
    await addMember(org.id, testTeam.id, ada.id);
    await addMember(org.id, liveTeam.id, ada.id);

    expect(await listIds(client, `/teams/${testTeam.id}/users`)).toEqual([ada.id]);
    expect(await listIds(live, `/teams/${liveTeam.id}/users`)).toEqual([ada.id]);
  });

  it("hides another organization's teams and their members", async () => {
    const owner = await setup();
    const other = await setup();
    const team = await createTeam(owner.client, "Support");
    const ada = await createAgent(owner.org.id, "Ada");
    await addMember(owner.org.id, team.id, ada.id);
    const theirs = await createTeam(other.client, "Theirs");

    expectError(await other.client.get(`/teams/${team.id}`), 404, "resource_not_found");
    expectError(await other.client.get(`/teams/${team.id}/users`), 404, "resource_not_found");
    expect(await listIds(other.client)).toEqual([theirs.id]);
    expect(await listIds(owner.client)).toEqual([team.id]);
  });

  it("refuses a member of another organization", async () => {
    const owner = await setup();
    const other = await setup();
    const team = await createTeam(owner.client, "Support");
    const stranger = await createAgent(other.org.id, "Stranger");

    await expect(addMember(owner.org.id, team.id, stranger.id)).rejects.toThrow();
    await expect(addMember(other.org.id, team.id, stranger.id)).rejects.toThrow();

    expect(await listIds(owner.client, `/teams/${team.id}/users`)).toEqual([]);
  });
});
