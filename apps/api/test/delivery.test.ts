import { describe, expect, it } from "vitest";
import {
  applyReceipt,
  type Client,
  eventTypes,
  getConversation,
  jobsFor,
  manualConversation,
  messageEvents,
  onlyEvent,
  openConversation,
  outboxRows,
  receiveText,
  sandboxChannel,
  sendableConversation,
  sendText,
  statusOf,
  testClient,
  waitForStatus,
  waitPastReceiptDelays,
  waitUntilSettled,
} from "./delivery-helpers.js";
import { eventually, useTestApi, useTestWorker } from "./harness.js";

/**
 * The sandbox's delivery cycle through the real worker (relay, deliver_message,
 * apply_receipt) running in this process on this file's own database, with the sandbox's
 * delivery and read delays at 50 ms.
 */
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });
const testWorker = useTestWorker(api, { sandbox: { deliveryDelayMs: 50, readDelayMs: 50 } });

const WINDOW_CLOSED = {
  code: "131047",
  message: "Re-engagement message: more than 24 hours have passed since the customer last replied",
};

/** A WhatsApp conversation whose contact has just written: its session window is open. */
async function whatsappWithOpenWindow(client: Client) {
  const conversation = await openConversation(client, "whatsapp");
  await receiveText(client, conversation.id);
  return conversation;
}

/**
 * The event of `type` is the only one of its kind, and carries the message exactly as GET
 * returned it in that state, with the conversation as GET returns it.
 */
async function expectEventOf(client: Client, message: Record<string, any>, type: string) {
  const event = await onlyEvent(api, message.id, type);
  expect(event.data).toEqual({ message, conversation: await getConversation(client, message.conversation_id) });
  return event;
}

/**
 * `message.sent` carries the message as it was when sent: what GET returns now, with the
 * status `sent` and an earlier `updated_at`.
 */
async function expectSentEventBefore(client: Client, later: Record<string, any>) {
  const event = await onlyEvent(api, later.id, "message.sent");
  const sentAt = event.data.message.updated_at;
  expect(event.data).toEqual({
    message: { ...later, status: "sent", error: null, updated_at: sentAt },
    conversation: await getConversation(client, later.conversation_id),
  });
  expect(Date.parse(sentAt)).toBeGreaterThanOrEqual(Date.parse(later.created_at));
  expect(Date.parse(sentAt)).toBeLessThanOrEqual(Date.parse(later.updated_at));
}

async function expectQueued(client: Client, conversationId: string, text: string) {
  const message = await sendText(client, conversationId, text);
  expect(message).toMatchObject({ direction: "outbound", status: "queued", error: null, text });
  return message;
}

