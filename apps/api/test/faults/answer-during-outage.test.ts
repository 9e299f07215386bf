import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { whatsappTextMessage } from "@parley/channels/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { statusOf } from "../delivery-helpers.js";
import { eventually, setupOrganization, useTestApi, useTestWorker } from "../harness.js";
import { RawSmtp } from "../hostile/raw-smtp.js";
import {
  connectMetaChannel,
  deliverWebhook,
  postMessage,
  randomSecret,
  sendRequests,
  useMetaSimulator,
  waId,
  waitForInbound,
} from "../meta-helpers.js";
import { useOwnPostgres } from "./own-postgres.js";

/**
 * PostgreSQL goes away while the provider is answering a send: the worker holds the answer
 * and records it once the database is back, rather than failing the job and sending the
 * message to the provider a second time (found by the soak: every PostgreSQL crash sent
 * the batches in hand again). Mail arriving meanwhile is deferred (451), not bounced.
 */
const postgresServer = useOwnPostgres();
const meta = useMetaSimulator();

/**
 * In front of the Graph API simulator: when armed, the next send stops PostgreSQL before it
 * reaches Meta, and PostgreSQL starts again 3 s after Meta's answer.
 */
const graphProxy = { url: "", armed: false, restarted: Promise.resolve() };
const proxy = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", async () => {
    const isSend = req.method === "POST" && req.url?.endsWith("/messages");
    if (isSend && graphProxy.armed) {
      graphProxy.armed = false;
      await postgresServer.stop();
      graphProxy.restarted = new Promise((resolve) => setTimeout(resolve, 3_000)).then(() => postgresServer.start());
    }
    const answer = await fetch(`${meta.simulator.url}${req.url}`, {
      method: req.method ?? "GET",
      headers: { authorization: req.headers.authorization ?? "", "content-type": "application/json" },
      ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
    });
    res.writeHead(answer.status, { "content-type": "application/json" }).end(await answer.text());
  });
});
beforeAll(async () => {
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  graphProxy.url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => proxy.close(() => resolve())));

const api = useTestApi({}, { databaseUrl: () => postgresServer.url });
const worker = useTestWorker(api, () => ({
  meta: meta.simulator.options({ graphBaseUrl: graphProxy.url }),
  smtpInbound: { port: 0, host: "127.0.0.1" },
  metrics: { port: 0 },
}));

/** A live WhatsApp channel whose customer wrote first (a worker received it): its window is open. */
async function whatsappConversation() {
  const { org, live } = await setupOrganization(api);
  const channel = await connectMetaChannel(api, meta.simulator, org.id, "whatsapp");
  const inboundId = `wamid.${randomSecret("in")}`;
  await deliverWebhook(
    api,
    whatsappTextMessage({ phoneNumberId: channel.accountId, from: waId(), id: inboundId, text: "Hi" }),
    channel.appSecret,
  );
  return { live, channel, inbound: await waitForInbound(api, live, inboundId) };
}

describe("PostgreSQL gone while the provider answers", () => {
  it("records the answer once PostgreSQL is back, and sends the message to the provider once", async () => {
    const { live, channel, inbound } = await whatsappConversation();

    graphProxy.armed = true;
    const message = await postMessage(live, { conversation_id: inbound.conversation_id, type: "text", text: "Once" });
    await eventually(
      async () => sendRequests(meta.simulator, channel.accountId).length,
      (count) => count >= 1,
      10_000,
    );
    await graphProxy.restarted;
    await eventually(
      () => statusOf(api, message.id).catch(() => "unreadable"),
      (status) => status === "sent",
      30_000,
    );
    const bodies = sendRequests(meta.simulator, channel.accountId).map(
      (request) => (request.body as { text?: { body?: string } }).text?.body,
    );
    expect(bodies).toEqual(["Once"]);
  }, 90_000);

  it("counts a send once in parley_messages_total when its record is written a second time", async () => {
    const { live, inbound } = await whatsappConversation();
    const sql = api.client.sql;
    // The first write of the answer stalls in PostgreSQL; its connection is then cut, as a
    // failover cuts it: the worker writes the answer again (a sequence is not rolled back).
    await sql.unsafe(`
      create sequence stall_once;
      create function stall_once() returns trigger language plpgsql as $$
      begin
        if nextval('stall_once') = 1 then perform pg_sleep(30); end if;
        return new;
      end $$;
      create trigger stall_once before update on messages for each row
        when (new.status = 'sent' and new.text = 'Written twice') execute function stall_once();`);
    const sentCount = async () => {
      const text = await (await fetch(`http://127.0.0.1:${worker.worker.metricsPort}/metrics`)).text();
      const line = /^parley_messages_total\{channel_type="whatsapp",status="sent",error_code="none"\} (\d+)$/m.exec(
        text,
      );
      return Number(line?.[1] ?? 0);
    };
    const before = await sentCount();
    try {
      const message = await postMessage(live, {
        conversation_id: inbound.conversation_id,
        type: "text",
        text: "Written twice",
      });
      const [stalled] = await eventually(
        () => sql<{ pid: number }[]>`select pid from pg_stat_activity where wait_event = 'PgSleep'`,
        (rows) => rows.length === 1,
        15_000,
      );
      await sql`select pg_terminate_backend(${stalled?.pid ?? 0}::int)`;
      await eventually(
        () => statusOf(api, message.id),
        (status) => status === "sent",
        15_000,
      );
      expect(await sentCount()).toBe(before + 1);
    } finally {
      await sql.unsafe("drop trigger stall_once on messages; drop function stall_once(); drop sequence stall_once;");
    }
  }, 90_000);
});

describe("PostgreSQL gone while mail arrives", () => {
  it("answers RCPT TO with 451 (try again later), never 550, which would bounce the mail for good", async () => {
    const port = worker.worker.smtpPort;
    if (port === undefined) throw new Error("the worker runs no inbound SMTP server");
    const smtp = new RawSmtp(port);
    try {
      expect(await smtp.reply()).toBe(220);
      expect(await smtp.command("EHLO mail.example.com")).toBe(250);
      expect(await smtp.command("MAIL FROM:<customer@example.com>")).toBe(250);
      await postgresServer.stop();
      try {
        // Before: 550, smtp-server's answer to an error without a code.
        expect(await smtp.command("RCPT TO:<support@example.com>")).toBe(451);
      } finally {
        await postgresServer.start();
      }
    } finally {
      smtp.end();
    }
  }, 60_000);
});
