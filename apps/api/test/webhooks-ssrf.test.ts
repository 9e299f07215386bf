import { newId } from "@parley/db";
import { describe, expect, it } from "vitest";
import { as, createTestOrganization, eventually, expectValidationError, useTestApi, useTestWorker } from "./harness.js";
import { type ReceiverEndpoint, useWebhookReceiver } from "./webhook-receiver.js";

/**
 * Production mode (`NODE_ENV=production`): a webhook URL must reach a public address, and
 * that is checked again at every delivery, when connecting (DNS can change after the
 * endpoint was created). The endpoints here are written with SQL, as creation refuses
 * them; the receiver on 127.0.0.1 stands for an internal service.
 */
const api = useTestApi({ NODE_ENV: "production", PARLEY_SECRETS_KEY: "0".repeat(64) }, { ownDatabase: true });
useTestWorker(api, { blockPrivateWebhookAddresses: true, webhookFastRetry: true });
const receiver = useWebhookReceiver();

type Client = ReturnType<typeof as>;

async function setup() {
  const org = await createTestOrganization(api);
  return { org, client: as(api, org.test) };
}

/** An endpoint as a row, past the check at creation: an old endpoint, or one whose DNS changed. */
async function insertEndpoint(organizationId: string, url: string) {
  const id = newId("webhook");
  await api.client.sql`
    insert into webhook_endpoints (id, organization_id, environment, url, events, secret)
    values (${id}, ${organizationId}, 'test', ${url}, array['*'], ${"whsec_0123456789abcdefghijklmnopqrstuv"})`;
  return id;
}

async function deliveries(client: Client, endpointId: string) {
  const response = await client.get(`/webhooks/${endpointId}/deliveries`);
  expect(response.status).toBe(200);
  return response.body.data as any[];
}

/** `localhost:<port>/...` etc.: the receiver's address written another way. */
function pointing(target: ReceiverEndpoint, host: string) {
  const url = new URL(target.url);
  url.hostname = host;
  return url.toString();
}

describe("SSRF at delivery time (production mode)", () => {
  it.each([
    ["the loopback address 127.0.0.1", "127.0.0.1"],
    ["a host name resolving to loopback (localhost)", "localhost"],
    ["loopback as an IPv4-mapped IPv6 address", "[::ffff:127.0.0.1]"],
    ["the IPv6 loopback address", "[::1]"],
    ["loopback as an IPv4-compatible IPv6 address", "[::127.0.0.1]"],
    ["loopback through the NAT64 prefix", "[64:ff9b::7f00:1]"],
    ["loopback through 6to4", "[2002:7f00:1::]"],
  ])("an endpoint pointing to %s: the attempt fails as refused and the receiver gets nothing", async (_, host) => {
    const { org, client } = await setup();
    const target = receiver.endpoint();
    const endpointId = await insertEndpoint(org.id, pointing(target, host));

    const contact = await client.post("/contacts", { body: { name: "Ada" } });
    expect(contact.status).toBe(201);

    const [delivery] = await eventually(
      () => deliveries(client, endpointId),
      (list) => list.length >= 1,
    );
    expect(delivery).toMatchObject({
      event_type: "contact.created",
      attempt: 1,
      status: "failed",
      response_status: null,
      error: expect.stringMatching(/^Refused: /),
    });
    // The attempt is recorded after the request would have been answered: nothing came.
    expect(target.received).toEqual([]);
  });

  it("POST /webhooks/{id}/test from the API refuses the same way", async () => {
    const { org, client } = await setup();
    const target = receiver.endpoint();
    const endpointId = await insertEndpoint(org.id, target.url);

    const response = await client.post(`/webhooks/${endpointId}/test`);

    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: "failed", error: expect.stringMatching(/^Refused: /) });
    expect(target.received).toEqual([]);
  });
});

describe("SSRF at creation (production mode)", () => {
  it.each([
    ["[::127.0.0.1]"],
    ["[64:ff9b::a9fe:a9fe]"],
    ["[64:ff9b::7f00:1]"],
    ["[2002:7f00:1::]"],
    ["[2002:a9fe:a9fe::]"],
    ["[::ffff:0:127.0.0.1]"],
    ["[64:ff9b:1::a00:1]"],
    ["[100::1]"],
    ["[fec0::1]"],
  ])(
    "refuses the IPv6 form %s, which carries an internal IPv4 address or is never public, with 422 on url",
    async (host) => {
      const { client } = await setup();

      const response = await client.post("/webhooks", { body: { url: `http://${host}/hooks`, events: ["*"] } });

      expectValidationError(response, "url");
    },
  );

  it("says a host name resolves to a non-public address without naming that address", async () => {
    const { client } = await setup();

    const response = await client.post("/webhooks", { body: { url: "http://localhost:8080/hooks", events: ["*"] } });

    expectValidationError(response, "url");
    const text = JSON.stringify(response.body);
    expect(text).toContain("localhost resolves to a non-public address");
    expect(text).not.toMatch(/127\.0\.0\.1|::1\b/);
  });
});
