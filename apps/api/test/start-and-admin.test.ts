import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { SIMULATOR_API_VERSION, startMetaSimulator } from "@parley/channels/testing";
import { findFreePort } from "@parley/db";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendableConversation, sendText } from "./delivery-helpers.js";
import { as, eventually, type TestApi } from "./harness.js";

const run = promisify(execFile);
const distDir = path.resolve(import.meta.dirname, "../dist");

/**
 * The contract of decisions.md: `pnpm start` (dist/main.js) on the embedded PostgreSQL
 * with no configuration, and `pnpm --silent admin ... --json` (dist/admin.js) joining
 * that same database, each command printing exactly one JSON object.
 */
// Each test runs admin processes, each starting Node and joining the database: ~1 s apiece
// alone, 3 s or more beside the rest of the suite on two cores (one test runs nine).
describe("start and admin commands on the embedded database", { timeout: 90_000 }, () => {
  let dataDir: string;
  let server: ChildProcess;
  let output = "";
  let baseUrl: string;
  /** Set by a test for its admin commands (where the Graph API simulator listens). */
  let adminEnv: Record<string, string> = {};
  const metricsToken = "metrics-token-of-the-start-test";
  const env = () => {
    const { DATABASE_URL: _ignored, ...rest } = process.env;
    return { ...rest, DATA_DIR: dataDir, LOG_LEVEL: "info", ...adminEnv };
  };

  async function admin(...args: string[]): Promise<Record<string, any>> {
    const { stdout } = await run("node", [path.join(distDir, "admin.js"), ...args, "--json"], { env: env() });
    const lines = stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    return JSON.parse(lines[0] ?? "");
  }

  /** A refused command: exit 1 and exactly one JSON error object on stdout. */
  async function adminFailure(...args: string[]): Promise<{ error: { code: string; message: string } }> {
    const failed = await run("node", [path.join(distDir, "admin.js"), ...args, "--json"], { env: env() }).catch(
      (error: { code: number; stdout: string }) => error,
    );
    expect("code" in failed && failed.code).toBe(1);
    return JSON.parse(failed.stdout.trim());
  }

  async function waitFor(predicate: () => boolean, what: string, timeoutMs = 60_000) {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; output:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "parley-start-"));
    const port = await findFreePort();
    baseUrl = `http://localhost:${port}/v1`;
    server = spawn("node", [path.join(distDir, "main.js")], {
      env: { ...env(), PORT: String(port), METRICS_TOKEN: metricsToken },
      stdio: ["ignore", "pipe", "pipe"],
    });
    server.stdout?.on("data", (chunk) => {
      output += chunk;
    });
    server.stderr?.on("data", (chunk) => {
      output += chunk;
    });
    await waitFor(() => {
      if (server.exitCode !== null) throw new Error(`the server exited with ${server.exitCode}:\n${output}`);
      return output.includes("Parley is listening") && output.includes("test key:");
    }, "the server to start");
  });

  afterAll(async () => {
    if (server.exitCode === null) {
      const exited = new Promise((resolve) => server.once("exit", resolve));
      server.kill("SIGTERM");
      await exited;
    }
    await rm(dataDir, { recursive: true, force: true });
  });

  // First: before any request has needed a connection.
  it("has opened its pools before listening: the API's and the worker's 10 each, the job queue's 10", async () => {
    const connection = JSON.parse(await readFile(path.join(dataDir, "connection.json"), "utf8")) as {
      user: string;
      password: string;
      port: number;
    };
    const sql = postgres({ ...connection, host: "127.0.0.1", database: "parley", max: 1, onnotice: () => {} });
    try {
      const rows = await sql<{ app: string; n: number }[]>`
        select application_name as app, count(*)::int as n from pg_stat_activity
        where datname = 'parley' and backend_type = 'client backend' and pid <> pg_backend_pid()
        group by 1`;
      const byApp = Object.fromEntries(rows.map((row) => [row.app, row.n]));
      // postgres.js names its connections; node-postgres (graphile-worker's pool) does not.
      expect(byApp["postgres.js"]).toBeGreaterThanOrEqual(20);
      expect(byApp[""]).toBeGreaterThanOrEqual(10);
    } finally {
      await sql.end();
    }
  });

  it("prints a demo organization's live and test keys once, marked local-only, and they work", async () => {
    expect(output).toMatch(/LOCAL ONLY/);
    const testKey = /test key:\s+(parley_test_[0-9A-Za-z]{32,})/.exec(output)?.[1];
    const liveKey = /live key:\s+(parley_live_[0-9A-Za-z]{32,})/.exec(output)?.[1];
    expect(testKey).toBeDefined();
    expect(liveKey).toBeDefined();
    const response = await fetch(`${baseUrl}/contacts`, { headers: { authorization: `Bearer ${testKey}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-parley-request-id")).toMatch(/^req_/);
    // The console's address beside the keys, and the console there.
    const consoleUrl = /Console: (http:\/\/\S+\/console\/)/.exec(output)?.[1];
    expect(consoleUrl).toBe(`${baseUrl.replace(/\/v1$/, "")}/console/`);
    const page = await fetch(consoleUrl as string);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<title>Parley console</title>");
  });

  it("serves the worker's metric families on the API's one /metrics, each family once (issue 39, item 4)", async () => {
    const testKey = /test key:\s+(parley_test_[0-9A-Za-z]{32,})/.exec(output)?.[1] ?? "";
    const client = as({ baseUrl } as TestApi, testKey);
    const conversation = await sendableConversation(client, "whatsapp");
    await sendText(client, conversation.id, "Counted by the worker");
    const scrape = async () =>
      (
        await fetch(`${baseUrl.replace(/\/v1$/, "")}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })
      ).text();
    // The worker's families: sends by channel, jobs by task and state, webhook attempts, inbound mail.
    const text = await eventually(scrape, (body) =>
      /^parley_messages_total\{channel_type="whatsapp",status="sent",error_code="none"\} [1-9]/m.test(body),
    );
    expect(text).toMatch(/^parley_jobs\{task="deliver_message",state="queued"\} \d+$/m);
    expect(text).toMatch(/^# TYPE parley_webhook_attempts_total counter$/m);
    expect(text).toMatch(/^# TYPE parley_inbound_emails_total counter$/m);
    // The API's own, beside them.
    expect(text).toMatch(/^parley_http_requests_total\{route="\/v1\/messages",method="POST",status="201"\} 1$/m);
    const families = [...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]);
    expect(families.length).toBeGreaterThan(20);
    expect(new Set(families).size).toBe(families.length);
    // Both pools of the process: the API's (DATABASE_POOL_SIZE, 10) and the worker's (10).
    expect(text).toMatch(/^parley_db_pool_size 20$/m);
  });

  it("create-org prints the organization and both keys, which authenticate against the running server", async () => {
    const created = await admin("create-org", "--name", "Acme");
    expect(created.organization.id).toMatch(/^org_[0-9A-Z]{26}$/);
    expect(created.keys.live).toMatch(/^parley_live_[0-9A-Za-z]{32,}$/);
    expect(created.keys.test).toMatch(/^parley_test_[0-9A-Za-z]{32,}$/);
    const contact = await fetch(`${baseUrl}/contacts`, {
      method: "POST",
      headers: { authorization: `Bearer ${created.keys.live}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "Ada" }),
    });
    expect(contact.status).toBe(201);
  });

  it("create-key makes a key with exactly the scopes asked for; list-keys never shows a secret; revoke-key revokes", async () => {
    const { organization } = await admin("create-org", "--name", "Scoped");
    const { key } = await admin("create-key", "--org", organization.id, "--env", "test", "--scopes", "contacts:read");
    expect(key).toMatch(/^parley_test_/);
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    expect((await fetch(`${baseUrl}/contacts`, { headers })).status).toBe(200);
    const write = await fetch(`${baseUrl}/contacts`, { method: "POST", headers, body: "{}" });
    expect(write.status).toBe(403);

    const listed = await admin("list-keys", "--org", organization.id);
    expect(listed.keys).toHaveLength(3);
    expect(JSON.stringify(listed)).not.toContain(key);
    const scoped = listed.keys.find((entry: { scopes: string[] }) => entry.scopes.length === 1);
    expect(scoped.redacted_key).toBe(`parley_test_****${key.slice(-4)}`);

    const revoked = await admin("revoke-key", "--org", organization.id, "--key", scoped.id);
    expect(revoked.key).toEqual({ id: scoped.id, revoked: true });
    // The API process hears of the revocation within a second (it held the key in memory).
    const after = await eventually(
      () => fetch(`${baseUrl}/contacts`, { headers }),
      (response) => response.status === 401,
      1_000,
    );
    const body = (await after.json()) as { error: { code: string } };
    expect(body.error.code).toBe("invalid_api_key");
  });

  it("create-user prints the user of the organization", async () => {
    const { organization } = await admin("create-org", "--name", "Team");
    const { user } = await admin(
      "create-user",
      "--org",
      organization.id,
      "--name",
      "Grace",
      "--email",
      "grace@example.com",
    );
    expect(user.id).toMatch(/^usr_[0-9A-Z]{26}$/);
    expect(user.name).toBe("Grace");
    expect(user.email).toBe("grace@example.com");
  });

  it("connect-channel creates a live channel whose provider settings the API never returns", async () => {
    const { organization, keys } = await admin("create-org", "--name", "Channels");
    const { channel } = await admin(
      "connect-channel",
      "--org",
      organization.id,
      "--env",
      "live",
      "--type",
      "whatsapp",
      "--setting",
      "phone_number_id=1234567890",
      "--setting",
      "access_token=EAAG-secret-token",
      "--setting",
      "app_secret=app-secret-value",
      "--setting",
      "verify_token=verify-token-value",
      // No Meta to ask here: the check has its own test below.
      "--no-check",
    );
    expect(channel.id).toMatch(/^chn_[0-9A-Z]{26}$/);
    expect(channel.type).toBe("whatsapp");
    expect(channel.sandbox).toBe(false);
    const response = await fetch(`${baseUrl}/channels/${channel.id}`, {
      headers: { authorization: `Bearer ${keys.live}` },
    });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toContain("EAAG-secret-token");
    expect(text).not.toContain("1234567890");
    expect(JSON.parse(text).capabilities.session_window).toEqual({ hours: 24 });
  });

  it("connect-channel refuses missing provider settings and test-environment providers, naming the problem", async () => {
    const { organization } = await admin("create-org", "--name", "Refusals");
    const missing = await adminFailure(
      "connect-channel",
      "--org",
      organization.id,
      "--env",
      "live",
      "--type",
      "email",
      "--setting",
      "address=not-an-address",
    );
    expect(missing.error.code).toBe("invalid_option");
    expect(missing.error.message).toContain("address");
    expect(missing.error.message).toContain("smtp_url");
    const sandboxOnly = await adminFailure(
      "connect-channel",
      "--org",
      organization.id,
      "--env",
      "test",
      "--type",
      "whatsapp",
    );
    expect(sandboxOnly.error.code).toBe("invalid_option");
    expect(sandboxOnly.error.message).toContain("sends to nobody");
  });

  it("connect-channel refuses an account another organization connected, naming the conflict", async () => {
    const meta = [
      "--setting",
      "access_token=t",
      "--setting",
      "app_secret=s",
      "--setting",
      "verify_token=v",
      "--no-check",
    ];
    const first = (await admin("create-org", "--name", "First")).organization.id;
    const second = (await admin("create-org", "--name", "Second")).organization.id;
    const live = (org: string, type: string, ...settings: string[]) =>
      ["connect-channel", "--org", org, "--env", "live", "--type", type, ...settings] as const;
    const { channel } = await admin(...live(first, "whatsapp", "--setting", "phone_number_id=5550001234", ...meta));
    const number = await adminFailure(...live(second, "whatsapp", "--setting", "phone_number_id=5550001234", ...meta));
    expect(number.error.code).toBe("channel_already_connected");
    expect(number.error.message).toContain("whatsapp phone_number_id '5550001234' is already connected");
    expect(number.error.message).toContain(channel.id);
    expect(number.error.message).toContain(first);

    const smtp = ["--setting", "smtp_url=smtp://relay.example:587", "--no-check"];
    await admin(...live(first, "email", "--setting", "address=help@shared.example", ...smtp));
    const address = await adminFailure(...live(second, "email", "--setting", "address=Help@Shared.Example", ...smtp));
    expect(address.error).toEqual({
      code: "channel_already_connected",
      message: expect.stringContaining("email address 'Help@Shared.Example' is already connected"),
    });
  });

  it("add-team-member puts an agent in a team, listed by GET /teams/{id}/users", async () => {
    const { organization, keys } = await admin("create-org", "--name", "Teams");
    const { user } = await admin(
      "create-user",
      "--org",
      organization.id,
      "--name",
      "Lin",
      "--email",
      "lin@example.com",
    );
    const headers = { authorization: `Bearer ${keys.test}`, "content-type": "application/json" };
    const team = (await (
      await fetch(`${baseUrl}/teams`, { method: "POST", headers, body: JSON.stringify({ name: "Support" }) })
    ).json()) as { id: string };
    const added = await admin("add-team-member", "--team", team.id, "--user", user.id);
    expect(added.team_member).toEqual({ team_id: team.id, user_id: user.id });
    const members = (await (await fetch(`${baseUrl}/teams/${team.id}/users`, { headers })).json()) as {
      data: { id: string }[];
    };
    expect(members.data.map((member) => member.id)).toEqual([user.id]);
  });

  it("connect-channel and update-channel ask Meta first; update-, disconnect- and reconnect-channel print the channel", async () => {
    const simulator = await startMetaSimulator();
    adminEnv = { META_GRAPH_BASE_URL: simulator.url, META_GRAPH_API_VERSION: SIMULATOR_API_VERSION };
    try {
      const { organization, keys } = await admin("create-org", "--name", "Lifecycle");
      const whatsapp = (token: string, ...more: string[]) => [
        ...["connect-channel", "--org", organization.id, "--env", "live", "--type", "whatsapp"],
        ...["--setting", "phone_number_id=5550009999", "--setting", `access_token=${token}`],
        ...["--setting", "app_secret=app-secret", "--setting", "verify_token=verify", ...more],
      ];
      const listed = async () => {
        const response = await fetch(`${baseUrl}/channels?type=whatsapp`, {
          headers: { authorization: `Bearer ${keys.live}` },
        });
        return ((await response.json()) as { data: { id: string }[] }).data;
      };

      // Meta does not know the token: exit 1 with Meta's answer, nothing stored.
      const refused = await adminFailure(...whatsapp("EAAG-not-valid"));
      expect(refused.error.code).toBe("credentials_rejected");
      expect(refused.error.message).toMatch(/Invalid OAuth access token.*code 190/);
      expect(refused.error.message).not.toContain("EAAG-not-valid");
      expect(await listed()).toEqual([]);
      simulator.addAccount("5550009999");
      const { channel } = await admin(...whatsapp(simulator.accessToken));
      expect(channel).toMatchObject({ type: "whatsapp", status: "active", status_reason: null });
      expect(
        simulator.requests.some(
          (request) =>
            request.path === `/${SIMULATOR_API_VERSION}/5550009999` &&
            request.headers.authorization === `Bearer ${simulator.accessToken}`,
        ),
      ).toBe(true);

      const update = (...settings: string[]) => ["update-channel", "--channel", channel.id, ...settings];
      const rejected = await adminFailure(...update("--setting", "access_token=EAAG-rotated-wrong"));
      expect(rejected.error.code).toBe("credentials_rejected");
      const unchecked = await admin(...update("--setting", "access_token=EAAG-rotated", "--no-check"));
      expect(unchecked.channel).toMatchObject({ id: channel.id, status: "active" });
      const missing = await adminFailure("update-channel", "--channel", "chn_nope", "--setting", "a=b");
      expect(missing.error.code).toBe("channel_not_found");

      const disconnected = await admin("disconnect-channel", "--channel", channel.id, "--reason", "Number ported");
      expect(disconnected.channel).toMatchObject({ status: "disconnected", status_reason: "Number ported" });
      const reconnected = await admin("reconnect-channel", "--channel", channel.id);
      expect(reconnected.channel).toMatchObject({ status: "active", status_reason: null });
      expect(await listed()).toHaveLength(1);
    } finally {
      adminEnv = {};
      await simulator.close();
    }
  });

  it("refuses bad input with one JSON error object and a non-zero exit", async () => {
    const failed = await adminFailure("create-key", "--org", "org_nope", "--env", "live");
    expect(failed.error.code).toBe("organization_not_found");
  });

  it("admin starts the embedded database by itself when `pnpm start` is not running", async () => {
    const exited = new Promise((resolve) => server.once("exit", resolve));
    server.kill("SIGTERM");
    await exited;
    const created = await admin("create-org", "--name", "Offline");
    const listed = await admin("list-keys", "--org", created.organization.id);
    expect(listed.keys).toHaveLength(2);
  });
});
