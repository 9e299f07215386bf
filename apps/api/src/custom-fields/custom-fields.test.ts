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

const api = useTestApi();

const FIELD_ID = /^cf_[0-9A-HJKMNP-TV-Z]{26}$/;

const setup = () => setupOrganization(api);

async function createField(client: Client, body: Record<string, unknown>) {
  const response = await client.post("/custom-fields", { body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function fieldKeys(client: Client) {
  return (await walkList(client, "/custom-fields", { limit: 100 })).map((field) => field.key);
}

describe("POST /custom-fields", () => {
  it("creates a contact field with 201 and a key generated from the name", async () => {
    const { client } = await setup();

    const response = await client.post("/custom-fields", { body: { name: "Date of birth" } });

    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      object: "custom_field",
      id: expect.stringMatching(FIELD_ID),
      name: "Date of birth",
      key: "date_of_birth",
      scope: "contact",
      value: null,
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(await walkList(client, "/custom-fields")).toEqual([response.body]);
  });

  it.each([
    ["  Shoe   size  ", "shoe_size"],
    ["Café № 1", "cafe_no_1"],
    ["2nd line", "f_2nd_line"],
    ["Customer-ID (CRM)", "customer_id_crm"],
    ["!!!", "field"],
    ["A".repeat(80), "a".repeat(64)],
  ])("generates a valid key from the name %j", async (name, key) => {
    const { client } = await setup();

    const response = await client.post("/custom-fields", { body: { name } });

    expect(response.status).toBe(201);
    expect(response.body.key).toBe(key);
    expect(response.body.key).toMatch(/^[a-z][a-z0-9_]{0,63}$/);
  });

  it("takes an explicit key as given", async () => {
    const { client } = await setup();

    const response = await client.post("/custom-fields", { body: { name: "Date of birth", key: "dob" } });

    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ name: "Date of birth", key: "dob", scope: "contact" });
  });

  it("accepts a key of 64 characters", async () => {
    const { client } = await setup();

    const response = await client.post("/custom-fields", { body: { name: "Long", key: `k${"_".repeat(63)}` } });

    expect(response.status).toBe(201);
  });

  it.each([
    ["upper case", "Dob"],
    ["a leading digit", "1st"],
    ["a leading underscore", "_dob"],
    ["a hyphen", "date-of-birth"],
    ["a space", "date of birth"],
    ["an empty string", ""],
    ["65 characters", `k${"a".repeat(64)}`],
  ])("refuses a key with %s with 422 naming key", async (_, key) => {
    const { client } = await setup();

    expectValidationError(await client.post("/custom-fields", { body: { name: "Field", key } }), "key");
    expect(await fieldKeys(client)).toEqual([]);
  });

  it.each([
    ["a missing name", {}, "name"],
    ["an empty name", { name: "" }, "name"],
    ["a blank name", { name: "  " }, "name"],
    ["an unknown scope", { name: "Field", scope: "conversation" }, "scope"],
    ["an unknown field", { name: "Field", type: "text" }, "type"],
    ["a value that is not a string", { name: "Field", scope: "organization", value: 5 }, "value"],
    ["a value of 501 characters", { name: "Field", scope: "organization", value: "v".repeat(501) }, "value"],
  ])("refuses %s with 422 naming the field", async (_, body, param) => {
    const { client } = await setup();

    expectValidationError(await client.post("/custom-fields", { body }), param);
  });

  it("refuses a duplicate explicit key with 409 resource_already_exists naming key", async () => {
    const { client } = await setup();
    await createField(client, { name: "Date of birth", key: "dob" });

    const response = await client.post("/custom-fields", { body: { name: "Birthday", key: "dob" } });

    expectError(response, 409, "resource_already_exists", "key");
    expect(await fieldKeys(client)).toEqual(["dob"]);
  });

  it("refuses a generated key that is taken with 409 resource_already_exists naming name", async () => {
    const { client } = await setup();
    await createField(client, { name: "Date of birth" });

    const response = await client.post("/custom-fields", { body: { name: "date-of-birth" } });

    expectError(response, 409, "resource_already_exists", "name");
  });

  it("refuses a key taken by a field of the other scope", async () => {
    const { client } = await setup();
    await createField(client, { name: "Plan", scope: "organization", value: "pro" });

    const response = await client.post("/custom-fields", { body: { name: "Plan" } });

    expectError(response, 409, "resource_already_exists");
  });

  it("allows the same key in the other environment and in another organization", async () => {
    const { client, live } = await setup();
    const other = await setup();
    await createField(client, { name: "Date of birth" });

    expect((await live.post("/custom-fields", { body: { name: "Date of birth" } })).status).toBe(201);
    expect((await other.client.post("/custom-fields", { body: { name: "Date of birth" } })).status).toBe(201);
  });

  it("creates an organization field with its value", async () => {
    const { client } = await setup();

    const response = await client.post("/custom-fields", {
      body: { name: "Support hours", scope: "organization", value: "9-17 CET" },
    });

    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ key: "support_hours", scope: "organization", value: "9-17 CET" });
  });

  it("creates an organization field without a value, which is then null", async () => {
    const { client } = await setup();

    const response = await client.post("/custom-fields", { body: { name: "Motto", scope: "organization" } });

    expect(response.status).toBe(201);
    expect(response.body.value).toBeNull();
  });

  it("accepts an organization value of 500 characters", async () => {
    const { client } = await setup();

    const response = await client.post("/custom-fields", {
      body: { name: "Long", scope: "organization", value: "v".repeat(500) },
    });

    expect(response.status).toBe(201);
    expect(response.body.value).toHaveLength(500);
  });

  it.each([
    ["the default scope", { name: "Plan", value: "pro" }],
    ["scope contact", { name: "Plan", scope: "contact", value: "pro" }],
  ])("refuses a value on a field of %s with 422 naming value", async (_, body) => {
    const { client } = await setup();

    expectValidationError(await client.post("/custom-fields", { body }), "value");
    expect(await fieldKeys(client)).toEqual([]);
  });
});

