import { randomBytes } from "node:crypto";
import { startSmtpSink } from "@parley/channels/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { eventTypes, jobsFor, onlyEvent, statusOf, waitForStatus, waitUntilSettled } from "./delivery-helpers.js";
import {
  connectEmailChannel,
  conversationMessages,
  customerAddress,
  deliverOverSmtp,
  dkimSigned,
  fakeDns,
  headerOf,
  mailTo,
  messagesWithProviderId,
  newMessageId,
  onlyMessageWithProviderId,
  rawEmail,
  smtpSession,
  useSmtpSink,
} from "./email-helpers.js";
import { download, makeImage, makePdf, upload } from "./files.js";
import {
  type Client,
  eventually,
  expectError,
  setupOrganization,
  storedEvents,
  type TestOrganization,
  useTestApi,
  useTestWorker,
} from "./harness.js";

/**
 * The email channel end to end: customer mail into the worker's inbound SMTP server (and
 * the HTTP route), replies out through the channel's relay (an SMTP sink), threaded both
 * ways by Message-ID, In-Reply-To and References.
 */
const SUPPORT = "support@acme.test";

const relay = useSmtpSink();
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });
const dns = fakeDns();
const worker = useTestWorker(api, () => ({
  smtpInbound: { port: 0, host: "127.0.0.1", emailAuthentication: { resolver: dns } },
}));

let org: TestOrganization;
let live: Client;
let test: Client;
let channelId: string;

beforeAll(async () => {
  api.context.emailAuthentication = { resolver: dns };
  const setup = await setupOrganization(api);
  org = setup.org;
  live = setup.live;
  test = setup.client;
  channelId = (await connectEmailChannel(api, org.id, SUPPORT, relay.sink.url)).id;
});

/** Mail from a customer to the support address, delivered over SMTP; resolves once the server answered 250. */
async function customerWrites(
  address: string,
  mail: Omit<Parameters<typeof rawEmail>[0], "to" | "from">,
  name?: string,
) {
  const raw = rawEmail({ ...mail, from: name ? `"${name}" <${address}>` : address, to: `Acme Support <${SUPPORT}>` });
  await deliverOverSmtp(worker, { from: address, to: SUPPORT }, raw);
  return raw;
}

async function getBody(client: Client, path: string) {
  const response = await client.get(path);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body;
}

