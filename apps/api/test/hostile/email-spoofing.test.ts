import { generateKeyPairSync } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { connectChannel } from "../../src/channels/service.js";
import { waitForStatus } from "../delivery-helpers.js";
import {
  connectEmailChannel,
  conversationMessages,
  customerAddress,
  deliverOverSmtp,
  dkimRecord,
  dkimSigned,
  fakeDns,
  mailTo,
  messagesWithProviderId,
  newMessageId,
  onlyMessageWithProviderId,
  type RawMail,
  rawEmail,
  useSmtpSink,
} from "../email-helpers.js";
import { type Client, setupOrganization, type TestOrganization, useTestApi, useTestWorker } from "../harness.js";

/**
 * Inbound email whose `From:` is not the sender's: an attacker's envelope with a customer's
 * header must not land in the customer's conversation. SPF, DKIM and DMARC run against a
 * fake DNS (no network); a relay's Authentication-Results is trusted only from the
 * authserv-id the operator names.
 */
const SUPPORT = "spoof-support@acme.test";
const JANE = "jane@customer.example";

// customer.example lets 127.0.0.1 send and publishes DMARC; signed.example signs with DKIM.
const signedKey = generateKeyPairSync("rsa", { modulusLength: 2048 });
const dns = fakeDns({
  "TXT customer.example": [["v=spf1 ip4:127.0.0.1 -all"]],
  "TXT _dmarc.customer.example": [["v=DMARC1; p=reject"]],
  "TXT mail._domainkey.signed.example": dkimRecord(
    signedKey.publicKey.export({ type: "spki", format: "der" }).toString("base64"),
  ),
  "TXT _dmarc.signed.example": [["v=DMARC1; p=quarantine"]],
});

// Parley's own mail goes out through it (registered before the worker, which stops first).
const relay = useSmtpSink();
const api = useTestApi({}, { ownDatabase: true });
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

type ThreadHeaders = Partial<Pick<RawMail, "inReplyTo" | "references" | "attachments">>;

/** A mail with header `From: from`, delivered over SMTP with envelope sender `envelopeFrom`; its stored message. */
async function deliver(envelopeFrom: string, from: string, extra: ThreadHeaders = {}) {
  const messageId = newMessageId("customer.example");
  const raw = rawEmail({ from, to: SUPPORT, subject: "My order", messageId, text: "Hello", ...extra });
  await deliverOverSmtp(worker, { from: envelopeFrom, to: SUPPORT }, raw);
  const stored = await onlyMessageWithProviderId(api, messageId);
  const message = await live.get(`/messages/${stored.id}`);
  expect(message.status, JSON.stringify(message.body)).toBe(200);
  return { messageId, message: message.body };
}

async function conversation(id: string) {
  const response = await live.get(`/conversations/${id}`);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body;
}

function postInboundEmail(raw: string) {
  return live.post(`/channels/${channelId}/inbound-email`, {
    rawBody: raw,
    headers: { "content-type": "message/rfc822" },
  });
}

describe("inbound email over SMTP with a forged From", () => {
  it("keeps a forged From out of the customer's conversation and contact, flagged unverified", async () => {
    // Jane writes from her own domain's server: SPF passes for customer.example, aligned.
    const jane = await deliver(JANE, `Jane <${JANE}>`);
    expect(jane.message.authentication).toEqual({
      verified: true,
      dmarc: "pass",
      spf: "pass",
      dkim: "none",
      evaluated_by: "parley",
    });
    const janes = await conversation(jane.message.conversation_id);
    expect(janes.unverified).toBe(false);

    // The attacker's envelope, Jane's header, even answering Jane's own mail.
    const forged = await deliver("attacker@evil.example", `Jane <${JANE}>`, { inReplyTo: jane.messageId });
    expect(forged.message.authentication).toMatchObject({ verified: false, dmarc: "fail", evaluated_by: "parley" });
    expect(forged.message.conversation_id).not.toBe(jane.message.conversation_id);
    const flagged = await conversation(forged.message.conversation_id);
    expect(flagged.unverified).toBe(true);
    expect(flagged.contact_id).not.toBe(janes.contact_id);

    // More forged mail joins the flagged conversation, never Jane's.
    const again = await deliver("attacker@evil.example", JANE);
    expect(again.message.conversation_id).toBe(forged.message.conversation_id);

    // Jane writing again still reaches her own conversation, and her contact stays the one.
    const janeAgain = await deliver(JANE, `Jane <${JANE}>`);
    expect(janeAgain.message.conversation_id).toBe(jane.message.conversation_id);
    const [contacts] = await api.client.sql<{ count: number }[]>`
      select count(*)::int as count from conversations where contact_id = ${janes.contact_id}`;
    expect(contacts?.count).toBe(1);
  });

  it("treats a domain without a DMARC policy as unverified", async () => {
    const first = await deliver("bob@nodmarc.example", "bob@nodmarc.example");
    expect(first.message.authentication).toMatchObject({ verified: false, dmarc: "none" });
    expect((await conversation(first.message.conversation_id)).unverified).toBe(true);
  });
});

