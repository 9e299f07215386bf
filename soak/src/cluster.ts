import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { type MetaSimulator, type SmtpSink, startMetaSimulator, startSmtpSink } from "@parley/channels/testing";
import { findFreePort, runMigrations } from "@parley/db";
import postgres from "postgres";
import { type SoakPostgres, startPostgres } from "./postgres.js";
import { accepts, adminMain, apiMain, Supervised, waitUntil, workerMain } from "./processes.js";
import { startWebhookReceiver, type WebhookReceiver } from "./receiver.js";
import type { Recorder } from "./recorder.js";

const run = promisify(execFile);

/** Parley in production shape on one machine, with the providers it talks to. */
export interface Cluster {
  postgres: SoakPostgres;
  /** The soak's own connection, for the backlogs and the account. */
  sql: postgres.Sql;
  apis: Supervised[];
  workers: Supervised[];
  apiPorts: number[];
  smtpPorts: number[];
  meta: MetaSimulator;
  sink: SmtpSink;
  receiver: WebhookReceiver;
  organizationId: string;
  testKey: string;
  liveKey: string;
  whatsapp: { phoneNumberId: string; appSecret: string };
  email: { address: string };
  stop(): Promise<void>;
}

/** `pnpm admin <command> --json`: its one JSON object. */
async function admin<T>(databaseUrl: string, args: string[]): Promise<T> {
  const { stdout } = await run(process.execPath, [adminMain, ...args, "--json"], {
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: "warn" },
  });
  return JSON.parse(stdout) as T;
}

/**
 * Two API processes and two workers on one PostgreSQL, a live WhatsApp channel on the Graph
 * API simulator, a live email channel relaying to an SMTP sink (and receiving over the
 * workers' SMTP servers), and a webhook receiver.
 */
export async function startCluster(
  databaseUrl: string | undefined,
  recorder: Recorder,
  logDir: string,
): Promise<Cluster> {
  const pg = await startPostgres(databaseUrl);
  await runMigrations(pg.url);
  const sql = postgres(pg.url, { max: 3, onnotice: () => {}, connect_timeout: 5, idle_timeout: 10 });
  const meta = await startMetaSimulator();
  const sink = await startSmtpSink();
  const receiver = await startWebhookReceiver();

  const created = await admin<{ organization: { id: string }; keys: { test: string; live: string } }>(pg.url, [
    "create-org",
    "--name",
    "Soak",
  ]);
  const organizationId = created.organization.id;
  const phoneNumberId = String(100_000_000_000_000 + Math.floor(Math.random() * 800_000_000_000_000));
  const appSecret = `appsecret_${randomBytes(16).toString("hex")}`;
  meta.addAccount(phoneNumberId);
  await admin(pg.url, [
    ...["connect-channel", "--org", organizationId, "--env", "live", "--type", "whatsapp", "--no-check"],
    ...["--setting", `phone_number_id=${phoneNumberId}`, "--setting", `access_token=${meta.accessToken}`],
    ...["--setting", `app_secret=${appSecret}`, "--setting", `verify_token=verify_${randomBytes(8).toString("hex")}`],
  ]);
  const address = "support@soak.example.com";
  await admin(pg.url, [
    ...["connect-channel", "--org", organizationId, "--env", "live", "--type", "email", "--no-check"],
    ...["--setting", `address=${address}`, "--setting", `smtp_url=${sink.url}`, "--setting", "from_name=Soak"],
  ]);

  const apiPorts = [await findFreePort(), await findFreePort()];
  const smtpPorts = [await findFreePort(), await findFreePort()];
  const publicBaseUrl = `http://127.0.0.1:${apiPorts[0]}`;
  const clock = () => recorder.now();
  const event = (line: string) => recorder.note(line);
  const apis = apiPorts.map(
    (port, index) =>
      new Supervised(
        `api-${index + 1}`,
        apiMain,
        {
          ...process.env,
          DATABASE_URL: pg.url,
          PORT: String(port),
          HOST: "127.0.0.1",
          RUN_WORKER: "false",
          LOG_LEVEL: "warn",
          PUBLIC_BASE_URL: publicBaseUrl,
          RATE_LIMIT_PER_MINUTE: "100000000",
          META_WEBHOOK_RATE_LIMIT_PER_MINUTE: "100000000",
        },
        clock,
        event,
        () => waitUntil(`api-${index + 1} listening`, () => accepts(port), 60_000),
        logDir,
      ),
  );
  const workers = smtpPorts.map(
    (port, index) =>
      new Supervised(
        `worker-${index + 1}`,
        workerMain,
        {
          ...process.env,
          DATABASE_URL: pg.url,
          PUBLIC_BASE_URL: publicBaseUrl,
          LOG_LEVEL: "warn",
          SANDBOX_DELIVERY_DELAY_MS: "0",
          SANDBOX_READ_DELAY_MS: "0",
          META_GRAPH_BASE_URL: meta.url,
          SMTP_INBOUND_PORT: String(port),
          SMTP_INBOUND_HOST: "127.0.0.1",
          SMTP_INBOUND_MAX_CLIENTS_PER_IP: "1000",
          SMTP_INBOUND_MAX_CLIENTS: "1000",
          // A delivery cut short by a crash is retried in seconds, not minutes: the soak drains.
          PARLEY_WEBHOOK_FAST_RETRY: "1",
        },
        clock,
        event,
        () => waitUntil(`worker-${index + 1} receiving mail`, () => accepts(port), 60_000),
        logDir,
      ),
  );
  await Promise.all([...apis, ...workers].map((child) => child.start()));

  return {
    postgres: pg,
    sql,
    apis,
    workers,
    apiPorts,
    smtpPorts,
    meta,
    sink,
    receiver,
    organizationId,
    testKey: created.keys.test,
    liveKey: created.keys.live,
    whatsapp: { phoneNumberId, appSecret },
    email: { address },
    async stop() {
      await Promise.all([...workers, ...apis].map((child) => child.stop()));
      await sql.end({ timeout: 2 });
      await Promise.all([meta.close(), sink.close(), receiver.close()]);
      await pg.stop();
    },
  };
}