describe("sandbox delivery: queued -> sent -> delivered", () => {
  it("delivers on WhatsApp once the contact has written, with one message.sent and one message.delivered", async () => {
    const { client } = await testClient(api);
    const conversation = await whatsappWithOpenWindow(client);
    const queued = await expectQueued(client, conversation.id, "Your order has shipped");

    const delivered = await waitForStatus(api, client, queued.id, "delivered");
    await waitUntilSettled(api, queued.id);
    expect(delivered).toEqual({ ...queued, status: "delivered", updated_at: delivered.updated_at });
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.delivered"]);
    await expectEventOf(client, delivered, "message.delivered");
    await expectSentEventBefore(client, delivered);
  });

  it.each(["messenger", "webchat"])("delivers on %s, with one message.sent and one message.delivered", async (type) => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, type);
    const queued = await expectQueued(client, conversation.id, `Hello on ${type}`);

    const delivered = await waitForStatus(api, client, queued.id, "delivered");
    await waitUntilSettled(api, queued.id);
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.delivered"]);
    await expectEventOf(client, delivered, "message.delivered");
    await expectSentEventBefore(client, delivered);
  });

  it.each(["whatsapp", "messenger", "webchat"])(
    "[sandbox:read] reaches read on %s, after delivered, with message.read",
    async (type) => {
      const { client } = await testClient(api);
      const conversation =
        type === "whatsapp" ? await whatsappWithOpenWindow(client) : await sendableConversation(client, type);
      const queued = await expectQueued(client, conversation.id, "Please confirm [sandbox:read]");

      const read = await waitForStatus(api, client, queued.id, "read");
      await waitUntilSettled(api, queued.id);
      expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.delivered", "message.read"]);
      await expectEventOf(client, read, "message.read");
      const delivered = await onlyEvent(api, queued.id, "message.delivered");
      expect(delivered.data.message).toEqual({
        ...read,
        status: "delivered",
        updated_at: delivered.data.message.updated_at,
      });
    },
  );

  it.each(["instagram", "email"])("stops at sent on %s, which gives no delivery receipts", async (type) => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, type);
    const queued = await expectQueued(client, conversation.id, "No receipts here");

    const sent = await waitForStatus(api, client, queued.id, "sent");
    await waitUntilSettled(api, queued.id);
    // Nothing is scheduled any more; wait past the delivery delay all the same.
    await waitPastReceiptDelays();
    expect((await client.get(`/messages/${queued.id}`)).body).toEqual(sent);
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent"]);
    await expectEventOf(client, sent, "message.sent");
  });

  it("reaches read on Instagram with [sandbox:read]: read receipts without delivery receipts", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "instagram");
    const queued = await expectQueued(client, conversation.id, "Seen? [sandbox:read]");

    const read = await waitForStatus(api, client, queued.id, "read");
    await waitUntilSettled(api, queued.id);
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.read"]);
    await expectEventOf(client, read, "message.read");
  });

  it("stays at sent with [sandbox:read] on email, which reports no reading", async () => {
    const { client } = await testClient(api);
    const conversation = await openConversation(client, "email");
    const queued = await expectQueued(client, conversation.id, "Read me [sandbox:read]");

    await waitForStatus(api, client, queued.id, "sent");
    await waitUntilSettled(api, queued.id);
    // Nothing is scheduled; wait past the read delay all the same.
    await waitPastReceiptDelays();
    expect(await statusOf(api, queued.id)).toBe("sent");
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent"]);
  });

  it("stays at sent on Messenger with [sandbox:no-receipts]", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "messenger");
    const queued = await expectQueued(client, conversation.id, "Quiet [sandbox:no-receipts]");

    await waitForStatus(api, client, queued.id, "sent");
    await waitUntilSettled(api, queued.id);
    // Nothing is scheduled; wait past the delivery delay all the same.
    await waitPastReceiptDelays();
    expect(await statusOf(api, queued.id)).toBe("sent");
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent"]);
  });

  it("never delivers a manual record's message: status null, no outbox row, no job, no event", async () => {
    const { client } = await testClient(api);
    const conversation = await manualConversation(client);
    const stored = await sendText(client, conversation.id, "Noted by phone");
    expect(stored).toMatchObject({ status: null, error: null, direction: "outbound" });
    expect(await outboxRows(api, stored.id)).toBe(0);

    // A queued message would be sent within this time; this one must not move.
    await waitPastReceiptDelays();
    expect((await client.get(`/messages/${stored.id}`)).body).toEqual(stored);
    expect(await jobsFor(api, stored.id)).toEqual([]);
    expect(await messageEvents(api, stored.id)).toEqual([]);
  });
});

