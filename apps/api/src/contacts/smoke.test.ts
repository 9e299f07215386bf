import { describe, expect, it } from "vitest";
import { as, createTestOrganization, useTestApi } from "../../test/harness.js";

const api = useTestApi();

describe("smoke", () => {
  it("creates and reads a contact", async () => {
    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    const created = await client.post("/contacts", { body: { name: "Ada" } });
    expect(created.status).toBe(201);
    const fetched = await client.get(`/contacts/${created.body.id}`);
    expect(fetched.body.name).toBe("Ada");
    const list = await client.get("/contacts");
    expect(list.body.data).toHaveLength(1);
  });
});
