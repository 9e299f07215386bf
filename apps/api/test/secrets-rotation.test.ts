import { randomBytes } from "node:crypto";
import path from "node:path";
import { whatsappTextMessage } from "@parley/channels/testing";
import { createSecretBox, parseSecretsKey, resealSecrets, secretKeyIdOf } from "@parley/core";
import { StartupError } from "@parley/db";
import { type RunningWorker, startWorker } from "@parley/worker";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { connectChannel } from "../src/channels/service.js";
import { loadConfig } from "../src/config.js";
import { type RunningApi, startApi } from "../src/server.js";
import { waitForStatus } from "./delivery-helpers.js";
import { as, setupOrganization, type TestApi, useTestApi } from "./harness.js";
import {
  connectMetaChannel,
  deliverWebhook,
  type MetaChannel,
  postMessage,
  randomSecret,
  sendRequests,
  useMetaSimulator,
  waId,
  waitForInbound,
} from "./meta-helpers.js";
import { apiDist, runToEnd, workerDist } from "./start-processes.js";

/**
 * `PARLEY_SECRETS_KEY` rotated twice (A -> B -> C) on a live WhatsApp channel whose sealed
 * settings both sides open: the API (the app secret checking Meta's webhook signatures) and
 * the worker (the access token of each send). Each rotation: processes with (new, previous)
 * replace those with the old key, `admin reseal-secrets` re-seals, processes with the new
 * key alone replace them; a webhook in and a reply out at every step.
 */
const KEY_A = randomBytes(32).toString("hex");
const KEY_B = randomBytes(32).toString("hex");
const KEY_C = randomBytes(32).toString("hex");
const idOf = (key: string) => secretKeyIdOf(parseSecretsKey(key));

const meta = useMetaSimulator();
const api = useTestApi({ PARLEY_SECRETS_KEY: KEY_A }, { ownDatabase: true });
const silent = pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });

interface Keys {
  PARLEY_SECRETS_KEY: string;
  PARLEY_SECRETS_KEY_PREVIOUS?: string;
}

/** An API process and a worker process as a deployment runs them, both with these keys. */
interface Processes {
  api: RunningApi;
  worker: RunningWorker;
  /** The harness's view of this API: the same database, this process's address. */
  view: TestApi;
  stop(): Promise<void>;
}

async function startProcesses(keys: Keys): Promise<Processes> {
  const config = loadConfig({ PORT: "0", HOST: "127.0.0.1", RUN_WORKER: "false", ...keys });
  const running = await startApi(api.databaseUrl, config, silent);
  const worker = await startWorker({
    connectionString: api.databaseUrl,
    logger: silent,
    publicBaseUrl: running.url.replace(/\/v1$/, ""),
    relayPollMs: 10,
    meta: meta.simulator.options(),
    secrets: keys,
  }).catch(async (error: unknown) => {
    await running.close();
    throw error;
  });
  return {
    api: running,
    worker,
    view: { ...api, baseUrl: running.url },
    stop: async () => {
      await worker.stop();
      await running.close();
    },
  };
}

/** A customer writes (a signed webhook the API checks), the business replies (a send the worker makes). */
async function roundTrip(processes: Processes, live: string, channel: MetaChannel, text: string) {
  const client = as(processes.view, live);
  const wamid = `wamid.${randomSecret("in")}`;
  await deliverWebhook(
    processes.view,
    whatsappTextMessage({ phoneNumberId: channel.accountId, from: waId(), name: "Ada", id: wamid, text }),
    channel.appSecret,
  );
  const inbound = await waitForInbound(processes.view, client, wamid);
  const before = sendRequests(meta.simulator, channel.accountId).length;
  const reply = await postMessage(client, {
    conversation_id: inbound.conversation_id,
    type: "text",
    text: `Re: ${text}`,
  });
  await waitForStatus(processes.view, client, reply.id, "sent");
  expect(sendRequests(meta.simulator, channel.accountId)).toHaveLength(before + 1);
}

async function adminReseal(keys: Keys) {
  const result = await runToEnd(path.join(apiDist, "admin.js"), ["reseal-secrets", "--json"], {
    DATABASE_URL: api.databaseUrl,
    ...keys,
  });
  const lines = result.stdout.trim().split("\n");
  expect(lines, `${result.stdout}${result.stderr}`).toHaveLength(1);
  return { code: result.code, body: JSON.parse(lines[0] ?? "{}"), stderr: result.stderr };
}

async function sealedKeyIds(): Promise<string[]> {
  const rows = await api.client.sql<{ key_id: string }[]>`
    select split_part(secret_settings, '.', 2) as key_id from channels where secret_settings is not null`;
  return [...new Set(rows.map((row) => row.key_id))];
}