async function sendMessage(client: Client, body: Record<string, unknown>) {
  const response = await client.post("/messages", { body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  expect(response.body).toMatchObject({ direction: "outbound", status: "queued", error: null });
  return response.body;
}

function postInboundEmail(client: Client, id: string, raw: string, contentType = "message/rfc822") {
  return client.post(`/channels/${id}/inbound-email`, { rawBody: raw, headers: { "content-type": contentType } });
}

async function eventsOfMessage(type: string, messageId: string, environment: "live" | "test" = "live") {
  return (await storedEvents(api, org.id, environment)).filter(
    (event) => event.type === type && event.data.message?.id === messageId,
  );
}

describe("email over SMTP: a customer writes, the business replies, the customer answers", () => {
  it("threads the round trip by Message-ID and strips the quoted history of the answer", async () => {
    const address = customerAddress("ada");
    const customerMessageId = newMessageId();
    const subject = "Order #42 has not arrived";

    // The customer's mail, with the address as a mail client may case it.
    const shouted = address.replace("ada", "Ada").replace("example.com", "Example.COM");
    await customerWrites(
      shouted,
      { subject, messageId: customerMessageId, text: "Hello, my order #42 has not arrived yet. Where is it?" },
      "Ada Lovelace",
    );

    // 250 comes after the commit: the message is there once the SMTP exchange ended.
    const stored = await onlyMessageWithProviderId(api, customerMessageId);
    const received = await getBody(live, `/messages/${stored.id}`);
    expect(received).toMatchObject({
      direction: "inbound",
      type: "text",
      text: "Hello, my order #42 has not arrived yet. Where is it?",
      attachment: null,
      status: null,
      error: null,
    });
    expect(received.metadata.email).toMatchObject({ subject, message_id: customerMessageId });

    const conversation = await getBody(live, `/conversations/${received.conversation_id}`);
    expect(conversation).toMatchObject({ channel_id: channelId, channel_type: "email", status: "open" });
    const contact = await getBody(live, `/contacts/${conversation.contact_id}`);
    expect(contact).toMatchObject({ email: address, name: "Ada Lovelace" });

    const [receivedEvent, ...more] = await eventsOfMessage("message.received", received.id);
    expect(more).toEqual([]);
    expect(receivedEvent?.data.message).toEqual(received);
    expect(receivedEvent?.data.conversation.id).toBe(conversation.id);
    const events = await storedEvents(api, org.id, "live");
    expect(
      events.filter((event) => event.type === "contact.created" && event.data.contact.id === contact.id),
    ).toHaveLength(1);
    expect(
      events.filter((event) => event.type === "conversation.created" && event.data.conversation.id === conversation.id),
    ).toHaveLength(1);

    // The business replies.
    const reply = await sendMessage(live, {
      conversation_id: conversation.id,
      type: "text",
      text: "Sorry about that: your parcel left our warehouse this morning.",
    });
    const mail = await mailTo(relay.sink, address);
    expect(mail.envelope.from).toBe(SUPPORT);
    expect(mail.parsed.from?.address).toBe(SUPPORT);
    expect(mail.parsed.to).toEqual([address]);
    expect(mail.parsed.subject).toBe(`Re: ${subject}`);
    expect(mail.parsed.inReplyTo).toBe(customerMessageId);
    expect(mail.parsed.references).toContain(customerMessageId);
    expect(mail.parsed.text).toBe("Sorry about that: your parcel left our warehouse this morning.");
    const ourMessageId = mail.parsed.messageId;
    expect(ourMessageId).toMatch(/^<[^<>\s]+@acme\.test>$/);
    expect(headerOf(mail.raw, "Message-ID")).toBe(ourMessageId);

    const sent = await waitForStatus(api, live, reply.id, "sent");
    const [outbound] = await api.client.sql<{ provider_message_id: string | null }[]>`
      select provider_message_id from messages where id = ${reply.id}`;
    expect(outbound?.provider_message_id).toBe(ourMessageId);
    // Email declares no receipts: nothing is left to do, and the message stays at sent.
    await waitUntilSettled(api, reply.id);
    expect(await eventTypes(api, reply.id)).toEqual(["message.sent"]);
    expect((await onlyEvent(api, reply.id, "message.sent")).data.message).toMatchObject({
      id: reply.id,
      status: "sent",
    });
    expect(await getBody(live, `/messages/${reply.id}`)).toEqual(sent);
    expect(relay.sink.messages.filter((entry) => entry.envelope.to.includes(address))).toHaveLength(1);

    // The customer answers our mail through the HTTP route, from another of their addresses:
    // only In-Reply-To can thread it (the sender's latest conversation would be a new one).
    const answerId = newMessageId();
    // Posted over HTTP there is no SMTP session for SPF: the answer's DKIM signature makes
    // DMARC pass, so it may join the conversation.
    const answer = await postInboundEmail(
      live,
      channelId,
      await dkimSigned(
        rawEmail({
          from: `"Ada Lovelace" <${customerAddress("ada.work")}>`,
          to: SUPPORT,
          subject: `Re: ${subject}`,
          messageId: answerId,
          inReplyTo: ourMessageId as string,
          references: [customerMessageId, ourMessageId as string],
          text: [
            "Great, thank you!",
            "",
            "On Tue, 3 Jun 2025 at 10:00, Acme Support <support@acme.test> wrote:",
            "> Sorry about that: your parcel left our warehouse this morning.",
            ">",
            "> On Tue, 3 Jun 2025 at 09:30, Ada Lovelace wrote:",
            ">> Hello, my order #42 has not arrived yet. Where is it?",
          ].join("\n"),
        }),
      ),
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    expect(answer.body).toMatchObject({
      direction: "inbound",
      type: "text",
      conversation_id: conversation.id,
      text: "Great, thank you!",
      status: null,
    });
    expect(answer.body.metadata.email).toMatchObject({ subject: `Re: ${subject}`, message_id: answerId });
    expect(await eventsOfMessage("message.received", answer.body.id)).toHaveLength(1);
    expect((await conversationMessages(live, conversation.id)).map((message) => message.id)).toEqual([
      received.id,
      reply.id,
      answer.body.id,
    ]);

    // The next reply answers the customer's answer, lists the whole thread, and keeps one "Re:".
    const followUp = await sendMessage(live, { conversation_id: conversation.id, type: "text", text: "Enjoy!" });
    const second = await mailTo(relay.sink, address, 2);
    expect(second.parsed.subject).toBe(`Re: ${subject}`);
    expect(second.parsed.inReplyTo).toBe(answerId);
    expect(second.parsed.references).toEqual([customerMessageId, ourMessageId, answerId]);
    expect(second.parsed.messageId).not.toBe(ourMessageId);
    await waitForStatus(api, live, followUp.id, "sent");
  });
});

describe("inbound threading without thread headers", () => {
  it("puts a sender's next mail in their conversation, and a new sender's in a new one", async () => {
    const bob = customerAddress("bob");
    const firstId = newMessageId();
    await customerWrites(bob, { subject: "Invoice question", messageId: firstId, text: "Is VAT included?" }, "Bob");
    const first = await onlyMessageWithProviderId(api, firstId);

    const secondId = newMessageId();
    await customerWrites(bob.toUpperCase(), {
      subject: "Another thing",
      messageId: secondId,
      text: "Also, can I pay by card?",
    });
    const second = await onlyMessageWithProviderId(api, secondId);
    expect(second.conversation_id).toBe(first.conversation_id);

    const carol = customerAddress("carol");
    const thirdId = newMessageId();
    await customerWrites(carol, { subject: "Invoice question", messageId: thirdId, text: "Same question" }, "Carol");
    const third = await onlyMessageWithProviderId(api, thirdId);
    expect(third.conversation_id).not.toBe(first.conversation_id);

    const bobs = await getBody(live, `/conversations/${first.conversation_id}`);
    const carols = await getBody(live, `/conversations/${third.conversation_id}`);
    expect(carols.contact_id).not.toBe(bobs.contact_id);
    expect(carols.channel_id).toBe(channelId);
    expect(await getBody(live, `/contacts/${carols.contact_id}`)).toMatchObject({ email: carol, name: "Carol" });
    expect((await conversationMessages(live, bobs.id)).map((message) => message.text)).toEqual([
      "Is VAT included?",
      "Also, can I pay by card?",
    ]);
  });
});

describe("inbound threading by References", () => {
  it("threads a mail whose client dropped In-Reply-To by an ancestor named in References", async () => {
    const olga = customerAddress("olga");
    const firstId = newMessageId();
    await customerWrites(olga, { subject: "Refund", messageId: firstId, text: "Where is my refund?" }, "Olga");
    const first = await onlyMessageWithProviderId(api, firstId);

    // From another address, so that only References can place it.
    const forwardedId = newMessageId();
    await customerWrites(customerAddress("olga.home"), {
      subject: "Re: Refund",
      messageId: forwardedId,
      references: [newMessageId("elsewhere.example"), firstId],
      text: "Any news about the refund?",
    });
    const forwarded = await onlyMessageWithProviderId(api, forwardedId);
    expect(forwarded.conversation_id).toBe(first.conversation_id);
  });
});

describe("inbound attachments", () => {
  it("makes the first attachment the body's message and each further one a message of its own", async () => {
    const png = await makeImage("png", { width: 12, height: 8, exif: null });
    const pdf = makePdf("Receipt 77");
    const address = customerAddress("dan");
    const messageId = newMessageId();
    await customerWrites(address, {
      subject: "Broken on arrival",
      messageId,
      text: "Here is a photo of the damage and my receipt.",
      attachments: [
        { filename: "damage.png", contentType: "image/png", content: png },
        { filename: "receipt.pdf", contentType: "application/pdf", content: pdf },
      ],
    });

    const stored = await onlyMessageWithProviderId(api, messageId);
    const messages = await conversationMessages(live, stored.conversation_id);
    expect(messages).toHaveLength(2);
    const [image, document] = messages;
    expect(image).toMatchObject({
      id: stored.id,
      direction: "inbound",
      type: "image",
      text: "Here is a photo of the damage and my receipt.",
      attachment: { filename: "damage.png", content_type: "image/png", size: png.length },
    });
    expect(document).toMatchObject({
      direction: "inbound",
      type: "document",
      attachment: { filename: "receipt.pdf", content_type: "application/pdf", size: pdf.length },
    });
    expect(document.text ?? null).toBeNull();

    for (const [message, bytes] of [
      [image, png],
      [document, pdf],
    ] as const) {
      const content = await download(org.live, message.attachment.url);
      expect(content.status).toBe(200);
      expect(content.headers.get("content-type")).toContain(message.attachment.content_type);
      expect(content.bytes.equals(bytes)).toBe(true);
      expect(await eventsOfMessage("message.received", message.id)).toHaveLength(1);
    }

    // A reply answers the customer's mail: the further attachments' messages are not mail of their own.
    const reply = await sendMessage(live, {
      conversation_id: stored.conversation_id,
      type: "text",
      text: "Refund sent",
    });
    const mail = await mailTo(relay.sink, address);
    expect(mail.parsed.inReplyTo).toBe(messageId);
    expect(mail.parsed.references).toEqual([messageId]);
    expect(mail.parsed.subject).toBe("Re: Broken on arrival");
    await waitForStatus(api, live, reply.id, "sent");
  });
});

describe("inbound attachments without a body", () => {
  it("gives a media message without caption, as the further attachments are", async () => {
    const pdf = makePdf("Scan");
    const address = customerAddress("leo");
    const messageId = newMessageId();
    await customerWrites(address, {
      subject: "Scans",
      messageId,
      text: "",
      attachments: [
        { filename: "scan-1.pdf", contentType: "application/pdf", content: pdf },
        { filename: "scan-2.pdf", contentType: "application/pdf", content: pdf },
      ],
    });
    const stored = await onlyMessageWithProviderId(api, messageId);
    const messages = await conversationMessages(live, stored.conversation_id);
    expect(messages.map((message) => [message.type, message.text, message.attachment.filename])).toEqual([
      ["document", null, "scan-1.pdf"],
      ["document", null, "scan-2.pdf"],
    ]);
  });
});

describe("inbound mail above what the SMTP server keeps in memory (1 MiB)", () => {
  it("stores its attachment byte for byte, read back from the temporary file the message waited in", async () => {
    const archive = randomBytes(3 * 1024 * 1024);
    const address = customerAddress("mia");
    const messageId = newMessageId();
    await customerWrites(address, {
      subject: "The logs",
      messageId,
      text: "All of last week's logs.",
      attachments: [{ filename: "logs.zip", contentType: "application/zip", content: archive }],
    });
    const stored = await onlyMessageWithProviderId(api, messageId);
    const [message] = await conversationMessages(live, stored.conversation_id);
    expect(message).toMatchObject({
      type: "document",
      text: "All of last week's logs.",
      attachment: { filename: "logs.zip", content_type: "application/zip", size: archive.length },
    });
    const content = await download(org.live, message.attachment.url);
    expect(content.bytes.equals(archive)).toBe(true);
  });
});

describe("inbound attachments, stored in part", () => {
  it("stores the attachments still missing when the sending server retries after a 451", async () => {
    const png = await makeImage("png", { width: 6, height: 6, exif: null });
    const pdf = makePdf("Warranty");
    const address = customerAddress("judy");
    const messageId = newMessageId();
    const raw = rawEmail({
      from: address,
      to: SUPPORT,
      subject: "Warranty claim",
      messageId,
      text: "Photo and warranty attached.",
      attachments: [
        { filename: "photo.png", contentType: "image/png", content: png },
        { filename: "warranty.pdf", contentType: "application/pdf", content: pdf },
      ],
    });
    // The database refuses the second attachment's message once: the body's message is committed, the rest is not.
    await api.client.sql.unsafe(`
      create function refuse_second_part() returns trigger language plpgsql as $$
      begin
        if new.provider_message_id like '%#2' then raise exception 'simulated storage failure'; end if;
        return new;
      end $$;
      create trigger refuse_second_part before insert on messages
        for each row execute function refuse_second_part();`);
    let refused: (Error & { responseCode?: number }) | undefined;
    try {
      refused = await deliverOverSmtp(worker, { from: address, to: SUPPORT }, raw).then(
        () => undefined,
        (error: Error & { responseCode?: number }) => error,
      );
    } finally {
      await api.client.sql.unsafe("drop trigger refuse_second_part on messages; drop function refuse_second_part();");
    }
    expect(refused?.responseCode, "the server asks to try again later").toBe(451);
    const first = await onlyMessageWithProviderId(api, messageId);
    expect(await conversationMessages(live, first.conversation_id)).toHaveLength(1);

    // The sending server keeps the mail and delivers it again: nothing is lost, nothing doubled.
    await deliverOverSmtp(worker, { from: address, to: SUPPORT }, raw);
    const messages = await conversationMessages(live, first.conversation_id);
    expect(messages.map((message) => [message.type, message.attachment?.filename])).toEqual([
      ["image", "photo.png"],
      ["document", "warranty.pdf"],
    ]);
    expect(messages[0].id).toBe(first.id);
  });
});

describe("outbound email", () => {
  /** A customer's first mail, for a conversation to reply in. */
  async function conversationWith(name: string) {
    const address = customerAddress(name);
    const messageId = newMessageId();
    await customerWrites(address, { subject: `Hello from ${name}`, messageId, text: "Hi there" });
    const stored = await onlyMessageWithProviderId(api, messageId);
    return { address, conversationId: stored.conversation_id, customerMessageId: messageId };
  }

  it("sends an uploaded image as a MIME attachment with the stored bytes", async () => {
    const { address, conversationId } = await conversationWith("erin");
    const png = await makeImage("png", { width: 16, height: 16, exif: null });
    const uploaded = await upload(api, org.live, { bytes: png, type: "image/png", filename: "label.png" });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(201);
    const stored = await download(org.live, uploaded.body.url);
    expect(stored.status).toBe(200);

    const message = await sendMessage(live, {
      conversation_id: conversationId,
      type: "image",
      text: "Your return label",
      attachment_id: uploaded.body.id,
    });
    const mail = await mailTo(relay.sink, address);
    expect(mail.parsed.text).toBe("Your return label");
    expect(mail.parsed.attachments).toHaveLength(1);
    const [part] = mail.parsed.attachments;
    expect(part).toMatchObject({ filename: "label.png", contentType: "image/png" });
    expect(part?.content.equals(stored.bytes)).toBe(true);
    await waitForStatus(api, live, message.id, "sent");
  });

  it("fails a message the relay refuses for good, with its code and words", async () => {
    const { address, conversationId } = await conversationWith("frank");
    relay.sink.rejectNext(550, "5.1.1 mailbox unavailable");
    const message = await sendMessage(live, { conversation_id: conversationId, type: "text", text: "Hello?" });

    const failed = await waitForStatus(api, live, message.id, "failed");
    expect(failed.error.code).toBe("550");
    expect(failed.error.message).toContain("5.1.1 mailbox unavailable");
    await waitUntilSettled(api, message.id);
    expect(await eventTypes(api, message.id)).toEqual(["message.failed"]);
    expect(relay.sink.messages.filter((mail) => mail.envelope.to.includes(address))).toEqual([]);
  });

  it("retries a message the relay defers (4xx) and sends it on a later attempt", async () => {
    const { address, conversationId, customerMessageId } = await conversationWith("grace");
    relay.sink.rejectNext(451, "4.3.0 try again later");
    const message = await sendMessage(live, { conversation_id: conversationId, type: "text", text: "Second try" });

    // The first attempt fails: the job stays, with the relay's words as its error.
    const [deferred] = await eventually(
      () => jobsFor(api, message.id, "deliver_message"),
      (jobs) => jobs.some((job) => job.attempts >= 1 && job.last_error !== null),
    );
    expect(deferred?.last_error).toContain("try again later");
    expect(await statusOf(api, message.id)).toBe("queued");

    // Meanwhile the business writes again, and that message goes out first.
    const later = await sendMessage(live, { conversation_id: conversationId, type: "text", text: "Written later" });
    const laterMail = await mailTo(relay.sink, address);
    expect(laterMail.parsed.text).toBe("Written later");
    await waitForStatus(api, live, later.id, "sent");

    await waitForStatus(api, live, message.id, "sent", 20_000);
    const mail = await mailTo(relay.sink, address, 2);
    expect(mail.parsed.text).toBe("Second try");
    // Written before the other, it answers the customer's mail, not the message written after it.
    expect(mail.parsed.inReplyTo).toBe(customerMessageId);
    expect(mail.parsed.references).toEqual([customerMessageId]);
    await waitUntilSettled(api, message.id);
    expect(await eventTypes(api, message.id)).toEqual(["message.sent"]);
    expect(relay.sink.messages.filter((entry) => entry.envelope.to.includes(address))).toHaveLength(2);
  });

  it("writes first in a conversation the business started, and threads the customer's answer into it", async () => {
    const address = customerAddress("kim");
    const typed = address.replace("kim", "Kim");
    const contact = await live.post("/contacts", { body: { name: "Kim", email: typed } });
    expect(contact.status, JSON.stringify(contact.body)).toBe(201);
    const started = await live.post("/conversations", {
      body: { contact_id: contact.body.id, channel_id: channelId, metadata: { subject: "Your order 1234" } },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(201);

    const message = await sendMessage(live, {
      conversation_id: started.body.id,
      type: "text",
      text: "Your order 1234 is ready for pickup.",
    });
    const mail = await mailTo(relay.sink, address);
    expect(mail.parsed.subject).toBe("Your order 1234");
    expect(mail.parsed.inReplyTo).toBeNull();
    expect(mail.parsed.references).toEqual([]);
    expect(headerOf(mail.raw, "In-Reply-To")).toBeUndefined();
    await waitForStatus(api, live, message.id, "sent");

    const answerId = newMessageId();
    await customerWrites(
      address,
      {
        subject: "Re: Your order 1234",
        messageId: answerId,
        inReplyTo: mail.parsed.messageId as string,
        references: [mail.parsed.messageId as string],
        text: "I will come tomorrow.",
      },
      "Kim",
    );
    const answer = await onlyMessageWithProviderId(api, answerId);
    expect(answer.conversation_id).toBe(started.body.id);
    const [contacts] = await api.client.sql<{ count: number }[]>`
      select count(*)::int as count from contacts where lower(email) = ${address}`;
    expect(contacts?.count).toBe(1);
  });

  it("fails a message with channel_misconfigured, giving the relay's 535, when the relay refuses the login", async () => {
    const refusing = await startSmtpSink({
      refuseLogins: { code: 535, text: "5.7.8 Authentication credentials invalid" },
    });
    try {
      const billing = await connectEmailChannel(api, org.id, "billing@acme.test", refusing.url);
      const contact = await live.post("/contacts", { body: { name: "Lea", email: customerAddress("lea") } });
      expect(contact.status, JSON.stringify(contact.body)).toBe(201);
      const started = await live.post("/conversations", {
        body: { contact_id: contact.body.id, channel_id: billing.id, metadata: { subject: "Invoice 77" } },
      });
      expect(started.status, JSON.stringify(started.body)).toBe(201);

      const message = await sendMessage(live, { conversation_id: started.body.id, type: "text", text: "Your invoice" });
      const failed = await waitForStatus(api, live, message.id, "failed");
      expect(failed.error.code).toBe("channel_misconfigured");
      expect(failed.error.message).toContain("535 5.7.8 Authentication credentials invalid");
      await waitUntilSettled(api, message.id);
      expect(await eventTypes(api, message.id)).toEqual(["message.failed"]);
      expect(refusing.messages).toEqual([]);
    } finally {
      await refusing.close();
    }
  });
});

describe("the inbound SMTP server", () => {
  it("refuses recipients that are no channel's address, and stores nothing", async () => {
    const address = customerAddress("mallory");
    const messageId = newMessageId();
    const raw = rawEmail({ from: address, to: "sales@acme.test", subject: "Hi", messageId, text: "Anyone?" });
    const refused = await deliverOverSmtp(worker, { from: address, to: "sales@acme.test" }, raw).then(
      () => undefined,
      (error: Error & { responseCode?: number }) => error,
    );
    expect(refused, "the delivery is refused").toBeInstanceOf(Error);
    expect(refused?.responseCode).toBe(550);
    expect(await messagesWithProviderId(api, messageId)).toEqual([]);
    const [contacts] = await api.client.sql<{ count: number }[]>`
      select count(*)::int as count from contacts where email = ${address}`;
    expect(contacts?.count).toBe(0);
  });

  it("starts each transaction with no recipients: one abandoned with RSET leaves none behind", async () => {
    const other = await setupOrganization(api);
    await connectEmailChannel(api, other.org.id, "help@other.test", relay.sink.url);
    const address = customerAddress("nina");
    const messageId = newMessageId();
    const raw = rawEmail({ from: address, to: "help@other.test", subject: "Other", messageId, text: "For Other only" });
    const port = worker.worker.smtpPort as number;
    const codes = await smtpSession(port, [
      "EHLO client.example.com",
      `MAIL FROM:<${address}>`,
      `RCPT TO:<${SUPPORT}>`,
      // The client abandons that transaction and starts one for the other organization's address.
      "RSET",
      `MAIL FROM:<${address}>`,
      "RCPT TO:<help@other.test>",
      "DATA",
      `${raw}.`,
      "QUIT",
    ]);
    expect(codes).toEqual([220, 250, 250, 250, 250, 250, 250, 354, 250, 221]);
    const stored = await api.client.sql<{ organization_id: string }[]>`
      select organization_id from messages where provider_message_id = ${messageId}`;
    expect(stored).toEqual([{ organization_id: other.org.id }]);
  });

  it("routes an address to the one organization that connected it, whatever its case: no other can claim it", async () => {
    const other = await setupOrganization(api);
    // Issue 21 item 11: the same address, in another case, cannot be connected a second time.
    await expect(connectEmailChannel(api, other.org.id, SUPPORT.toUpperCase(), relay.sink.url)).rejects.toThrow(
      /email address 'SUPPORT@ACME\.TEST' is already connected as channel chn_\w+ of organization org_\w+/,
    );
    const [claimed] = await api.client.sql<{ count: number }[]>`
      select count(*)::int as count from channels where lower(settings->>'address') = ${SUPPORT}`;
    expect(claimed?.count).toBe(1);
    const address = customerAddress("ivan");
    const messageId = newMessageId();
    const raw = rawEmail({ from: address, to: SUPPORT, subject: "Case", messageId, text: "Upper case" });
    await deliverOverSmtp(worker, { from: address, to: "Support@ACME.test" }, raw);
    const stored = await api.client.sql<{ organization_id: string; channel_id: string }[]>`
      select messages.organization_id, conversations.channel_id from messages
      join conversations on conversations.id = messages.conversation_id
      where messages.provider_message_id = ${messageId}`;
    expect(stored).toEqual([{ organization_id: org.id, channel_id: channelId }]);
  });

  it("refuses a message without From with 550, and stores nothing", async () => {
    const address = customerAddress("nobody");
    const messageId = newMessageId();
    const raw = rawEmail({ from: null, to: SUPPORT, subject: "Anonymous", messageId, text: "Guess who" });
    const refused = await deliverOverSmtp(worker, { from: address, to: SUPPORT }, raw).then(
      () => undefined,
      (error: Error & { responseCode?: number }) => error,
    );
    expect(refused?.responseCode, "the message is refused").toBe(550);
    expect(await messagesWithProviderId(api, messageId)).toEqual([]);
  });

  it("stores a Message-ID delivered twice once", async () => {
    const address = customerAddress("heidi");
    const messageId = newMessageId();
    const raw = await customerWrites(address, { subject: "Twice", messageId, text: "Sent twice by my server" });
    const first = await onlyMessageWithProviderId(api, messageId);
    // A sending server that did not see our 250 delivers again: accepted, and nothing new stored.
    await deliverOverSmtp(worker, { from: address, to: SUPPORT }, raw);
    expect(await onlyMessageWithProviderId(api, messageId)).toEqual(first);
    expect(await conversationMessages(live, first.conversation_id)).toHaveLength(1);
    expect(await eventsOfMessage("message.received", first.id)).toHaveLength(1);

    // Whichever way it comes in: the HTTP route answers with the message stored over SMTP.
    const overHttp = await postInboundEmail(live, channelId, raw);
    expect(overHttp.status, JSON.stringify(overHttp.body)).toBe(200);
    expect(overHttp.body.id).toBe(first.id);
    expect(await messagesWithProviderId(api, messageId)).toHaveLength(1);
  });
});

describe("POST /channels/{channel_id}/inbound-email", () => {
  function sample(overrides: Partial<Parameters<typeof rawEmail>[0]> = {}) {
    return rawEmail({
      from: customerAddress("ivan"),
      to: SUPPORT,
      subject: "Over HTTP",
      messageId: newMessageId(),
      text: "Routed by a pipe",
      ...overrides,
    });
  }

  it.each(["application/json", "text/plain"])(
    "refuses Content-Type %s with 415 unsupported_media_type",
    async (type) => {
      const messageId = newMessageId();
      const raw = sample({ messageId });
      const body = type === "application/json" ? JSON.stringify({ raw }) : raw;
      expectError(await postInboundEmail(live, channelId, body, type), 415, "unsupported_media_type");
      expect(await messagesWithProviderId(api, messageId)).toEqual([]);
    },
  );

  it("refuses a body its Content-Encoding does not match with 400 malformed_request, an unknown one with 415", async () => {
    const messageId = newMessageId();
    const raw = sample({ messageId });
    const post = (encoding: string) =>
      live.post(`/channels/${channelId}/inbound-email`, {
        rawBody: raw,
        headers: { "content-type": "message/rfc822", "content-encoding": encoding },
      });
    expectError(await post("gzip"), 400, "malformed_request");
    expectError(await post("x-unknown"), 415, "unsupported_media_type");
    expect(await messagesWithProviderId(api, messageId)).toEqual([]);
  });

  it("refuses a channel that is not an email channel with 409 invalid_state", async () => {
    const channels = await test.get("/channels", { query: { type: "whatsapp" } });
    expect(channels.status).toBe(200);
    const [whatsapp] = channels.body.data;
    expect(whatsapp).toMatchObject({ type: "whatsapp", sandbox: true });
    const messageId = newMessageId();
    expectError(await postInboundEmail(test, whatsapp.id, sample({ messageId })), 409, "invalid_state");
    expect(await messagesWithProviderId(api, messageId)).toEqual([]);
  });

  it("answers 404 resource_not_found for an unknown channel and for another environment's", async () => {
    const unknown = `${channelId.slice(0, -4)}zzzz`;
    expectError(await postInboundEmail(live, unknown, sample()), 404, "resource_not_found");
    // The live channel is unknown to the test key.
    const messageId = newMessageId();
    expectError(await postInboundEmail(test, channelId, sample({ messageId })), 404, "resource_not_found");
    expect(await messagesWithProviderId(api, messageId)).toEqual([]);
  });

  it("refuses a message without From, and an empty body, with 422 validation_error", async () => {
    const messageId = newMessageId();
    expectError(await postInboundEmail(live, channelId, sample({ from: null, messageId })), 422, "validation_error");
    expect(await messagesWithProviderId(api, messageId)).toEqual([]);
    expectError(await postInboundEmail(live, channelId, ""), 422, "validation_error");
  });

  it("refuses a message above 25 MB with 413 payload_too_large", async () => {
    const messageId = newMessageId();
    const raw = sample({ messageId, text: "x".repeat(25 * 1024 * 1024) });
    expectError(await postInboundEmail(live, channelId, raw), 413, "payload_too_large");
    expect(await messagesWithProviderId(api, messageId)).toEqual([]);
  });

  it("takes a test key with the sandbox email channel, and the same message twice once (201, then 200)", async () => {
    const channels = await test.get("/channels", { query: { type: "email" } });
    expect(channels.status).toBe(200);
    expect(channels.body.data).toHaveLength(1);
    const [sandbox] = channels.body.data;
    expect(sandbox).toMatchObject({ type: "email", environment: "test", sandbox: true });

    const messageId = newMessageId();
    const raw = sample({ messageId, subject: "Sandbox mail" });
    const first = await postInboundEmail(test, sandbox.id, raw);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body).toMatchObject({ direction: "inbound", type: "text", text: "Routed by a pipe", status: null });
    expect(first.body.metadata.email).toMatchObject({ subject: "Sandbox mail", message_id: messageId });
    const conversation = await getBody(test, `/conversations/${first.body.conversation_id}`);
    expect(conversation).toMatchObject({ channel_id: sandbox.id, channel_type: "email" });

    const again = await postInboundEmail(test, sandbox.id, raw);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(await messagesWithProviderId(api, messageId)).toHaveLength(1);
    expect(await eventsOfMessage("message.received", first.body.id, "test")).toHaveLength(1);
  });
});
