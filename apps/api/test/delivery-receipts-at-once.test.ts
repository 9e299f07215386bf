import { describe, expect, it } from "vitest";
import {
  type Client,
  getConversation,
  jobsFor,
  messageEvents,
  sendableConversation,
  sendText,
  statusOf,
  testClient,
  waitForStatus,
  waitUntilSettled,
} from "./delivery-helpers.js";
import { eventually, useTestApi, useTestWorker } from "./harness.js";

/**
 * The sandbox with no delays (as `pnpm bench` runs it): a send's receipts are due the
 * moment it is sent, and the delivery job records the send and those receipts in one
 * transaction, by the same statements. Each step is still a move of its own: an event
 * each, in order, each carrying the message as it stood at that step.
 */
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });
const testWorker = useTestWorker(api, { sandbox: { deliveryDelayMs: 0, readDelayMs: 0 }, metrics: { port: 0 } });

/** The message's events, each as its type and the message's status, error and updated_at in it. */
async function stepsOf(messageId: string) {
  return (await messageEvents(api, messageId)).map((event) => ({
    type: event.type,
    status: event.data.message.status,
    error: event.data.message.error,
  }));
}

/** The events of the message carry it as GET returns it now, but for the status and error of their step. */
async function expectEventsOf(client: Client, final: Record<string, any>) {
  const conversation = await getConversation(client, final.conversation_id);
  for (const event of await messageEvents(api, final.id)) {
    const status = event.type.replace("message.", "");
    const error = status === final.status ? final.error : null;
    expect(event.data).toEqual({ message: { ...final, status, error }, conversation });
  }
}

async function messagesCounted(status: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${testWorker.worker.metricsPort}/metrics`)).text();
  const line = new RegExp(
    `^parley_messages_total\\{channel_type="whatsapp",status="${status}",error_code="[^"]*"\\} (\\d+)$`,
    "gm",
  );
  return [...text.matchAll(line)].reduce((sum, match) => sum + Number(match[1]), 0);
}

/** A text sent on a new sandbox WhatsApp conversation, once it reached `status` and nothing is left to do for it. */
async function sendUntil(text: string, status: string) {
  const { client } = await testClient(api);
  const conversation = await sendableConversation(client, "whatsapp");
  const queued = await sendText(client, conversation.id, text);
  const message = await waitForStatus(api, client, queued.id, status);
  await waitUntilSettled(api, queued.id);
  return { client, message };
}

describe("receipts due at once (sandbox delays 0)", () => {
  it("records sent, then delivered: an event each, in order, each with the message as it was at its step", async () => {
    const { client, message: delivered } = await sendUntil("At once", "delivered");

    expect(await stepsOf(delivered.id)).toEqual([
      { type: "message.sent", status: "sent", error: null },
      { type: "message.delivered", status: "delivered", error: null },
    ]);
    await expectEventsOf(client, delivered);
  });

  it("[sandbox:read] goes through sent, delivered and read, one event each", async () => {
    const { client, message: read } = await sendUntil("[sandbox:read] At once, read", "read");

    expect((await stepsOf(read.id)).map((step) => step.status)).toEqual(["sent", "delivered", "read"]);
    await expectEventsOf(client, read);
  });

  it("[sandbox:fail-after-sent=131049] is sent without an error, then fails with the code", async () => {
    const { client, message: failed } = await sendUntil("[sandbox:fail-after-sent=131049] At once, failed", "failed");

    expect(failed.error).toMatchObject({ code: "131049" });
    expect(await stepsOf(failed.id)).toEqual([
      { type: "message.sent", status: "sent", error: null },
      { type: "message.failed", status: "failed", error: failed.error },
    ]);
    await expectEventsOf(client, failed);
  });

  it("a batch of sends: every message sent then delivered, its events in that order, receipts counted once each", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "whatsapp");
    const deliveredBefore = await messagesCounted("delivered");
    // Sent together, they reach the relay together: most go out in one job.
    const sends = await Promise.all(
      Array.from({ length: 12 }, (_, index) => sendText(client, conversation.id, `Batch ${index}`)),
    );
    for (const sent of sends) await waitForStatus(api, client, sent.id, "delivered");
    for (const sent of sends) {
      await waitUntilSettled(api, sent.id);
      expect((await stepsOf(sent.id)).map((step) => step.type)).toEqual(["message.sent", "message.delivered"]);
    }
    await eventually(
      () => messagesCounted("delivered"),
      (count) => count >= deliveredBefore + sends.length,
    );
    expect(await messagesCounted("delivered")).toBe(deliveredBefore + sends.length);
  });

  it("a recording that fails at its last statement is rolled back whole, and the job runs again", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "whatsapp");
    // The events' statement is the last one before COMMIT, in the same round trip: make it fail.
    await api.client.sql`
      create function refuse_recorded_event() returns trigger language plpgsql as $$
      begin raise exception 'refused by the test'; end $$`;
    await api.client.sql`
      create trigger refuse_recorded_event before insert on events for each row
      when (new.data->'message'->>'text' = 'Recorded at the second try')
      execute function refuse_recorded_event()`;
    let queued: Record<string, any>;
    try {
      queued = await sendText(client, conversation.id, "Recorded at the second try");
      const messageId = queued.id;
      const [failedJob] = await eventually(
        () => jobsFor(api, messageId, "deliver_message"),
        (jobs) => jobs[0]?.last_error != null,
      );
      expect(failedJob?.last_error).toContain("refused by the test");
      // Nothing of the try stayed: neither its status nor its events.
      expect(await statusOf(api, messageId)).toBe("queued");
      expect(await messageEvents(api, messageId)).toEqual([]);
    } finally {
      await api.client.sql`drop trigger refuse_recorded_event on events`;
      await api.client.sql`drop function refuse_recorded_event()`;
    }
    // graphile-worker's backoff after a first failure: about 3 s.
    await waitForStatus(api, client, queued.id, "delivered", 20_000);
    await waitUntilSettled(api, queued.id);
    expect((await stepsOf(queued.id)).map((step) => step.type)).toEqual(["message.sent", "message.delivered"]);
  });
});
