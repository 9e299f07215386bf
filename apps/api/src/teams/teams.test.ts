import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  as,
  type Client,
  expectError,
  expectValidationError,
  setupOrganization,
  storedEvents,
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

async function memberIds(client: Client, teamId: string) {
  return listIds(client, `/teams/${teamId}/users`);
}

async function newConversation(client: Client) {
  const contact = await client.post("/contacts", { body: {} });
  const response = await client.post("/conversations", { body: { contact_id: contact.body.id } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

describe("POST /teams/{team_id}/users", () => {
  it("adds an agent with 200, answers the team, and lists the agent among the members", async () => {
    const { org, client } = await setup();
    const team = await createTeam(client, "Support");
    const ada = await createAgent(org.id, "Ada");

    const response = await client.post(`/teams/${team.id}/users`, { body: { user_id: ada.id } });

    expect(response.status).toBe(200);
    expect(response.body).toEqual(team);
    expect(await memberIds(client, team.id)).toEqual([ada.id]);
  });

  it("changes nothing when the agent is a member already, and accepts ids in lower case", async () => {
    const { org, client } = await setup();
    const team = await createTeam(client, "Support");
    const ada = await createAgent(org.id, "Ada");
    await client.post(`/teams/${team.id}/users`, { body: { user_id: ada.id } });

    const again = await client.post(`/teams/${team.id.toLowerCase()}/users`, {
      body: { user_id: ada.id.toLowerCase() },
    });

    expect(again.status).toBe(200);
    expect(await memberIds(client, team.id)).toEqual([ada.id]);
  });

  it("refuses an agent of another organization with 404 naming user_id, and adds nobody", async () => {
    const owner = await setup();
    const other = await setup();
    const team = await createTeam(owner.client, "Support");
    const stranger = await createAgent(other.org.id, "Stranger");

    expectError(
      await owner.client.post(`/teams/${team.id}/users`, { body: { user_id: stranger.id } }),
      404,
      "resource_not_found",
      "user_id",
    );
    expectError(
      await owner.client.post(`/teams/${team.id}/users`, { body: { user_id: "usr_01ARZ3NDEKTSV4RRFFQ69G5FAV" } }),
      404,
      "resource_not_found",
      "user_id",
    );
    expect(await memberIds(owner.client, team.id)).toEqual([]);
  });

  it("answers 404 for a team of another organization or environment", async () => {
    const owner = await setup();
    const other = await setup();
    const team = await createTeam(owner.client, "Support");
    const ada = await createAgent(owner.org.id, "Ada");
    const theirs = await createAgent(other.org.id, "Theirs");

    expectError(
      await owner.live.post(`/teams/${team.id}/users`, { body: { user_id: ada.id } }),
      404,
      "resource_not_found",
    );
    expectError(
      await other.client.post(`/teams/${team.id}/users`, { body: { user_id: theirs.id } }),
      404,
      "resource_not_found",
    );
    expect(await memberIds(owner.client, team.id)).toEqual([]);
  });

  it.each([
    ["a missing user_id", {}],
    ["a malformed user_id", { user_id: "ada" }],
    ["a team id as user_id", { user_id: "team_01ARZ3NDEKTSV4RRFFQ69G5FAV" }],
  ])("refuses %s with 422 naming user_id", async (_, body) => {
    const { client } = await setup();
    const team = await createTeam(client, "Support");

    expectValidationError(await client.post(`/teams/${team.id}/users`, { body }), "user_id");
  });

  it("needs teams:write", async () => {
    const { org, client } = await setup();
    const team = await createTeam(client, "Support");
    const ada = await createAgent(org.id, "Ada");
    const reader = await createApiKey(api.context.db, {
      organizationId: org.id,
      environment: "test",
      scopes: ["teams:read"],
    });

    expectError(
      await as(api, reader.key).post(`/teams/${team.id}/users`, { body: { user_id: ada.id } }),
      403,
      "insufficient_scope",
    );
    expectError(await as(api, reader.key).delete(`/teams/${team.id}/users/${ada.id}`), 403, "insufficient_scope");
    expectError(
      await as(api, reader.key).patch(`/teams/${team.id}`, { body: { name: "x" } }),
      403,
      "insufficient_scope",
    );
    expectError(await as(api, reader.key).delete(`/teams/${team.id}`), 403, "insufficient_scope");
    expect(await memberIds(client, team.id)).toEqual([]);
  });
});

describe("DELETE /teams/{team_id}/users/{user_id}", () => {
  it("removes the agent from this team only, answers the team, and changes nothing the second time", async () => {
    const { org, client } = await setup();
    const support = await createTeam(client, "Support");
    const sales = await createTeam(client, "Sales");
    const ada = await createAgent(org.id, "Ada");
    const bob = await createAgent(org.id, "Bob");
    for (const [team, user] of [
      [support, ada],
      [support, bob],
      [sales, ada],
    ])
      await client.post(`/teams/${team.id}/users`, { body: { user_id: user.id } });

    const response = await client.delete(`/teams/${support.id}/users/${ada.id}`);

    expect(response.status).toBe(200);
    expect(response.body).toEqual(support);
    expect(await memberIds(client, support.id)).toEqual([bob.id]);
    expect(await memberIds(client, sales.id)).toEqual([ada.id]);
    expect((await client.delete(`/teams/${support.id}/users/${ada.id}`)).status).toBe(200);
    expect((await client.get(`/users/${ada.id}`)).status).toBe(200);
  });

  it("answers 404 for an unknown agent, an agent of another organization, or an unknown team", async () => {
    const owner = await setup();
    const other = await setup();
    const team = await createTeam(owner.client, "Support");
    const stranger = await createAgent(other.org.id, "Stranger");
    const ada = await createAgent(owner.org.id, "Ada");

    expectError(await owner.client.delete(`/teams/${team.id}/users/${stranger.id}`), 404, "resource_not_found");
    expectError(await owner.client.delete(`/teams/${team.id}/users/ada`), 404, "resource_not_found");
    expectError(await owner.client.delete(`/teams/${UNKNOWN_TEAM}/users/${ada.id}`), 404, "resource_not_found");
    expectError(await other.client.delete(`/teams/${team.id}/users/${ada.id}`), 404, "resource_not_found");
  });
});

describe("PATCH /teams/{team_id}", () => {
  it("renames the team with 200 and moves updated_at", async () => {
    const { client } = await setup();
    const team = await createTeam(client, "Support");

    const response = await client.patch(`/teams/${team.id}`, { body: { name: "Tier 2" } });

    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ...team, name: "Tier 2", updated_at: expect.stringMatching(TIMESTAMP) });
    expect(Date.parse(response.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(team.updated_at));
    expect((await client.get(`/teams/${team.id}`)).body).toEqual(response.body);
    expect((await client.patch(`/teams/${team.id}`, { body: {} })).body.name).toBe("Tier 2");
  });

  it.each([
    ["an empty name", { name: "" }, "name"],
    ["a name of 81 characters", { name: "n".repeat(81) }, "name"],
    ["a null name", { name: null }, "name"],
    ["an unknown field", { nmae: "x" }, "nmae"],
  ])("refuses %s with 422", async (_, body, param) => {
    const { client } = await setup();
    const team = await createTeam(client, "Support");

    expectValidationError(await client.patch(`/teams/${team.id}`, { body }), param);
    expect((await client.get(`/teams/${team.id}`)).body).toEqual(team);
  });

  it("answers 404 for an unknown team or one of the other environment", async () => {
    const { client, live } = await setup();
    const team = await createTeam(client, "Support");

    expectError(await client.patch(`/teams/${UNKNOWN_TEAM}`, { body: { name: "x" } }), 404, "resource_not_found");
    expectError(await live.patch(`/teams/${team.id}`, { body: { name: "x" } }), 404, "resource_not_found");
    expect((await client.get(`/teams/${team.id}`)).body.name).toBe("Support");
  });
});

describe("DELETE /teams/{team_id}", () => {
  it("deletes the team with 200 Deleted; its agents stay", async () => {
    const { org, client } = await setup();
    const team = await createTeam(client, "Support");
    const ada = await createAgent(org.id, "Ada");
    await client.post(`/teams/${team.id}/users`, { body: { user_id: ada.id } });

    const response = await client.delete(`/teams/${team.id}`);

    expect(response.status).toBe(200);
    expect(response.body).toEqual({ object: "team", id: team.id, deleted: true });
    expectError(await client.get(`/teams/${team.id}`), 404, "resource_not_found");
    expectError(await client.get(`/teams/${team.id}/users`), 404, "resource_not_found");
    expectError(await client.delete(`/teams/${team.id}`), 404, "resource_not_found");
    expect(await listIds(client)).toEqual([]);
    expect((await client.get(`/users/${ada.id}`)).body).toEqual(ada);
  });

  it("clears the team from its conversations, keeps their agent, and emits conversation.assigned for each", async () => {
    const { org, client } = await setup();
    const support = await createTeam(client, "Support");
    const sales = await createTeam(client, "Sales");
    const ada = await createAgent(org.id, "Ada");
    const assigned = await newConversation(client);
    const otherTeam = await newConversation(client);
    await client.post(`/conversations/${assigned.id}/assign`, { body: { user_id: ada.id, team_id: support.id } });
    await client.post(`/conversations/${otherTeam.id}/assign`, { body: { team_id: sales.id } });
    const before = (await storedEvents(api, org.id)).length;

    expect((await client.delete(`/teams/${support.id}`)).status).toBe(200);

    const after = await client.get(`/conversations/${assigned.id}`);
    expect(after.body.team_id).toBeNull();
    expect(after.body.assigned_to).toBe(ada.id);
    expect((await client.get(`/conversations/${otherTeam.id}`)).body.team_id).toBe(sales.id);
    const events = (await storedEvents(api, org.id)).slice(before);
    expect(events.map((event) => [event.type, event.data.conversation.id, event.data.conversation.team_id])).toEqual([
      ["conversation.assigned", assigned.id, null],
    ]);
    expect(events[0]?.data.conversation).toEqual(after.body);
  });

  it("never fails with 500 when a conversation is assigned to the team while it is deleted", async () => {
    const { client } = await setup();
    for (let round = 0; round < 8; round++) {
      const team = await createTeam(client, `Round ${round}`);
      const conversation = await newConversation(client);

      const [assigned, deleted] = await Promise.all([
        client.post(`/conversations/${conversation.id}/assign`, { body: { team_id: team.id } }),
        client.delete(`/teams/${team.id}`),
      ]);

      expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
      expect([200, 404], JSON.stringify(assigned.body)).toContain(assigned.status);
      expect((await client.get(`/conversations/${conversation.id}`)).body.team_id).toBeNull();
    }
  });

  it("never fails with 500 when an agent is added while the team is deleted", async () => {
    const { org, client } = await setup();
    const ada = await createAgent(org.id, "Ada");
    for (let round = 0; round < 8; round++) {
      const team = await createTeam(client, `Round ${round}`);

      const [added, deleted] = await Promise.all([
        client.post(`/teams/${team.id}/users`, { body: { user_id: ada.id } }),
        client.delete(`/teams/${team.id}`),
      ]);

      expect(deleted.status).toBe(200);
      expect([200, 404], JSON.stringify(added.body)).toContain(added.status);
    }
  });

  it("answers 404 for a team of another organization and leaves it", async () => {
    const owner = await setup();
    const other = await setup();
    const team = await createTeam(owner.client, "Support");

    expectError(await other.client.delete(`/teams/${team.id}`), 404, "resource_not_found");
    expectError(await owner.live.delete(`/teams/${team.id}`), 404, "resource_not_found");
    expect(await listIds(owner.client)).toEqual([team.id]);
  });
});
