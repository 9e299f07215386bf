import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { verifySignature } from "@parley/webhook-verify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { as, createTestOrganization, eventually, useTestApi, useTestWorker } from "./harness.js";

const api = useTestApi({}, { ownDatabase: true });
useTestWorker(api);

interface Received {
  headers: IncomingMessage["headers"];
  body: string;
}

describe("webhook delivery smoke", () => {
  const received: Received[] = [];
  let url = "";
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      received.push({ headers: req.headers, body });
      res.writeHead(200).end("ok");
    });
  });
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("delivers contact.created signed", async () => {
    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    const endpoint = await client.post("/webhooks", { body: { url, events: ["contact.created"] } });
    expect(endpoint.status).toBe(201);
    const contact = await client.post("/contacts", { body: { name: "Hooked" } });
    const delivery = await eventually(
      async () => received.find((entry) => entry.body.includes(contact.body.id)),
      (entry) => entry !== undefined,
    );
    if (!delivery) throw new Error("no delivery");
    await verifySignature(delivery.body, String(delivery.headers["x-parley-signature"]), endpoint.body.secret);
    expect(delivery.headers["x-parley-event"]).toBe("contact.created");
    const deliveries = await eventually(
      () => client.get(`/webhooks/${endpoint.body.id}/deliveries`),
      (response) => response.body.data.length === 1,
    );
    expect(deliveries.body.data[0]).toMatchObject({ status: "succeeded", response_status: 200, attempt: 1 });
  });
});