describe("GET /custom-fields", () => {
  it("lists newest first, page by page", async () => {
    const { client } = await setup();
    const first = await createField(client, { name: "First" });
    const second = await createField(client, { name: "Second", scope: "organization", value: "x" });
    const third = await createField(client, { name: "Third" });

    const page = await client.get("/custom-fields", { query: { limit: 2 } });
    const next = await client.get("/custom-fields", { query: { limit: 2, after: page.body.pagination.next_cursor } });

    expect(page.status).toBe(200);
    expect(page.body).toEqual({
      object: "list",
      data: [third, second],
      pagination: { has_more: true, next_cursor: expect.any(String) },
    });
    expect(next.body).toEqual({ object: "list", data: [first], pagination: { has_more: false, next_cursor: null } });
  });

  it("refuses a cursor it did not issue with 422 invalid_cursor", async () => {
    const { client } = await setup();

    expectError(await client.get("/custom-fields", { query: { after: "x".repeat(81) } }), 422, "invalid_cursor");
    expectError(await client.get("/custom-fields", { query: { after: "abc.def" } }), 422, "invalid_cursor");
  });

  it("refuses a cursor of the tags list with 422 invalid_cursor", async () => {
    const { client } = await setup();
    await client.post("/tags", { body: { name: "a" } });
    await client.post("/tags", { body: { name: "b" } });
    const tags = await client.get("/tags", { query: { limit: 1 } });

    const response = await client.get("/custom-fields", { query: { after: tags.body.pagination.next_cursor } });

    expectError(response, 422, "invalid_cursor");
  });
});

