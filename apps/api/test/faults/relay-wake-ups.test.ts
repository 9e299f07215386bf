import { describe, expect, it } from "vitest";
import { sendableConversation } from "../delivery-helpers.js";
import { as, eventually, setupOrganization, useTestApi } from "../harness.js";
import { useWorkerFleet } from "../worker-fleet.js";
import { useFaultReceivers } from "./fault-receiver.js";
import { useApiProcesses } from "./processes.js";

/**
 * Production shape: `apps/api/dist/main.js` with `RUN_WORKER=false` and a worker elsewhere.
 * The worker's relays poll only once a minute here, so whatever moves within seconds was
 * moved by a wake-up: the API process's NOTIFY after its write committed (the send), and
 * the worker's own after a task that recorded events (`message.sent`). The API process
 * leaves every write to the outbox (`RELAY_IN_REQUEST=false`): a quiet send would otherwise
 * add its job itself (test/relay-in-request.test.ts) and need no wake-up.
 */
const RELAY_POLL_MS = 60_000;
const api = useTestApi({}, { ownDatabase: true });
const fleet = useWorkerFleet(api, {
  heartbeatTimeoutMs: 30_000,
  workerOptions: { relayPollMs: RELAY_POLL_MS, sandbox: { deliveryDelayMs: 0, readDelayMs: 0 } },
});
const apis = useApiProcesses();
const receivers = useFaultReceivers();

describe("relay wake-ups across processes", () => {
  it("a send to an API process without a worker is delivered, and its webhook sent, long before the relays poll", async () => {
    const { client, org } = await setupOrganization(api);
    const conversation = await sendableConversation(client, "messenger");
    const receiver = await receivers.start();
    const endpoint = await client.post("/webhooks", { body: { url: receiver.url, events: ["message.sent"] } });
    expect(endpoint.status).toBe(201);
    await fleet.start();
    const server = await apis.start(api.databaseUrl, { RELAY_IN_REQUEST: "false" });
    const started = Date.now();

    const response = await fetch(`http://127.0.0.1:${server.port}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${org.test}`, "content-type": "application/json" },
      body: JSON.stringify({ conversation_id: conversation.id, type: "text", text: "Woken" }),
    });
    const message = (await response.json()) as { id: string };
    expect(response.status, JSON.stringify(message)).toBe(201);

    const read = as(api, org.test);
    const delivered = await eventually(
      async () => (await read.get(`/messages/${message.id}`)).body.status,
      (status) => status === "delivered",
      RELAY_POLL_MS / 4,
    );
    expect(delivered).toBe("delivered");
    const arrival = await eventually(
      async () => receiver.arrivals.find((item) => JSON.parse(item.body).data?.message?.id === message.id),
      (found) => found !== undefined,
      RELAY_POLL_MS / 4,
    );
    expect(JSON.parse(arrival?.body ?? "{}").type).toBe("message.sent");
    expect(Date.now() - started).toBeLessThan(RELAY_POLL_MS / 4);
  });
});
