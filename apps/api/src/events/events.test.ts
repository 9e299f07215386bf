import { describe, expect, it } from "vitest";
import { type ApiResponse, as, createTestOrganization, useTestApi, walkList } from "../../test/harness.js";

/** GET /events: the recorded events of 30 days, on the shared database (no worker). */
const api = useTestApi();

type Client = ReturnType<typeof as>;

const EVENT_ID = /^evt_[0-9A-HJKMNP-TV-Z]{26}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function setup() {
  const org = await createTestOrganization(api);
  return { org, client: as(api, org.test), live: as(api, org.live) };
}

/** A contact created, then renamed: `contact.created`, then `contact.updated`. */
async function createdAndRenamed(client: Client) {
  const created = await client.post("/contacts", { body: { name: "Ada" } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const renamed = await client.patch(`/contacts/${created.body.id}`, { body: { name: "Ada Lovelace" } });
  expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
  return { created: created.body, renamed: renamed.body };
}

function expectNotFound(response: ApiResponse) {
  expect(response.status, JSON.stringify(response.body)).toBe(404);
  expect(response.body.error.code).toBe("resource_not_found");
}

async function ageEvent(id: string, days: number) {
  await api.client.sql`update events set created_at = now() - make_interval(days => ${days}) where id = ${id}`;
}

describe("GET /events", () => {
  it("lists the environment's events newest first, each as the envelope of its webhook", async () => {
    const { org, client } = await setup();
    const { created, renamed } = await createdAndRenamed(client);

    const events = await walkList(client, "/events");

    expect(events).toEqual([
      {
        object: "event",
        id: expect.stringMatching(EVENT_ID),
        type: "contact.updated",
        created_at: expect.stringMatching(TIMESTAMP),
        environment: "test",
        organization_id: org.id,
        data: { contact: renamed },
      },
      {
        object: "event",
        id: expect.stringMatching(EVENT_ID),
        type: "contact.created",
        created_at: expect.stringMatching(TIMESTAMP),
        environment: "test",
        organization_id: org.id,
        data: { contact: created },
      },
    ]);
    expect(Date.parse(events[0].created_at)).toBeGreaterThanOrEqual(Date.parse(events[1].created_at));
  });

  it("pages with a cursor", async () => {
    const { client } = await setup();
    await createdAndRenamed(client);
    await createdAndRenamed(client);
    const all = await walkList(client, "/events");

    const page = await client.get("/events", { query: { limit: 3 } });

    expect(all).toHaveLength(4);
    expect(page.body.data).toEqual(all.slice(0, 3));
    expect(page.body.pagination).toEqual({ has_more: true, next_cursor: expect.any(String) });
    expect(await walkList(client, "/events", { limit: 1 })).toEqual(all);
  });

  it("filters by type", async () => {
    const { client } = await setup();
    const first = await createdAndRenamed(client);
    const second = await createdAndRenamed(client);

    const created = await walkList(client, "/events", { type: "contact.created" });

    expect(created.map((event) => event.type)).toEqual(["contact.created", "contact.created"]);
    expect(created.map((event) => event.data.contact.id)).toEqual([second.created.id, first.created.id]);
  });

  it("refuses a type outside the catalogue with 422", async () => {
    const { client } = await setup();

    const response = await client.get("/events", { query: { type: "contact.exploded" } });

    expect(response.status).toBe(422);
    expect(response.body.error).toMatchObject({ code: "validation_error", param: "type" });
  });

  it("shows neither the other environment's nor another organization's events", async () => {
    const { client, live } = await setup();
    const other = await setup();
    await createdAndRenamed(client);
    const liveContact = await live.post("/contacts", { body: { name: "Live" } });

    const liveEvents = await walkList(live, "/events");

    expect(liveEvents.map((event) => [event.type, event.environment, event.data.contact.id])).toEqual([
      ["contact.created", "live", liveContact.body.id],
    ]);
    expect((await walkList(client, "/events")).every((event) => event.environment === "test")).toBe(true);
    expect(await walkList(other.client, "/events")).toEqual([]);
  });

  it("hides events older than 30 days", async () => {
    const { client } = await setup();
    const { created } = await createdAndRenamed(client);
    const [createdEvent, updatedEvent] = (await walkList(client, "/events")).reverse();
    await ageEvent(createdEvent.id, 31);
    await ageEvent(updatedEvent.id, 29);

    const events = await walkList(client, "/events");

    expect(events.map((event) => event.id)).toEqual([updatedEvent.id]);
    expect(events[0].data.contact.id).toBe(created.id);
    expectNotFound(await client.get(`/events/${createdEvent.id}`));
    expect((await client.get(`/events/${updatedEvent.id}`)).status).toBe(200);
  });
});

describe("GET /events/{id}", () => {
  it("answers the event as the list shows it", async () => {
    const { client } = await setup();
    await createdAndRenamed(client);
    const [newest] = await walkList(client, "/events");

    const response = await client.get(`/events/${newest.id}`);

    expect(response.status).toBe(200);
    expect(response.body).toEqual(newest);
  });

  it("is 404 for the other environment's key, another organization and an unknown id", async () => {
    const { client, live } = await setup();
    const other = await setup();
    await createdAndRenamed(client);
    const [event] = await walkList(client, "/events");

    expectNotFound(await live.get(`/events/${event.id}`));
    expectNotFound(await other.client.get(`/events/${event.id}`));
    expectNotFound(await client.get("/events/evt_01ARZ3NDEKTSV4RRFFQ69G5FAV"));
  });
});
