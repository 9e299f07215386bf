import { randomBytes } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type OutboundMessage, TemporaryChannelError } from "../src/adapter.js";
import { parseInboundEmail, threadHints } from "../src/email/inbound.js";
import { closeSmtpTransports, smtpEmailAdapter } from "../src/email/smtp-adapter.js";
import { type SmtpSink, startSmtpSink } from "../testing/smtp-sink.js";

let sink: SmtpSink;

beforeAll(async () => {
  sink = await startSmtpSink();
});
afterEach(() => {
  // A fresh pool per test: connection counts and scripted refusals stay per test.
  closeSmtpTransports();
  sink.messages.length = 0;
  sink.logins.length = 0;
});
afterAll(async () => {
  closeSmtpTransports();
  await sink.close();
});

function outbound(overrides: Partial<OutboundMessage> = {}, settings: Record<string, unknown> = {}): OutboundMessage {
  return {
    id: "msg_01JTESTEMAIL",
    type: "text",
    text: "Your order has shipped.",
    attachment: null,
    contact: { name: "Jane", email: "jane@example.com", phone: null, externalId: null },
    recipient: "jane@example.com",
    channel: {
      id: "ch_email",
      type: "email",
      settings: { address: "support@acme.test", from_name: "Acme Support", smtp_url: sink.url, ...settings },
    },
    conversation: { id: "conv_1", subject: "Order 1234", threadIds: [] },
    lastInboundAt: null,
    attempt: 1,
    ...overrides,
  };
}

async function sendAndReceive(message: OutboundMessage) {
  const result = await smtpEmailAdapter().send(message);
  const [received] = await sink.waitForMessages(1);
  if (!received) throw new Error("no message received");
  return { result, received, parsed: await parseInboundEmail(received.raw) };
}

describe("smtpEmailAdapter: sending", () => {
  it("sends a text message with the channel's From, the Message-ID it returns, and the subject", async () => {
    const { result, received, parsed } = await sendAndReceive(outbound());

    expect(result).toEqual({ outcome: "sent", providerMessageId: "<msg_01jtestemail@acme.test>", receipts: [] });
    expect(received.envelope).toEqual({ from: "support@acme.test", to: ["jane@example.com"] });
    expect(parsed.messageId).toBe("<msg_01jtestemail@acme.test>");
    expect(parsed.from).toEqual({ address: "support@acme.test", name: "Acme Support" });
    expect(parsed.to).toEqual(["jane@example.com"]);
    expect(parsed.subject).toBe("Order 1234");
    expect(parsed.text).toBe("Your order has shipped.");
    expect(parsed.inReplyTo).toBeNull();
    expect(parsed.references).toEqual([]);
    // The credentials of smtp_url were used to log in.
    expect(sink.logins).toEqual(["user"]);
  });

  it("threads a reply: In-Reply-To the newest id, References the thread, one Re: on the subject", async () => {
    const threadIds = ["<first@mail.example.com>", " bare-id@mail.example.com ", "<msg_prev@acme.test>"];
    const { parsed } = await sendAndReceive(outbound({ conversation: { id: "c", subject: "Order 1234", threadIds } }));

    expect(parsed.inReplyTo).toBe("<msg_prev@acme.test>");
    expect(parsed.references).toEqual([
      "<first@mail.example.com>",
      "<bare-id@mail.example.com>",
      "<msg_prev@acme.test>",
    ]);
    expect(parsed.subject).toBe("Re: Order 1234");
    expect(threadHints(parsed)[0]).toBe("<msg_prev@acme.test>");
  });

  it("does not double Re: and keeps only the last 20 References", async () => {
    const threadIds = Array.from({ length: 25 }, (_, index) => `<id${index}@mail.example.com>`);
    const { parsed } = await sendAndReceive(outbound({ conversation: { id: "c", subject: "RE: Refund", threadIds } }));

    expect(parsed.subject).toBe("RE: Refund");
    expect(parsed.references).toEqual(threadIds.slice(5));
    expect(parsed.inReplyTo).toBe("<id24@mail.example.com>");
  });

  it("falls back to a subject naming the sender when the conversation has none", async () => {
    const { parsed } = await sendAndReceive(
      outbound({ conversation: { id: "c", subject: null, threadIds: ["<x@y.z>"] } }, { from_name: undefined }),
    );

    expect(parsed.subject).toBe("Message from support@acme.test");
    expect(parsed.from).toEqual({ address: "support@acme.test", name: null });
  });

  it("carries a media message's file as a MIME part, bytes intact, with the caption as body", async () => {
    const bytes = randomBytes(4096);
    const attachment = {
      url: "https://api.test/v1/media/med_1",
      publicUrl: "https://api.test/v1/media/med_1?sig=x",
      contentType: "application/pdf",
      filename: "invoice 1234.pdf",
      size: bytes.length,
      read: async () => bytes,
    };
    const { parsed } = await sendAndReceive(outbound({ type: "document", text: "Your invoice", attachment }));

    expect(parsed.text).toBe("Your invoice");
    expect(parsed.attachments).toHaveLength(1);
    expect(parsed.attachments[0]?.filename).toBe("invoice 1234.pdf");
    expect(parsed.attachments[0]?.contentType).toBe("application/pdf");
    expect(parsed.attachments[0]?.content.equals(bytes)).toBe(true);
  });

  it("sends a media message without a caption", async () => {
    const bytes = randomBytes(512);
    const attachment = {
      url: "u",
      publicUrl: "p",
      contentType: "image/png",
      filename: "photo.png",
      size: bytes.length,
      read: async () => bytes,
    };
    const { result, parsed } = await sendAndReceive(outbound({ type: "image", text: null, attachment }));

    expect(result.outcome).toBe("sent");
    expect(parsed.text).toBeNull();
    expect(parsed.attachments[0]?.content.equals(bytes)).toBe(true);
  });

  it("reuses one pooled connection for consecutive sends to the same relay", async () => {
    const before = sink.connections;
    const adapter = smtpEmailAdapter();
    await adapter.send(outbound({ id: "msg_a" }));
    await smtpEmailAdapter().send(outbound({ id: "msg_b" }));
    await sink.waitForMessages(2);

    expect(sink.connections - before).toBe(1);
    expect(sink.logins).toEqual(["user"]);
  });
});