/**
 * A customer at a domain without DMARC (`nodmarc.example` publishes nothing): every mail
 * of theirs is unverified, however genuine.
 */
function unverifiedAddress(name: string): string {
  return customerAddress(name).replace("@example.com", "@nodmarc.example");
}

/**
 * The business writes first to `address` on `channel`, with `client`'s key: the new
 * conversation, and the Message-ID Parley gave the mail as the customer received it.
 */
async function businessWritesFirst(client: Client, channel: string, address: string) {
  const contact = await client.post("/contacts", { body: { name: "Customer", email: address } });
  expect(contact.status, JSON.stringify(contact.body)).toBe(201);
  const started = await client.post("/conversations", {
    body: { contact_id: contact.body.id, channel_id: channel, metadata: { subject: "Your order 1234" } },
  });
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  const sent = await client.post("/messages", {
    body: { conversation_id: started.body.id, type: "text", text: "Your order 1234 is ready." },
  });
  expect(sent.status, JSON.stringify(sent.body)).toBe(201);
  const mail = await mailTo(relay.sink, address);
  // Stored as the message's provider id once sent: only then can a reply name it.
  await waitForStatus(api, client, sent.body.id, "sent");
  const messageId = mail.parsed.messageId;
  if (!messageId) throw new Error("Parley's mail has no Message-ID");
  return { conversationId: started.body.id as string, messageId };
}

describe("unverified mail that names one of Parley's Message-IDs", () => {
  it("joins the conversation of Parley's mail it answers, by In-Reply-To or by References alone, keeping its verdict", async () => {
    const dan = unverifiedAddress("dan");
    // Dan's first mail is unverified: a flagged conversation of its own.
    const first = await deliver(dan, `Dan <${dan}>`);
    const flagged = first.message.conversation_id;
    expect((await conversation(flagged)).unverified).toBe(true);

    // The business then writes to Dan in another conversation.
    const ours = await businessWritesFirst(live, channelId, dan);
    expect(ours.conversationId).not.toBe(flagged);
    expect((await conversation(ours.conversationId)).unverified).toBe(false);

    // Dan answers it: still unverified, but naming Parley's Message-ID, known only to Dan.
    const reply = await deliver(dan, `Dan <${dan}>`, { inReplyTo: ours.messageId, references: [ours.messageId] });
    expect(reply.message.conversation_id).toBe(ours.conversationId);
    expect(reply.message.authentication).toMatchObject({ verified: false, dmarc: "none", evaluated_by: "parley" });

    // A client that dropped In-Reply-To: References alone, ours among others; both
    // attachments' messages follow the body's.
    const attachments = ["a.txt", "b.txt"].map((filename) => ({
      filename,
      contentType: "text/plain",
      content: Buffer.from(`file ${filename}`),
    }));
    const byReferences = await deliver(dan, dan, {
      references: [newMessageId("elsewhere.example"), ours.messageId, reply.messageId],
      attachments,
    });
    expect(byReferences.message.conversation_id).toBe(ours.conversationId);
    expect(byReferences.message.authentication).toMatchObject({ verified: false });
    const [second] = await messagesWithProviderId(api, `${byReferences.messageId}#2`);
    expect(second?.conversation_id).toBe(ours.conversationId);

    // The business's conversation stays verified; the flagged one got none of it.
    expect((await conversation(ours.conversationId)).unverified).toBe(false);
    expect((await conversationMessages(live, flagged)).map((message) => message.id)).toEqual([first.message.id]);

    // Mail naming nothing of ours follows the unverified rule again.
    const unthreaded = await deliver(dan, dan);
    expect(unthreaded.message.conversation_id).toBe(flagged);
  });

  it("keeps a spoof that names none of Parley's Message-IDs out of a verified conversation", async () => {
    const ann = customerAddress("ann");
    const genuine = await deliver(ann, `Ann <${ann}>`);
    expect(genuine.message.authentication).toMatchObject({ verified: true });
    const verified = genuine.message.conversation_id;

    // Ann's own Message-ID, and one made up in the shape of Parley's: neither is a mail Parley sent.
    const spoof = await deliver("attacker@evil.example", `Ann <${ann}>`, {
      inReplyTo: genuine.messageId,
      references: [genuine.messageId, `<msg_01jx0000000000000000000000@${SUPPORT.split("@")[1]}>`],
    });
    expect(spoof.message.authentication).toMatchObject({ verified: false, dmarc: "fail" });
    expect(spoof.message.conversation_id).not.toBe(verified);
    expect((await conversation(spoof.message.conversation_id)).unverified).toBe(true);
  });

  it("does not thread by a Message-ID of another organization's, environment's or channel's mail", async () => {
    const other = await setupOrganization(api);
    const otherOrganization = (await connectEmailChannel(api, other.org.id, "spoof-other@acme.test", relay.sink.url))
      .id;
    const testEnvironment = await connectChannel(api.context.db, api.context.secretBox, {
      organizationId: org.id,
      environment: "test",
      type: "email",
      name: "Test mailbox",
      provider: "smtp",
      settings: { address: "spoof-test@acme.test", smtp_url: relay.sink.url },
    });
    const otherChannel = (await connectEmailChannel(api, org.id, "spoof-sales@acme.test", relay.sink.url)).id;
    const sources = [
      { name: "another organization", client: other.live, channel: otherOrganization },
      { name: "another environment", client: test, channel: testEnvironment.id },
      { name: "another channel", client: live, channel: otherChannel },
    ];
    for (const source of sources) {
      const address = unverifiedAddress(source.name.replaceAll(" ", "-"));
      const theirs = await businessWritesFirst(source.client, source.channel, address);
      // The customer writes to this channel's address, naming that mail.
      const reply = await deliver(address, address, { inReplyTo: theirs.messageId, references: [theirs.messageId] });
      expect(reply.message.conversation_id, source.name).not.toBe(theirs.conversationId);
      const landed = await conversation(reply.message.conversation_id);
      expect(landed, source.name).toMatchObject({ channel_id: channelId, unverified: true });
    }
  });
});

