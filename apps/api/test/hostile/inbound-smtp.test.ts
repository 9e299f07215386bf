import { beforeAll, describe, expect, it } from "vitest";
import { connectEmailChannel } from "../email-helpers.js";
import { eventually, setupOrganization, type TestOrganization, useTestApi, useTestWorker } from "../harness.js";
import { RawSmtp, sendWithoutSize } from "./raw-smtp.js";

/**
 * The inbound SMTP server as anyone on the internet can reach it: an oversized message
 * without `SIZE=` is drained, not kept; connections are capped in all and per address;
 * a silent connection is closed.
 */
const SUPPORT = "hostile-support@acme.test";
const MAX_CLIENTS = 6;
const MAX_PER_ADDRESS = 3;
const SOCKET_TIMEOUT_MS = 1500;

const api = useTestApi({}, { ownDatabase: true });
const worker = useTestWorker(api, () => ({
  smtpInbound: {
    port: 0,
    host: "127.0.0.1",
    maxClients: MAX_CLIENTS,
    maxClientsPerAddress: MAX_PER_ADDRESS,
    socketTimeoutMs: SOCKET_TIMEOUT_MS,
  },
}));

let org: TestOrganization;

beforeAll(async () => {
  org = (await setupOrganization(api)).org;
  await connectEmailChannel(api, org.id, SUPPORT, "smtp://127.0.0.1:1");
});

function smtpPort(): number {
  const port = worker.worker.smtpPort;
  if (port === undefined) throw new Error("the worker runs no inbound SMTP server");
  return port;
}

/**
 * A connection greeted with 220, from `localAddress`: retried while the server still counts
 * the connections of the test before (a closed socket leaves its count a moment later).
 */
async function greeted(localAddress: string): Promise<RawSmtp> {
  const { client } = await eventually(
    async () => {
      const client = new RawSmtp(smtpPort(), localAddress);
      const code = await client.reply();
      if (code !== 220) client.end();
      return { client, code };
    },
    (attempt) => attempt.code === 220,
  );
  return client;
}

async function storedMessages(): Promise<number> {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from messages where organization_id = ${org.id}`;
  return row?.count ?? 0;
}

describe("a message above the size limit without SIZE=", () => {
  it("is drained without being kept: 552, nothing stored, RSS within 30 MB of where it started", async () => {
    // A worker in service has received mail before: one message a little above the limit
    // (30 MB) brings the heap to its working size, so what is measured next is what a
    // message costs, not the process's first growth.
    expect(await sendWithoutSize(smtpPort(), SUPPORT, 30 * 1024 * 1024)).toBe(552);

    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 10);
    try {
      expect(await sendWithoutSize(smtpPort(), SUPPORT, 100 * 1024 * 1024)).toBe(552);
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, process.memoryUsage().rss);
    const grownMb = (peak - before) / 1024 / 1024;
    expect(grownMb, `RSS grew from ${before >> 20} MB to a peak of ${peak >> 20} MB`).toBeLessThan(30);
    expect(await storedMessages()).toBe(0);
  }, 120_000);
});

describe("senders that vanish", () => {
  it("a sender resetting its connection mid-transaction (TCP RST) does not stop the server: the next is served", async () => {
    for (let index = 0; index < 3; index++) {
      const client = new RawSmtp(smtpPort());
      expect(await client.reply()).toBe(220);
      expect(await client.command("EHLO reset.example.com")).toBe(250);
      // Inside a transaction smtp-server reports the reset as an 'error' of the server: before,
      // the second had no listener and ended the worker process.
      expect(await client.command("MAIL FROM:<gone@example.com>")).toBe(250);
      client.socket.resetAndDestroy();
      await client.closed;
    }
    const next = new RawSmtp(smtpPort());
    try {
      expect(await next.reply()).toBe(220);
      expect(await next.command("EHLO next.example.com")).toBe(250);
    } finally {
      next.end();
    }
  });
});

describe("connection limits", () => {
  it(`answers 421 to a ${MAX_PER_ADDRESS + 1}th connection from one address, and serves it again once one closed`, async () => {
    const open: RawSmtp[] = [];
    try {
      for (let index = 0; index < MAX_PER_ADDRESS; index++) open.push(await greeted("127.0.0.1"));
      const refused = new RawSmtp(smtpPort(), "127.0.0.1");
      expect(await refused.reply()).toBe(421);
      await refused.closed;

      // Another address is still served.
      const other = new RawSmtp(smtpPort(), "127.0.0.2");
      expect(await other.reply()).toBe(220);
      other.end();

      open.shift()?.end();
      open.push(await greeted("127.0.0.1"));
    } finally {
      for (const client of open) client.end();
    }
  });

  it(`answers 421 past ${MAX_CLIENTS} connections in all, whatever their addresses`, async () => {
    const open: RawSmtp[] = [];
    try {
      for (let index = 0; index < MAX_CLIENTS; index++) open.push(await greeted(`127.0.1.${index + 1}`));
      const refused = new RawSmtp(smtpPort(), "127.0.2.1");
      expect(await refused.reply()).toBe(421);
      refused.end();
    } finally {
      for (const client of open) client.end();
    }
  });

  it("closes a connection that stays silent past the socket timeout", async () => {
    const client = await greeted("127.0.3.1");
    const started = Date.now();
    expect(await client.reply()).toBe(421);
    await client.closed;
    expect(Date.now() - started).toBeLessThan(SOCKET_TIMEOUT_MS + 5000);
  });
});