describe("WhatsApp's 24-hour session window", () => {
  it("accepts a message to a contact who never wrote (201 queued), then fails it with 131047", async () => {
    const { client } = await testClient(api);
    const conversation = await openConversation(client, "whatsapp");
    const queued = await expectQueued(client, conversation.id, "Hi there");

    const failed = await waitForStatus(api, client, queued.id, "failed");
    await waitUntilSettled(api, queued.id);
    expect(failed).toEqual({ ...queued, status: "failed", error: WINDOW_CLOSED, updated_at: failed.updated_at });
    expect(await eventTypes(api, queued.id)).toEqual(["message.failed"]);
    const event = await expectEventOf(client, failed, "message.failed");
    expect(event.data.message.error).toEqual(WINDOW_CLOSED);
  });

  it("is opened by a message from the contact through the test helper", async () => {
    const { client } = await testClient(api);
    const conversation = await openConversation(client, "whatsapp");
    const before = await expectQueued(client, conversation.id, "Before the contact wrote");
    await waitForStatus(api, client, before.id, "failed");

    await receiveText(client, conversation.id, "Hi, I have a question");
    const after = await expectQueued(client, conversation.id, "Happy to help");
    await waitForStatus(api, client, after.id, "delivered");
    expect(await eventTypes(api, after.id)).toEqual(["message.sent", "message.delivered"]);
  });

  it("is closed when the contact's last message is more than 24 hours old", async () => {
    const { client } = await testClient(api);
    const conversation = await openConversation(client, "whatsapp");
    const inbound = await receiveText(client, conversation.id, "Yesterday's question");
    await api.client.sql`
      update messages set created_at = now() - interval '24 hours 1 minute' where id = ${inbound.id}`;

    const queued = await expectQueued(client, conversation.id, "Sorry for the wait");
    const failed = await waitForStatus(api, client, queued.id, "failed");
    expect(failed.error).toEqual(WINDOW_CLOSED);
    expect(await eventTypes(api, queued.id)).toEqual(["message.failed"]);
  });

  it("is still open 23 hours after the contact's last message", async () => {
    const { client } = await testClient(api);
    const conversation = await openConversation(client, "whatsapp");
    const inbound = await receiveText(client, conversation.id, "This morning's question");
    await api.client.sql`update messages set created_at = now() - interval '23 hours' where id = ${inbound.id}`;

    const queued = await expectQueued(client, conversation.id, "Here is the answer");
    await waitForStatus(api, client, queued.id, "delivered");
  });

  it("counts only the contact's messages on the WhatsApp channel, not on another channel", async () => {
    const { client } = await testClient(api);
    const whatsapp = await openConversation(client, "whatsapp");
    const messenger = await client.post("/conversations", {
      body: { contact_id: whatsapp.contact_id, channel_id: (await sandboxChannel(client, "messenger")).id },
    });
    expect(messenger.status).toBe(201);
    await receiveText(client, messenger.body.id, "Wrote on Messenger");

    const queued = await expectQueued(client, whatsapp.id, "Reply on WhatsApp");
    const failed = await waitForStatus(api, client, queued.id, "failed");
    expect(failed.error).toEqual(WINDOW_CLOSED);
  });
});

describe("provider failures", () => {
  it.each([
    ["[sandbox:fail=131026]", { code: "131026", message: "Message undeliverable" }],
    ["[sandbox:fail]", { code: "131026", message: "Message undeliverable" }],
    ["[sandbox:fail=551]", { code: "551", message: "This person isn't available right now" }],
  ])("%s fails the message with the provider's code and message, untranslated", async (trigger, error) => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "messenger");
    const queued = await expectQueued(client, conversation.id, `Refuse this ${trigger}`);

    const failed = await waitForStatus(api, client, queued.id, "failed");
    await waitUntilSettled(api, queued.id);
    expect(failed).toEqual({ ...queued, status: "failed", error, updated_at: failed.updated_at });
    expect(await eventTypes(api, queued.id)).toEqual(["message.failed"]);
    await expectEventOf(client, failed, "message.failed");
  });

  it("[sandbox:fail-after-sent=131049] is sent, then fails with that code", async () => {
    const { client } = await testClient(api);
    const conversation = await whatsappWithOpenWindow(client);
    const queued = await expectQueued(client, conversation.id, "Promo [sandbox:fail-after-sent=131049]");

    const failed = await waitForStatus(api, client, queued.id, "failed");
    await waitUntilSettled(api, queued.id);
    expect(failed.error).toEqual({
      code: "131049",
      message: "This message was not delivered to maintain healthy ecosystem engagement",
    });
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.failed"]);
    await expectEventOf(client, failed, "message.failed");
    await expectSentEventBefore(client, failed);
  });

  it("never resends a failed message, even when a delivery is asked for again", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "messenger");
    const queued = await expectQueued(client, conversation.id, "Once only [sandbox:fail=131026]");
    const failed = await waitForStatus(api, client, queued.id, "failed");
    // The delivery job completed: it is not kept for a retry.
    await waitUntilSettled(api, queued.id);
    const events = await messageEvents(api, queued.id);

    await api.client.sql`insert into message_outbox (message_id) values (${queued.id})`;
    testWorker.worker.wake();
    // The relay turns the row into a job and the job runs: both are gone afterwards.
    await waitUntilSettled(api, queued.id);
    // Nothing is scheduled; wait past the receipt delays all the same.
    await waitPastReceiptDelays();
    expect((await client.get(`/messages/${queued.id}`)).body).toEqual(failed);
    expect(await messageEvents(api, queued.id)).toEqual(events);
  });
});