describe("the cost of checking a mail", () => {
  it("does not look up the keys of a mail carrying more DKIM signatures than a real one does", async () => {
    let lookups = 0;
    const counting = async (name: string, type: string) => {
      lookups += 1;
      return dns(name, type);
    };
    const previous = api.context.emailAuthentication;
    api.context.emailAuthentication = { resolver: counting };
    try {
      const signatures = Array.from(
        { length: 200 },
        (_, index) => `DKIM-Signature: v=1; a=rsa-sha256; d=d${index}.example; s=s; h=from; bh=AAAA; b=AAAA`,
      ).join("\r\n");
      const raw = `${signatures}\r\n${rawEmail({ from: JANE, to: SUPPORT, subject: "Many", messageId: newMessageId(), text: "x" })}`;
      const response = await postInboundEmail(raw);
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      expect(response.body.authentication).toMatchObject({ verified: false, dkim: "policy" });
      expect(lookups).toBe(0);
    } finally {
      api.context.emailAuthentication = previous;
    }
  });
});

describe("inbound email over HTTP", () => {
  const signer = {
    domain: "signed.example",
    selector: "mail",
    privateKey: signedKey.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  };
  const mail = (from: string, messageId = newMessageId("signed.example")) =>
    rawEmail({ from, to: SUPPORT, subject: "Signed", messageId, text: "Signed hello" });

  it("verifies a DKIM signature aligned with From, and not one from another domain", async () => {
    const signed = await postInboundEmail(await dkimSigned(mail("ann@signed.example"), signer));
    expect(signed.status, JSON.stringify(signed.body)).toBe(201);
    expect(signed.body.authentication).toEqual({
      verified: true,
      dmarc: "pass",
      spf: "none",
      dkim: "pass",
      evaluated_by: "parley",
    });

    // A valid signature of signed.example on a mail whose From claims customer.example.
    const misaligned = await postInboundEmail(await dkimSigned(mail(JANE), signer));
    expect(misaligned.status, JSON.stringify(misaligned.body)).toBe(201);
    expect(misaligned.body.authentication).toMatchObject({ verified: false, dmarc: "fail", dkim: "pass" });
    expect((await conversation(misaligned.body.conversation_id)).unverified).toBe(true);
  });

  it("trusts the Authentication-Results of the relay the operator names, and only that one", async () => {
    const previous = api.context.emailAuthentication;
    api.context.emailAuthentication = { trustedAuthservId: "mx.relay.example" };
    try {
      const relayed = `Authentication-Results: mx.relay.example; spf=pass smtp.mailfrom=customer.example;\r\n dkim=none; dmarc=pass (p=reject) header.from=customer.example\r\n${mail(JANE)}`;
      const trusted = await postInboundEmail(relayed);
      expect(trusted.status, JSON.stringify(trusted.body)).toBe(201);
      expect(trusted.body.authentication).toEqual({
        verified: true,
        dmarc: "pass",
        spf: "pass",
        dkim: "none",
        evaluated_by: "mx.relay.example",
      });

      // The same claim from any other authserv-id (the sender's own header) counts for nothing.
      const forged = `Authentication-Results: mx.evil.example; dmarc=pass header.from=customer.example\r\n${mail(JANE)}`;
      const untrusted = await postInboundEmail(forged);
      expect(untrusted.status, JSON.stringify(untrusted.body)).toBe(201);
      expect(untrusted.body.authentication).toMatchObject({ verified: false, dmarc: "none" });
      expect(untrusted.body.conversation_id).not.toBe(trusted.body.conversation_id);
    } finally {
      api.context.emailAuthentication = previous;
    }
  });
});
