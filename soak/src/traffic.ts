import { randomBytes } from "node:crypto";
import { type MetaSimulator, sendRawEmail, sendWebhook, whatsappTextMessage } from "@parley/channels/testing";
import { Parley } from "@parley/sdk";
import type postgres from "postgres";
import sharp from "sharp";
import { sleep } from "./processes.js";
import type { OperationKind, Recorder } from "./recorder.js";

/** The parts of the running cluster the clients talk to. */
export interface Targets {
  apiPorts: number[];
  smtpPorts: number[];
  meta: MetaSimulator;
  testKey: string;
  liveKey: string;
  whatsapp: { phoneNumberId: string; appSecret: string };
  email: { address: string };
  sql: postgres.Sql;
}

/** One send as the client saw it: its key, and every message id an answer of that key named. */
export interface SendRecord {
  key: string;
  route: "sandbox" | "whatsapp" | "email";
  image: boolean;
  at: number;
  /** The ids of every 201 answered for this key (one, unless idempotency broke). */
  answeredIds: Set<string>;
  /** The send was never answered 201 (it ran out of retries). */
  unanswered?: string;
}

export interface InboundRecord {
  id: string;
  via: "meta" | "smtp";
  at: number;
  acknowledged: boolean;
}

/** The share of each kind of request in the traffic (they sum to 1). */
const MIX: Record<OperationKind, number> = {
  send: 0.4,
  page: 0.25,
  contact_create: 0.07,
  contact_update: 0.08,
  inbound_meta: 0.12,
  inbound_smtp: 0.04,
  upload: 0.04,
};

/** Sends: where they go, and how many carry an image. */
const SEND_ROUTES = [
  { route: "sandbox", share: 0.6 },
  { route: "whatsapp", share: 0.25 },
  { route: "email", share: 0.15 },
] as const;
const IMAGE_SHARE = 0.1;

/** Requests in flight at most; past it a tick launches nothing (and says so). */
const MAX_IN_FLIGHT = 600;

/**
 * The soak's clients: steady mixed traffic at `ratePerSecond` requests a second, every API
 * call through `@parley/sdk` as a business's code makes it (a network error, 408, 429 or
 * 5xx is retried with the same `Idempotency-Key`), the two API processes taken in turn as
 * a load balancer would. Meta's webhooks and SMTP deliveries are retried until accepted,
 * as Meta and a mail server do.
 */