describe("smtpEmailAdapter: refusals and faults", () => {
  it("fails with the relay's code and words on a 5xx at RCPT TO", async () => {
    sink.rejectNext(550, "No such user here", "rcpt");
    const result = await smtpEmailAdapter().send(outbound());

    expect(result.outcome).toBe("failed");
    if (result.outcome !== "failed") return;
    expect(result.error.code).toBe("550");
    expect(result.error.message).toContain("No such user here");
    expect(sink.messages).toHaveLength(0);
  });

  it("fails with the relay's code on a 5xx after DATA", async () => {
    sink.rejectNext(554, "Message looks like spam");
    const result = await smtpEmailAdapter().send(outbound());

    expect(result).toMatchObject({ outcome: "failed", error: { code: "554" } });
    if (result.outcome === "failed") expect(result.error.message).toContain("Message looks like spam");
  });

  it("throws a temporary fault on a 4xx, and the pooled connection still delivers the next message", async () => {
    sink.rejectNext(451, "Greylisted, try again later");
    const adapter = smtpEmailAdapter();

    await expect(adapter.send(outbound())).rejects.toThrow(TemporaryChannelError);
    await expect(adapter.send(outbound())).resolves.toMatchObject({ outcome: "sent" });
    await sink.waitForMessages(1);
  });

  it("throws a temporary fault on 503, a session fault rather than a verdict on the message", async () => {
    sink.rejectNext(503, "Bad sequence of commands");

    await expect(smtpEmailAdapter().send(outbound())).rejects.toThrow(TemporaryChannelError);
  });

  it("throws a temporary fault on a 4xx at RCPT TO", async () => {
    sink.rejectNext(452, "Mailbox full for now", "rcpt");

    await expect(smtpEmailAdapter().send(outbound())).rejects.toThrow(/Mailbox full for now/);
  });

  it("throws a temporary fault when the relay is unreachable, without the URL's credentials", async () => {
    const port = await closedPort();
    const error = await smtpEmailAdapter()
      .send(outbound({}, { smtp_url: `smtp://user:s3cret@127.0.0.1:${port}` }))
      .catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(TemporaryChannelError);
    expect(String((error as Error).message)).not.toContain("s3cret");
  });

  it("throws a temporary fault when the relay never greets", async () => {
    const silent = await silentServer();
    try {
      const send = smtpEmailAdapter({ timeoutMs: 300 }).send(outbound({}, { smtp_url: silent.url }));
      await expect(send).rejects.toThrow(TemporaryChannelError);
    } finally {
      await silent.close();
    }
  });

  it("fails with channel_misconfigured, with the relay's 535, when the relay refuses the login", async () => {
    const refusing = await startSmtpSink({
      refuseLogins: { code: 535, text: "5.7.8 Authentication credentials invalid" },
    });
    try {
      const result = await smtpEmailAdapter().send(outbound({}, { smtp_url: refusing.url }));

      expect(result).toMatchObject({ outcome: "failed", error: { code: "channel_misconfigured" } });
      if (result.outcome === "failed") {
        expect(result.error.message).toContain("535 5.7.8 Authentication credentials invalid");
        expect(result.error.message).not.toContain("pass");
      }
      expect(refusing.logins).toEqual(["user"]);
      expect(refusing.messages).toHaveLength(0);
    } finally {
      closeSmtpTransports();
      await refusing.close();
    }
  });

  it("throws a temporary fault when the relay refuses the login for now (454)", async () => {
    const refusing = await startSmtpSink({
      refuseLogins: { code: 454, text: "4.7.0 Temporary authentication failure" },
    });
    try {
      await expect(smtpEmailAdapter().send(outbound({}, { smtp_url: refusing.url }))).rejects.toThrow(
        TemporaryChannelError,
      );
    } finally {
      closeSmtpTransports();
      await refusing.close();
    }
  });

  it("fails without sending when the settings are invalid or the recipient is unknown", async () => {
    const adapter = smtpEmailAdapter();

    await expect(adapter.send(outbound({}, { smtp_url: "http://relay.test" }))).resolves.toMatchObject({
      outcome: "failed",
      error: { code: "channel_misconfigured" },
    });
    await expect(adapter.send(outbound({ recipient: null }))).resolves.toMatchObject({
      outcome: "failed",
      error: { code: "recipient_unknown" },
    });
    expect(sink.messages).toHaveLength(0);
  });
});

/** A port that was just free: nothing listens on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** Accepts connections and never says a word: a stalled relay. */
async function silentServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("no port");
  return {
    url: `smtp://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