describe("custom fields on contacts", () => {
  it("makes a created contact field usable in contact custom_fields", async () => {
    const { client } = await setup();
    const field = await createField(client, { name: "Date of birth" });

    const contact = await client.post("/contacts", { body: { custom_fields: { [field.key]: "1815-12-10" } } });

    expect(contact.status).toBe(201);
    expect(contact.body.custom_fields).toEqual({ date_of_birth: "1815-12-10" });
    const fetched = await client.get(`/contacts/${contact.body.id}`);
    expect(fetched.body.custom_fields).toEqual({ date_of_birth: "1815-12-10" });
    const updated = await client.patch(`/contacts/${contact.body.id}`, {
      body: { custom_fields: { date_of_birth: "1815-12-11" } },
    });
    expect(updated.body.custom_fields).toEqual({ date_of_birth: "1815-12-11" });
  });

  it("refuses a key before its field exists and accepts it after", async () => {
    const { client } = await setup();

    const before = await client.post("/contacts", { body: { custom_fields: { shoe_size: "42" } } });
    await createField(client, { name: "Shoe size" });
    const after = await client.post("/contacts", { body: { custom_fields: { shoe_size: "42" } } });

    expectValidationError(before, "custom_fields.shoe_size");
    expect(after.status).toBe(201);
  });

  it("refuses an organization field's key in contact custom_fields", async () => {
    const { client } = await setup();
    await createField(client, { name: "Support hours", scope: "organization", value: "9-17" });

    const response = await client.post("/contacts", { body: { custom_fields: { support_hours: "x" } } });

    expectValidationError(response, "custom_fields.support_hours");
  });
});

describe("isolation", () => {
  it("lists only the fields of the key's organization and environment", async () => {
    const { client, live } = await setup();
    const other = await setup();
    const testField = await createField(client, { name: "Sandbox field" });
    const liveField = await createField(live, { name: "Live field" });
    await createField(other.client, { name: "Foreign field" });

    expect(await walkList(client, "/custom-fields")).toEqual([testField]);
    expect(await walkList(live, "/custom-fields")).toEqual([liveField]);
  });

  it("refuses on a contact the key of a field of the other environment or organization", async () => {
    const { client, live } = await setup();
    const other = await setup();
    await createField(live, { name: "Live only" });
    await createField(other.client, { name: "Foreign" });

    expectValidationError(
      await client.post("/contacts", { body: { custom_fields: { live_only: "x" } } }),
      "custom_fields.live_only",
    );
    expectValidationError(
      await client.post("/contacts", { body: { custom_fields: { foreign: "x" } } }),
      "custom_fields.foreign",
    );
  });
});

describe("PATCH /custom-fields/{custom_field_id}", () => {
  it("renames a field with 200; the key stays", async () => {
    const { client } = await setup();
    const field = await createField(client, { name: "Plan" });

    const response = await client.patch(`/custom-fields/${field.id}`, { body: { name: "Billing plan" } });

    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ...field, name: "Billing plan", updated_at: expect.stringMatching(TIMESTAMP) });
    expect(await fieldKeys(client)).toEqual(["plan"]);
    expect((await client.patch(`/custom-fields/${field.id.toLowerCase()}`, { body: {} })).body.name).toBe(
      "Billing plan",
    );
  });

  it("sets and clears the value of an organization field", async () => {
    const { client } = await setup();
    const field = await createField(client, { name: "Support hours", scope: "organization", value: "9-17" });

    const set = await client.patch(`/custom-fields/${field.id}`, { body: { value: "8-20" } });
    const cleared = await client.patch(`/custom-fields/${field.id}`, { body: { value: null } });

    expect(set.body.value).toBe("8-20");
    expect(cleared.status).toBe(200);
    expect(cleared.body.value).toBeNull();
  });

  it.each([
    ["a value on a contact field", { value: "x" }, "value"],
    ["the key", { key: "other" }, "key"],
    ["the scope", { scope: "organization" }, "scope"],
    ["an empty name", { name: "" }, "name"],
    ["a value of 501 characters", { value: "v".repeat(501) }, "value"],
  ])("refuses %s with 422", async (_, body, param) => {
    const { client } = await setup();
    const field = await createField(client, { name: "Plan" });

    expectValidationError(await client.patch(`/custom-fields/${field.id}`, { body }), param);
    expect((await walkList(client, "/custom-fields"))[0]).toEqual(field);
  });

  it("answers 404 for an unknown field or one of the other environment or organization", async () => {
    const { client, live } = await setup();
    const other = await setup();
    const field = await createField(client, { name: "Plan" });

    expectError(
      await client.patch("/custom-fields/cf_01ARZ3NDEKTSV4RRFFQ69G5FAV", { body: {} }),
      404,
      "resource_not_found",
    );
    expectError(await live.patch(`/custom-fields/${field.id}`, { body: { name: "x" } }), 404, "resource_not_found");
    expectError(
      await other.client.patch(`/custom-fields/${field.id}`, { body: { name: "x" } }),
      404,
      "resource_not_found",
    );
    expect((await walkList(client, "/custom-fields"))[0]?.name).toBe("Plan");
  });
});

