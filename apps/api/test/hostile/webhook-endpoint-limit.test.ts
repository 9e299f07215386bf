import { describe, expect, it } from "vitest";
import { as, createTestOrganization, expectValidationError, useTestApi, walkList } from "../harness.js";

/**
 * Every webhook endpoint is one more POST per event: an environment holds at most 16
 * (`WEBHOOK_ENDPOINTS_PER_ENVIRONMENT`), enabled or not; the 17th is refused with 422
 * `validation_error` on `url`, also when the creations race.
 */
const api = useTestApi();

const LIMIT = 16;
const body = (n: number) => ({ body: { url: `https://example.com/hooks/${n}`, events: ["*"] } });

async function setup() {
  const org = await createTestOrganization(api);
  return { test: as(api, org.test), live: as(api, org.live) };
}

describe("webhook endpoints per environment", () => {
  it(`accepts ${LIMIT}, refuses the next with 422 on url, and accepts again after a delete`, async () => {
    const { test } = await setup();
    const created: string[] = [];
    for (let n = 0; n < LIMIT; n++) {
      const response = await test.post("/webhooks", body(n));
      expect(response.status).toBe(201);
      created.push(response.body.id);
    }
    // A disabled endpoint counts too: it can be re-enabled at any time.
    expect((await test.patch(`/webhooks/${created[0]}`, { body: { enabled: false } })).status).toBe(200);

    const refused = await test.post("/webhooks", body(LIMIT));
    expectValidationError(refused, "url");
    expect(refused.body.error.message).toContain(`${LIMIT}`);
    expect(await walkList(test, "/webhooks")).toHaveLength(LIMIT);

    expect((await test.delete(`/webhooks/${created[1]}`)).status).toBe(200);
    expect((await test.post("/webhooks", body(LIMIT))).status).toBe(201);
  });

  it("counts each environment on its own", async () => {
    const { test, live } = await setup();
    for (let n = 0; n < LIMIT; n++) expect((await test.post("/webhooks", body(n))).status).toBe(201);

    expect((await live.post("/webhooks", body(0))).status).toBe(201);
  });

  it("holds when creations race: never more than the limit", async () => {
    const { test } = await setup();
    for (let n = 0; n < LIMIT - 2; n++) expect((await test.post("/webhooks", body(n))).status).toBe(201);

    const answers = await Promise.all(Array.from({ length: 8 }, (_, n) => test.post("/webhooks", body(100 + n))));

    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(2);
    expect(answers.filter((answer) => answer.status === 422)).toHaveLength(6);
    expect(await walkList(test, "/webhooks")).toHaveLength(LIMIT);
  });
});