describe("rotating PARLEY_SECRETS_KEY", () => {
  it("rotates A -> B -> C with sends between, each old key dropped after admin reseal-secrets", async () => {
    const { org } = await setupOrganization(api);
    const channel = await connectMetaChannel(api, meta.simulator, org.id, "whatsapp");
    expect(await sealedKeyIds()).toEqual([idOf(KEY_A)]);

    let current = await startProcesses({ PARLEY_SECRETS_KEY: KEY_A });
    await roundTrip(current, org.live, channel, "under A");

    for (const [previous, next] of [
      [KEY_A, KEY_B],
      [KEY_B, KEY_C],
    ] as const) {
      // The new key first, the old one beside it: what the old key sealed still opens.
      const both = await startProcesses({ PARLEY_SECRETS_KEY: next, PARLEY_SECRETS_KEY_PREVIOUS: previous });
      await current.stop();
      current = both;
      await roundTrip(current, org.live, channel, "new key, old seal");

      const resealed = await adminReseal({ PARLEY_SECRETS_KEY: next, PARLEY_SECRETS_KEY_PREVIOUS: previous });
      expect(resealed.code, resealed.stderr).toBe(0);
      expect(resealed.body.reseal).toMatchObject({ key_id: idOf(next), resealed: 1, unopenable: 0 });
      expect(await sealedKeyIds()).toEqual([idOf(next)]);
      // The running processes open the new seal as they opened the old one.
      await roundTrip(current, org.live, channel, "new key, new seal");

      const again = await adminReseal({ PARLEY_SECRETS_KEY: next, PARLEY_SECRETS_KEY_PREVIOUS: previous });
      expect(again.body.reseal).toMatchObject({ resealed: 0, already_current: 1, unopenable: 0 });

      // The old key dropped.
      const alone = await startProcesses({ PARLEY_SECRETS_KEY: next });
      await current.stop();
      current = alone;
      await roundTrip(current, org.live, channel, "old key dropped");
    }
    await current.stop();
  });

  it("re-seals in batches and reports, by key id, what it cannot open", async () => {
    const { org } = await setupOrganization(api);
    const old = createSecretBox(parseSecretsKey(KEY_A));
    const lost = createSecretBox(randomBytes(32));
    const box = createSecretBox(parseSecretsKey(KEY_C), parseSecretsKey(KEY_A));
    for (let index = 0; index < 5; index++) {
      await connectChannel(api.context.db, old, {
        organizationId: org.id,
        environment: "live",
        type: "email",
        name: `Mailbox ${index}`,
        provider: "smtp",
        settings: {
          address: `box${index}.${randomSecret("a")}@example.com`,
          smtp_url: `smtp://u:p${index}@127.0.0.1:1`,
        },
      });
    }
    const unopenable = await connectChannel(api.context.db, lost, {
      organizationId: org.id,
      environment: "live",
      type: "email",
      name: "Lost",
      provider: "smtp",
      settings: { address: `lost.${randomSecret("a")}@example.com`, smtp_url: "smtp://u:lost@127.0.0.1:1" },
    });
    const report = await resealSecrets(api.context.db, box, { batchSize: 2 });
    expect(report).toMatchObject({ resealed: 5, unopenable: 1, unopenable_key_ids: [lost.keyId] });
    expect(report.batches).toBeGreaterThanOrEqual(3);
    const [row] = await api.client.sql<{ secret_settings: string }[]>`
      select secret_settings from channels where organization_id = ${org.id} and name = 'Mailbox 3'`;
    expect(box.open(row?.secret_settings ?? "")).toEqual({ smtp_url: "smtp://u:p3@127.0.0.1:1" });
    await api.client.sql`delete from channels where id = ${unopenable.id}`;
  });

  it("names a malformed PARLEY_SECRETS_KEY_PREVIOUS at start without echoing it", () => {
    const start = () => loadConfig({ PARLEY_SECRETS_KEY: KEY_A, PARLEY_SECRETS_KEY_PREVIOUS: "not-a-key-7d3f" });
    expect(start).toThrow(StartupError);
    expect(start).toThrow(/PARLEY_SECRETS_KEY_PREVIOUS \(value hidden\): must be 32 bytes/);
    expect(start).not.toThrow(/not-a-key-7d3f/);
  });

  it("refuses to start, in one line, when a sealed value's key is neither key configured", async () => {
    // A value sealed under B, which the first test dropped: as if B were dropped before the reseal.
    const { org } = await setupOrganization(api);
    const channel = await connectChannel(api.context.db, createSecretBox(parseSecretsKey(KEY_B)), {
      organizationId: org.id,
      environment: "live",
      type: "email",
      name: "Sealed under B",
      provider: "smtp",
      settings: { address: `b.${randomSecret("a")}@example.com`, smtp_url: "smtp://u:b@127.0.0.1:1" },
    });
    const onlyC = { PARLEY_SECRETS_KEY: KEY_C };
    const expected = new RegExp(
      `sealed with key ${idOf(KEY_B)}, but PARLEY_SECRETS_KEY is key ${idOf(KEY_C)} and PARLEY_SECRETS_KEY_PREVIOUS is not set: set PARLEY_SECRETS_KEY_PREVIOUS`,
    );

    const refused = await startProcesses(onlyC).then(
      async (started) => {
        await started.stop();
        return undefined;
      },
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(StartupError);
    expect((refused as Error).message).toMatch(expected);

    // The worker as deployed: exit 1, one line, no stack.
    const worker = await runToEnd(path.join(workerDist, "main.js"), [], { DATABASE_URL: api.databaseUrl, ...onlyC });
    expect(worker.code).toBe(1);
    expect(worker.stderr.trim().split("\n"), worker.stderr).toHaveLength(1);
    expect(worker.stderr).toMatch(/^Parley cannot start: 1 sealed channel secret was sealed with key/);
    expect(worker.stderr).toMatch(expected);

    // The admin command names the key and changes nothing it cannot open.
    const failed = await adminReseal(onlyC);
    expect(failed.code).toBe(1);
    expect(failed.body.error.code).toBe("secrets_unopenable");
    expect(failed.body.error.message).toContain(`sealed with key ${idOf(KEY_B)}`);
    expect(failed.stderr.trim().split("\n")).toHaveLength(1);

    // With B back as the previous key, the reseal repairs it and C alone starts again.
    const repaired = await adminReseal({ ...onlyC, PARLEY_SECRETS_KEY_PREVIOUS: KEY_B });
    expect(repaired.body.reseal).toMatchObject({ resealed: 1, unopenable: 0 });
    expect(await sealedKeyIds()).toEqual([idOf(KEY_C)]);
    const restarted = await startProcesses(onlyC);
    await restarted.stop();
    await api.client.sql`delete from channels where id = ${channel.id}`;
  });
});