describe("DELETE /custom-fields/{custom_field_id}", () => {
  it("deletes the field with 200 and removes its value from every contact, each emitting contact.updated", async () => {
    const { org, client } = await setup();
    const plan = await createField(client, { name: "Plan" });
    await createField(client, { name: "Region" });
    const withPlan = await client.post("/contacts", { body: { custom_fields: { plan: "pro", region: "eu" } } });
    const without = await client.post("/contacts", { body: { custom_fields: { region: "us" } } });
    const before = (await storedEvents(api, org.id)).length;

    const response = await client.delete(`/custom-fields/${plan.id}`);

    expect(response.status).toBe(200);
    expect(response.body).toEqual({ object: "custom_field", id: plan.id, deleted: true });
    expect(await fieldKeys(client)).toEqual(["region"]);
    const after = await client.get(`/contacts/${withPlan.body.id}`);
    expect(after.body.custom_fields).toEqual({ region: "eu" });
    expect((await client.get(`/contacts/${without.body.id}`)).body).toEqual(without.body);
    const events = (await storedEvents(api, org.id)).slice(before);
    expect(events.map((event) => [event.type, event.data.contact.id])).toEqual([["contact.updated", withPlan.body.id]]);
    expect(events[0]?.data.contact).toEqual(after.body);
    expectError(await client.delete(`/custom-fields/${plan.id}`), 404, "resource_not_found");
  });

  it("frees the key: a new field of the same key starts with no values", async () => {
    const { client } = await setup();
    const plan = await createField(client, { name: "Plan" });
    const contact = await client.post("/contacts", { body: { custom_fields: { plan: "pro" } } });
    await client.delete(`/custom-fields/${plan.id}`);

    await createField(client, { name: "Plan" });

    expect((await client.get(`/contacts/${contact.body.id}`)).body.custom_fields).toEqual({});
    expectValidationError(
      await client.post("/contacts", { body: { custom_fields: { region: "x" } } }),
      "custom_fields.region",
    );
  });

  it("leaves the contacts of the other environment alone", async () => {
    const { client, live } = await setup();
    const testPlan = await createField(client, { name: "Plan" });
    await createField(live, { name: "Plan" });
    const liveContact = await live.post("/contacts", { body: { custom_fields: { plan: "pro" } } });

    expect((await client.delete(`/custom-fields/${testPlan.id}`)).status).toBe(200);

    expect((await live.get(`/contacts/${liveContact.body.id}`)).body.custom_fields).toEqual({ plan: "pro" });
  });

  it("never leaves a value behind when a contact is written while the field is deleted", async () => {
    const { client } = await setup();
    const contact = await client.post("/contacts", { body: {} });
    for (let round = 0; round < 8; round++) {
      const field = await createField(client, { name: `Field ${round}` });

      const [written, deleted] = await Promise.all([
        client.patch(`/contacts/${contact.body.id}`, { body: { custom_fields: { [field.key]: "v" } } }),
        client.delete(`/custom-fields/${field.id}`),
      ]);

      expect(deleted.status).toBe(200);
      expect([200, 422], JSON.stringify(written.body)).toContain(written.status);
      expect((await client.get(`/contacts/${contact.body.id}`)).body.custom_fields).toEqual({});
    }
  });

  it("answers 404 for a field of another organization, and needs custom_fields:write", async () => {
    const { org, client } = await setup();
    const other = await setup();
    const field = await createField(client, { name: "Plan" });
    const reader = await createApiKey(api.context.db, {
      organizationId: org.id,
      environment: "test",
      scopes: ["custom_fields:read"],
    });

    expectError(await other.client.delete(`/custom-fields/${field.id}`), 404, "resource_not_found");
    expectError(await as(api, reader.key).delete(`/custom-fields/${field.id}`), 403, "insufficient_scope");
    expectError(await as(api, reader.key).patch(`/custom-fields/${field.id}`, { body: {} }), 403, "insufficient_scope");
    expect(await fieldKeys(client)).toEqual(["plan"]);
  });
});