export class Traffic {
  readonly sends = new Map<string, SendRecord>();
  readonly inbound: InboundRecord[] = [];
  private readonly test: Parley;
  private readonly live: Parley;
  private inFlight = 0;
  private shed = 0;
  private sequence = 0;
  private next = 0;
  private stopped = false;
  private readonly sandboxConversations: string[] = [];
  private readonly whatsappContacts: { waId: string; conversationId: string }[] = [];
  private readonly emailContacts: { address: string; conversationId: string }[] = [];
  private readonly contacts: string[] = [];
  private readonly attachments: { test: string[]; live: string[] } = { test: [], live: [] };
  private image: Buffer = Buffer.alloc(0);
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly targets: Targets,
    private readonly recorder: Recorder,
  ) {
    const fetchThroughBalancer = this.balancedFetch();
    const client = (apiKey: string) =>
      new Parley({ apiKey, baseUrl: "http://api/v1", fetch: fetchThroughBalancer, maxRetries: 12, timeout: 30_000 });
    this.test = client(targets.testKey);
    this.live = client(targets.liveKey);
  }

  /**
   * The next API process in turn, as a load balancer picks them; the URL's host is replaced.
   * A refused connection (the process is down: nothing was sent) goes to the next process at
   * once, as nginx's `proxy_next_upstream error` does. Failures the client sees are recorded.
   */
  private balancedFetch(): typeof fetch {
    return async (input, init) => {
      const url = new URL(String(input));
      try {
        const response = await this.throughBalancer((port) => {
          url.host = `127.0.0.1:${port}`;
          return fetch(url, init);
        });
        if (response.status >= 500) this.recorder.failedAttempt(`${response.status} ${url.pathname}`);
        return response;
      } catch (error) {
        this.recorder.failedAttempt(`${isRefused(error) ? "refused" : "network"} ${url.pathname}`);
        throw error;
      }
    };
  }

  /** Calls `attempt` with the next API process's port, and with the other's if that one refused the connection. */
  private async throughBalancer<T>(attempt: (port: number) => Promise<T>): Promise<T> {
    const ports = this.targets.apiPorts;
    const first = this.next++;
    for (let tried = 0; ; tried++) {
      try {
        return await attempt(ports[(first + tried) % ports.length] as number);
      } catch (error) {
        if (!isRefused(error) || tried + 1 >= ports.length) throw error;
      }
    }
  }

  /** Conversations, contacts and attachments the traffic draws from. */
  async prepare(): Promise<void> {
    this.image = await sharp({
      create: {
        width: 160,
        height: 160,
        channels: 3,
        background: "#808080",
        noise: { type: "gaussian", mean: 128, sigma: 40 },
      },
    })
      .jpeg({ quality: 80 })
      .toBuffer();
    const channels = await this.test.channels.list({ limit: 100 });
    const sandboxWhatsapp = channels.data.find((channel) => channel.type === "whatsapp");
    if (!sandboxWhatsapp) throw new Error("the test environment has no sandbox WhatsApp channel");
    for (let i = 0; i < 20; i++) {
      const contact = await this.test.contacts.create({
        name: `Soak sandbox ${i}`,
        phone: `+1555010${String(i).padStart(4, "0")}`,
      });
      this.contacts.push(contact.id);
      const conversation = await this.test.conversations.create({
        contact_id: contact.id,
        channel_id: sandboxWhatsapp.id,
      });
      // The contact writes first: WhatsApp's customer-service window is open.
      await this.test.testHelpers.inboundMessages.create({
        conversation_id: conversation.id,
        type: "text",
        text: "Hello",
      });
      this.sandboxConversations.push(conversation.id);
    }
    for (let i = 0; i < 20; i++) {
      const waId = `1555020${String(i).padStart(4, "0")}`;
      const id = await this.inboundMeta(waId);
      this.whatsappContacts.push({ waId, conversationId: await this.conversationOfInbound(id) });
    }
    for (let i = 0; i < 10; i++) {
      const address = `customer${i}@soak.example.com`;
      const id = await this.inboundSmtp(address);
      this.emailContacts.push({ address, conversationId: await this.conversationOfInbound(id) });
    }
    for (const env of ["test", "live"] as const) {
      for (let i = 0; i < 3; i++) await this.upload(env);
    }
  }

  private async conversationOfInbound(providerId: string): Promise<string> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const rows = await this.targets.sql<{ conversation_id: string }[]>`
        select conversation_id from messages where provider_message_id in (${providerId}, ${`<${providerId}>`})`;
      if (rows[0]) return rows[0].conversation_id;
      if (Date.now() > deadline) throw new Error(`the inbound message ${providerId} was not stored within a minute`);
      await sleep(100);
    }
  }

  /** Runs the traffic for `durationMs`; resolves when every request it started has ended. */
  async run(durationMs: number, ratePerSecond: number): Promise<void> {
    const credit = Object.fromEntries(Object.keys(MIX).map((kind) => [kind, 0])) as Record<OperationKind, number>;
    const end = performance.now() + durationMs;
    let last = performance.now();
    while (!this.stopped && performance.now() < end) {
      await sleep(10);
      const now = performance.now();
      const elapsed = (now - last) / 1000;
      last = now;
      for (const kind of Object.keys(MIX) as OperationKind[]) {
        credit[kind] += MIX[kind] * ratePerSecond * elapsed;
        while (credit[kind] >= 1) {
          credit[kind] -= 1;
          if (this.inFlight >= MAX_IN_FLIGHT) {
            this.shed++;
            continue;
          }
          this.launch(kind);
        }
      }
    }
    if (this.shed > 0) this.recorder.note(`${this.shed} requests were not started: ${MAX_IN_FLIGHT} were in flight`);
    await Promise.all(this.running);
  }

  private launch(kind: OperationKind): void {
    const at = this.recorder.now();
    this.inFlight++;
    const done = this.operation(kind).then(
      () => this.recorder.operation(kind, at, true),
      () => this.recorder.operation(kind, at, false),
    );
    const tracked = done.finally(() => {
      this.inFlight--;
      this.running.delete(tracked);
    });
    this.running.add(tracked);
  }

  private operation(kind: OperationKind): Promise<unknown> {
    switch (kind) {
      case "send":
        return this.send();
      case "page":
        return this.page();
      case "contact_create":
        return this.createContact();
      case "contact_update":
        return this.updateContact();
      case "inbound_meta":
        return this.inboundMeta(pick(this.whatsappContacts).waId);
      case "inbound_smtp":
        return this.inboundSmtp(pick(this.emailContacts).address);
      case "upload":
        return this.upload(Math.random() < 0.5 ? "test" : "live");
    }
  }

  private async send(): Promise<void> {
    const key = `soak-${++this.sequence}-${randomBytes(6).toString("hex")}`;
    const route = weighted(SEND_ROUTES).route;
    const image = Math.random() < IMAGE_SHARE;
    const record: SendRecord = { key, route, image, at: this.recorder.now(), answeredIds: new Set() };
    this.sends.set(key, record);
    const env = route === "sandbox" ? "test" : "live";
    const client = env === "test" ? this.test : this.live;
    const conversationId =
      route === "sandbox"
        ? pick(this.sandboxConversations)
        : route === "whatsapp"
          ? pick(this.whatsappContacts).conversationId
          : pick(this.emailContacts).conversationId;
    // The key is in the text: the provider's side (simulator, sink) is matched by it.
    const text = `Soak ${key}`;
    const body = image
      ? { conversation_id: conversationId, type: "image" as const, attachment_id: pick(this.attachments[env]), text }
      : { conversation_id: conversationId, type: "text" as const, text };
    try {
      const message = await client.messages.send(body, { idempotencyKey: key });
      record.answeredIds.add(message.id);
      // The SDK keeps the key across its own retries; a second call with it must answer the same message.
      if (Math.random() < 0.02) {
        const again = await client.messages.send(body, { idempotencyKey: key });
        record.answeredIds.add(again.id);
      }
    } catch (error) {
      record.unanswered = (error as Error).message;
      throw error;
    }
  }

  private async page(): Promise<void> {
    if (Math.random() < 0.5) {
      await this.test.conversations.list({ limit: 25 });
    } else {
      await this.test.messages.list(pick(this.sandboxConversations), { limit: 25 });
    }
  }

  private async createContact(): Promise<void> {
    const suffix = randomBytes(5).toString("hex");
    const contact = await this.test.contacts.create({ name: `Soak ${suffix}`, email: `${suffix}@soak.example.com` });
    this.contacts.push(contact.id);
    if (this.contacts.length > 500) this.contacts.splice(20, 1);
  }

  private async updateContact(): Promise<void> {
    await this.test.contacts.update(pick(this.contacts), { name: `Soak ${randomBytes(4).toString("hex")}` });
  }

  /** An image upload; its attachment joins those the image sends draw from. */
  private async upload(env: "test" | "live"): Promise<void> {
    const client = env === "test" ? this.test : this.live;
    const attachment = await client.uploads.create(this.image, { filename: "photo.jpg", contentType: "image/jpeg" });
    this.attachments[env].push(attachment.id);
    if (this.attachments[env].length > 50) this.attachments[env].shift();
  }

  /** A WhatsApp message from `waId`, posted as Meta posts it (signed), retried until accepted. */
  private async inboundMeta(waId: string): Promise<string> {
    const id = `wamid.soak${randomBytes(16).toString("hex")}`;
    const record: InboundRecord = { id, via: "meta", at: this.recorder.now(), acknowledged: false };
    this.inbound.push(record);
    const payload = whatsappTextMessage({
      phoneNumberId: this.targets.whatsapp.phoneNumberId,
      from: waId,
      id,
      text: `Inbound ${id}`,
    });
    await this.retried("inbound_meta", async () => {
      const response = await this.throughBalancer((port) =>
        sendWebhook(`http://127.0.0.1:${port}/v1/channels/webhooks/meta`, payload, this.targets.whatsapp.appSecret),
      );
      if (response.status !== 200) throw new Error(`Meta webhook answered ${response.status}`);
    });
    record.acknowledged = true;
    return id;
  }

  /** A customer's mail to the support address, delivered over SMTP to a worker, retried until accepted. */
  private async inboundSmtp(from: string): Promise<string> {
    const id = `${randomBytes(12).toString("hex")}@soak.example.com`;
    const record: InboundRecord = { id, via: "smtp", at: this.recorder.now(), acknowledged: false };
    this.inbound.push(record);
    const raw = [
      `From: ${from}`,
      `To: ${this.targets.email.address}`,
      `Subject: Soak ${id}`,
      `Date: ${new Date().toUTCString()}`,
      `Message-ID: <${id}>`,
      "MIME-Version: 1.0",
      "Content-Type: text/plain; charset=utf-8",
      "",
      `Inbound ${id}`,
      "",
    ].join("\r\n");
    await this.retried("inbound_smtp", async () => {
      const port = this.targets.smtpPorts[this.next++ % this.targets.smtpPorts.length] as number;
      await sendRawEmail({ host: "127.0.0.1", port }, { from, to: this.targets.email.address, raw });
    });
    record.acknowledged = true;
    return id;
  }

  /** Another try after a failure, with backoff, for a minute and a half at most (as a provider retries). */
  private async retried(what: string, attempt: () => Promise<void>): Promise<void> {
    for (let tries = 0; ; tries++) {
      try {
        await attempt();
        return;
      } catch (error) {
        this.recorder.failedAttempt(`${what}: ${(error as Error).message.slice(0, 80)}`);
        if (tries >= 20) throw error;
        await sleep(Math.min(8_000, 250 * 2 ** tries) * (0.5 + Math.random() / 2));
      }
    }
  }

  stop(): void {
    this.stopped = true;
  }
}

/** A connection refused: the process is down, and nothing was sent. */
function isRefused(error: unknown): boolean {
  return (error as { cause?: { code?: string } }).cause?.code === "ECONNREFUSED";
}

function pick<T>(values: readonly T[]): T {
  const value = values[Math.floor(Math.random() * values.length)];
  if (value === undefined) throw new Error("nothing to pick from");
  return value;
}

function weighted<T extends { share: number }>(choices: readonly T[]): T {
  let draw = Math.random();
  for (const choice of choices) {
    draw -= choice.share;
    if (draw < 0) return choice;
  }
  return choices[choices.length - 1] as T;
}