describe("forward-only transitions", () => {
  it("a late delivered, sent or failed receipt never overwrites read, and records nothing", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "messenger");
    const queued = await expectQueued(client, conversation.id, "[sandbox:read]");
    const read = await waitForStatus(api, client, queued.id, "read");
    await waitUntilSettled(api, queued.id);

    for (const status of ["delivered", "sent", "failed", "read"]) await applyReceipt(api, queued.id, status);
    expect((await client.get(`/messages/${queued.id}`)).body).toEqual(read);
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.delivered", "message.read"]);
  });

  it("read arriving before delivered moves sent to read, and the late delivered is ignored", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "messenger");
    const queued = await expectQueued(client, conversation.id, "[sandbox:no-receipts]");
    await waitForStatus(api, client, queued.id, "sent");
    await waitUntilSettled(api, queued.id);

    await applyReceipt(api, queued.id, "read");
    const read = await waitForStatus(api, client, queued.id, "read");
    await applyReceipt(api, queued.id, "delivered");
    expect((await client.get(`/messages/${queued.id}`)).body).toEqual(read);
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.read"]);
    await expectEventOf(client, read, "message.read");
  });

  it("a failure receipt after delivered is ignored: failed only follows queued or sent", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "messenger");
    const queued = await expectQueued(client, conversation.id, "Arrived");
    const delivered = await waitForStatus(api, client, queued.id, "delivered");
    await waitUntilSettled(api, queued.id);

    await applyReceipt(api, queued.id, "failed");
    expect((await client.get(`/messages/${queued.id}`)).body).toEqual(delivered);
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.delivered"]);
  });

  it("ignores every receipt for a failed message", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "messenger");
    const queued = await expectQueued(client, conversation.id, "[sandbox:fail=131026]");
    const failed = await waitForStatus(api, client, queued.id, "failed");
    await waitUntilSettled(api, queued.id);

    for (const status of ["sent", "delivered", "read", "failed"]) await applyReceipt(api, queued.id, status);
    expect((await client.get(`/messages/${queued.id}`)).body).toEqual(failed);
    expect(await eventTypes(api, queued.id)).toEqual(["message.failed"]);
  });

  it("never fills in the null status of an inbound message", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "messenger");
    const inbound = await receiveText(client, conversation.id, "From the contact");

    for (const status of ["sent", "delivered", "read", "failed"]) await applyReceipt(api, inbound.id, status);
    expect((await client.get(`/messages/${inbound.id}`)).body).toEqual(inbound);
    expect(await eventTypes(api, inbound.id)).toEqual(["message.received"]);
  });
});

describe("temporary provider faults", () => {
  it("[sandbox:temporary-error=1] is retried by the job with backoff and ends delivered, sent once", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "messenger");
    const queued = await expectQueued(client, conversation.id, "Flaky [sandbox:temporary-error=1]");

    // The first attempt failed and the job waits for its retry: the message has not moved.
    const [job] = await eventually(
      () => jobsFor(api, queued.id, "deliver_message"),
      (jobs) => jobs[0]?.attempts === 1 && jobs[0]?.last_error != null && jobs[0]?.locked_by === null,
    );
    expect(job?.last_error).toMatch(/temporary fault/);
    expect(await statusOf(api, queued.id)).toBe("queued");
    expect(await messageEvents(api, queued.id)).toEqual([]);

    // graphile-worker's first retry comes about 2.7 s later (exp(1) seconds).
    await waitForStatus(api, client, queued.id, "delivered", 15_000);
    await waitUntilSettled(api, queued.id);
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.delivered"]);
  }, 30_000);

  it("fails the message with provider_unavailable when the last attempt also hits a temporary fault", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "messenger");
    const queued = await expectQueued(client, conversation.id, "Down [sandbox:temporary-error=5]");
    const [job] = await eventually(
      () => jobsFor(api, queued.id, "deliver_message"),
      (jobs) => jobs[0]?.attempts === 1 && jobs[0]?.last_error != null && jobs[0]?.locked_by === null,
    );

    // Make the next attempt the job's last one, and due now.
    await api.client.sql`
      update graphile_worker._private_jobs set max_attempts = 2, run_at = now() where id = ${job?.id ?? ""}::bigint`;
    const failed = await waitForStatus(api, client, queued.id, "failed", 15_000);
    await waitUntilSettled(api, queued.id);
    expect(failed.error).toEqual({ code: "provider_unavailable", message: "sandbox temporary fault on attempt 2" });
    expect(await eventTypes(api, queued.id)).toEqual(["message.failed"]);
  }, 30_000);
});
