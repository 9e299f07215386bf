import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The built `parley` as a real process (no TTY: stdout is a pipe) against the real Parley
 * (apps/api/dist/main.js on the embedded PostgreSQL in a temporary directory, or DATABASE_URL).
 */
const cli = path.resolve(import.meta.dirname, "../dist/index.js");
const mainScript = path.resolve(import.meta.dirname, "../../api/dist/main.js");

let server: ChildProcess;
let dataDir: string;
let configHome: string;
let key = "";
let baseUrl = "";
let output = "";

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with the test key in the environment unless `env` says otherwise. */
function parley(args: string[], env: Record<string, string | undefined> = {}): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [cli, ...args],
      {
        env: {
          ...process.env,
          PARLEY_API_KEY: key,
          PARLEY_BASE_URL: baseUrl,
          XDG_CONFIG_HOME: configHome,
          NO_COLOR: undefined,
          ...env,
        },
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

async function json<T>(args: string[]): Promise<T> {
  const result = await parley([...args, "--json"]);
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as T;
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "parley-cli-"));
  configHome = await mkdtemp(path.join(tmpdir(), "parley-cli-config-"));
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}/v1`;
  server = spawn(process.execPath, [mainScript], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: "warn",
      SANDBOX_DELIVERY_DELAY_MS: "0",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  server.stdout?.on("data", (chunk) => (output += chunk));
  server.stderr?.on("data", (chunk) => (output += chunk));
  const deadline = Date.now() + 240_000;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`Parley exited:\n${output}`);
    const found = /test key:\s+(parley_test_\S+)/.exec(output)?.[1];
    if (found) {
      key = found;
      break;
    }
    if (Date.now() > deadline) throw new Error(`Parley did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
});

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.once("exit", resolve));
    server.kill("SIGTERM");
    await exited;
  }
  await rm(dataDir, { recursive: true, force: true });
  await rm(configHome, { recursive: true, force: true });
});

/** Runs the CLI under a pseudo-terminal (util-linux `script`), where tables, colours and the progress bar appear. */
function underTerminal(args: string[], env: Record<string, string | undefined> = {}): Promise<Result> {
  const command = [process.execPath, cli, ...args].map((word) => `'${word.replace(/'/g, "'\\''")}'`).join(" ");
  return new Promise((resolve) => {
    execFile(
      "script",
      ["-qec", command, "/dev/null"],
      { env: { ...process.env, PARLEY_API_KEY: key, PARLEY_BASE_URL: baseUrl, NO_COLOR: undefined, ...env } },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe("parley against a real Parley", () => {
  it("on a terminal: aligned table with colours, none with NO_COLOR, and an upload progress bar", async () => {
    const table = await underTerminal(["channels", "list"]);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain("\u001b[1mID  ");
    expect(table.stdout).toMatch(/chn_\w+ {2,}whatsapp {2,}Sandbox WhatsApp/);
    const plain = await underTerminal(["channels", "list"], { NO_COLOR: "1" });
    expect(plain.stdout).not.toContain("\u001b[");
    expect(plain.stdout).toMatch(/^ID {2,}TYPE/m);
    const file = path.join(dataDir, "bar.txt");
    await writeFile(file, "progress\n");
    const upload = await underTerminal(["uploads", "create", file]);
    expect(upload.code).toBe(0);
    expect(upload.stdout).toContain("bar.txt [##############################] 100%");
  });

  it("whoami shows organization, environment and scopes, never the key", async () => {
    const result = await parley(["whoami"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(/^organization\t.+\(org_/m);
    expect(result.stdout).toMatch(/^environment\ttest$/m);
    expect(result.stdout).toMatch(/^scopes\t.*contacts:read/m);
    expect(result.stdout).not.toContain(key);
    expect(result.stdout).not.toContain(key.slice(-4));
  });

  it("contacts create, list and get, as JSON and as tab-separated text", async () => {
    const contact = await json<{ id: string; name: string }>([
      "contacts",
      "create",
      "--name",
      "Ada Lovelace",
      "--email",
      "ada@example.com",
    ]);
    expect(contact.id).toMatch(/^cnt_/);
    expect(contact.name).toBe("Ada Lovelace");

    const list = await parley(["contacts", "list", "--limit", "10"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`^${contact.id}\tAda Lovelace\tada@example.com\t`, "m"));

    const listed = await json<{ object: string; data: { id: string }[] }>(["contacts", "list", "--all"]);
    expect(listed.object).toBe("list");
    expect(listed.data.map((c) => c.id)).toContain(contact.id);

    const got = await parley(["contacts", "get", contact.id]);
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(new RegExp(`^id\\t${contact.id}$`, "m"));
    expect(got.stdout).toMatch(/^email\tada@example\.com$/m);
  });

  it("conversations create, then messages send --text and --file", async () => {
    const contact = await json<{ id: string }>(["contacts", "create", "--name", "Grace"]);
    const channels = await parley(["channels", "list", "--type", "whatsapp"]);
    const channel = channels.stdout.split("\t")[0] ?? "";
    expect(channel).toMatch(/^chn_/);
    const conversation = await json<{ id: string; status: string }>([
      "conversations",
      "create",
      "--contact",
      contact.id,
      "--channel",
      channel,
    ]);
    expect(conversation.status).toBe("open");

    const text = await json<{ type: string; text: string; status: string }>([
      "messages",
      "send",
      "--conversation",
      conversation.id,
      "--text",
      "Hello from the CLI",
    ]);
    expect(text).toMatchObject({ type: "text", text: "Hello from the CLI" });

    const file = path.join(dataDir, "notes.txt");
    await writeFile(file, "a small document\n");
    const media = await json<{ type: string; attachment: { filename: string; content_type: string } }>([
      "messages",
      "send",
      "--conversation",
      conversation.id,
      "--file",
      file,
    ]);
    expect(media.type).toBe("document");
    expect(media.attachment).toMatchObject({ filename: "notes.txt", content_type: "text/plain" });

    const messages = await parley(["messages", "list", "--conversation", conversation.id]);
    expect(messages.code).toBe(0);
    expect(messages.stdout.trim().split("\n")).toHaveLength(2);
  });

  it("an API error exits 1 with its code and request id on stderr", async () => {
    const result = await parley(["contacts", "get", "cnt_01JAAAAAAAAAAAAAAAAAAAAAAA"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^error: resource_not_found: .+ \(request req_\w+\)$/m);
  });

  it("a usage error exits 2", async () => {
    const unknown = await parley(["contacts", "frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
    const missing = await parley(["messages", "send", "--conversation", "conv_x"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("error: give --text or --file");
    const noKey = await parley(["contacts", "list"], { PARLEY_API_KEY: undefined });
    expect(noKey.code).toBe(2);
  });

  it("a network error exits 3", async () => {
    const port = await freePort();
    const result = await parley(["contacts", "list"], { PARLEY_BASE_URL: `http://127.0.0.1:${port}/v1` });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/^error: connection_error: Could not reach Parley/m);
  });

  it("login saves a 0600 profile that --profile then uses", async () => {
    const login = await parley(["login", "--profile", "ci", "--key", key], { PARLEY_API_KEY: undefined });
    expect(login.stderr).toBe("");
    expect(login.code).toBe(0);
    const file = path.join(configHome, "parley", "config.json");
    expect(login.stdout).toContain(file);
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    const env = { PARLEY_API_KEY: undefined, PARLEY_BASE_URL: undefined };
    const whoami = await parley(["whoami", "--profile", "ci"], env);
    expect(whoami.code).toBe(0);
    expect(whoami.stdout).toMatch(/^environment\ttest$/m);

    const missing = await parley(["whoami", "--profile", "nope"], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no profile "nope"');
  });

  it("every command's help has an example, and completion scripts print", async () => {
    const help = await parley(["contacts", "create", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Example:\n  parley contacts create");
    const bash = await parley(["completion", "bash"]);
    expect(bash.code).toBe(0);
    expect(bash.stdout).toContain("complete -F _parley parley");
    expect(bash.stdout).toContain('"conversations") words="list get create');
  });
});

describe("the remaining resource commands", () => {
  it("tags create, update, list and delete", async () => {
    const tag = await json<{ id: string; name: string }>(["tags", "create", "vip", "--color", "#FFAA00"]);
    expect(tag.name).toBe("vip");
    const renamed = await json<{ name: string; color: string }>(["tags", "update", tag.id, "--name", "gold"]);
    expect(renamed).toMatchObject({ name: "gold", color: "#FFAA00" });
    const list = await parley(["tags", "list"]);
    expect(list.stdout).toContain(tag.id);
    const deleted = await json<{ deleted: boolean }>(["tags", "delete", tag.id]);
    expect(deleted.deleted).toBe(true);
    expect((await parley(["tags", "list"])).stdout).not.toContain(tag.id);
  });

  it("custom-fields create and list, teams create, list and members, users list, channels get", async () => {
    const field = await json<{ key: string }>(["custom-fields", "create", "Date of birth"]);
    expect(field.key).toBe("date_of_birth");
    expect((await parley(["custom-fields", "list"])).stdout).toContain("date_of_birth");
    const team = await json<{ id: string }>(["teams", "create", "Support"]);
    expect((await parley(["teams", "list"])).stdout).toContain(team.id);
    const members = await parley(["teams", "members", team.id]);
    expect(members).toMatchObject({ code: 0, stdout: "" });
    expect((await parley(["users", "list"])).code).toBe(0);
    const channel = (await parley(["channels", "list", "--type", "webchat"])).stdout.split("\t")[0] ?? "";
    const shown = await json<{ type: string; capabilities: { message_types: string[] } }>(["channels", "get", channel]);
    expect(shown).toMatchObject({ type: "webchat", capabilities: { message_types: ["text"] } });
  });

  it("conversations update, close, reopen, notes, tag and untag", async () => {
    const contact = await json<{ id: string }>(["contacts", "create", "--name", "Lin"]);
    const conversation = await json<{ id: string }>(["conversations", "create", "--contact", contact.id]);
    expect((await json<{ status: string }>(["conversations", "close", conversation.id])).status).toBe("closed");
    expect((await json<{ status: string }>(["conversations", "reopen", conversation.id])).status).toBe("open");
    const again = await parley(["conversations", "reopen", conversation.id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("invalid_state");
    await json(["conversations", "notes", conversation.id, "--add", "Called back"]);
    expect((await parley(["conversations", "notes", conversation.id])).stdout).toContain("Called back");
    const tag = await json<{ id: string }>(["tags", "create", "followup"]);
    await json(["conversations", "tag", conversation.id, tag.id]);
    expect((await json<{ tags: string[] }>(["contacts", "get", contact.id])).tags).toEqual([tag.id]);
    await json(["conversations", "untag", conversation.id, tag.id]);
    expect((await json<{ tags: string[] }>(["contacts", "get", contact.id])).tags).toEqual([]);
  });

  it("uploads create and attachments download give back the same bytes", async () => {
    const file = path.join(dataDir, "report.txt");
    await writeFile(file, "quarterly report\n");
    const attachment = await json<{ id: string; filename: string }>(["uploads", "create", file]);
    expect(attachment.filename).toBe("report.txt");
    const downloaded = await parley(["attachments", "download", attachment.id]);
    expect(downloaded).toMatchObject({ code: 0, stdout: "quarterly report\n" });
  });

  it("webhooks create, test, deliveries and delete; events list and get", async () => {
    const receiver = createServer((_req, res) => res.writeHead(204).end());
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
      const endpoint = await json<{ id: string; secret: string }>([
        "webhooks",
        "create",
        url,
        "--events",
        "contact.created",
      ]);
      expect(endpoint.secret).toMatch(/^whsec_[0-9A-Za-z]{32,}$/);
      const attempt = await json<{ id: string; status: string; event_type: string; event_id: string }>([
        "webhooks",
        "test",
        endpoint.id,
      ]);
      expect(attempt).toMatchObject({ status: "succeeded", event_type: "webhook.test" });
      const deliveries = (await parley(["webhooks", "deliveries", endpoint.id])).stdout;
      expect(deliveries).toContain(attempt.id);
      expect(deliveries).toContain(attempt.event_id);
      const events = await json<{ data: { id: string; type: string }[] }>(["events", "list", "--limit", "5"]);
      const first = events.data[0];
      if (!first) throw new Error("no events");
      expect((await json<{ id: string }>(["events", "get", first.id])).id).toBe(first.id);
      expect((await json<{ deleted: boolean }>(["webhooks", "delete", endpoint.id])).deleted).toBe(true);
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
});

describe("parley listen", () => {
  it("forwards each event signed to the local address, and deletes its endpoint on Ctrl-C", async () => {
    const forwarded: { body: string; signature: string | undefined }[] = [];
    const local = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        forwarded.push({ body, signature: req.headers["x-parley-signature"] as string | undefined });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => local.listen(0, "127.0.0.1", resolve));
    const forwardTo = `http://127.0.0.1:${(local.address() as AddressInfo).port}/hooks`;
    const listener = spawn(
      process.execPath,
      [cli, "listen", "--forward-to", forwardTo, "--events", "contact.created"],
      {
        env: { ...process.env, PARLEY_API_KEY: key, PARLEY_BASE_URL: baseUrl, XDG_CONFIG_HOME: configHome },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stderr = "";
    let stdout = "";
    listener.stderr?.on("data", (chunk) => (stderr += chunk));
    listener.stdout?.on("data", (chunk) => (stdout += chunk));
    try {
      await until(() => /Ready: endpoint (wh_[0-9A-Z]+)/.exec(stderr)?.[1], "listen to be ready");
      const endpointId = /Ready: endpoint (wh_[0-9A-Z]+)/.exec(stderr)?.[1] ?? "";
      const contact = await json<{ id: string }>(["contacts", "create", "--name", "Listened"]);
      const delivery = await until(
        () => forwarded.find((entry) => entry.body.includes(contact.id)),
        "the forwarded event",
      );
      expect(delivery.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}/);
      expect(stdout).toContain("contact.created");

      // "close", not "exit": the last lines of stderr arrive before the streams close.
      const closed = new Promise((resolve) => listener.once("close", resolve));
      listener.kill("SIGINT");
      await closed;
      expect(stderr, `${stderr} [exit ${listener.exitCode} ${listener.signalCode}]`).toContain(
        `deleted endpoint ${endpointId}`,
      );
      const endpoints = await parley(["webhooks", "list"]);
      expect(endpoints.code).toBe(0);
      expect(endpoints.stdout).not.toContain(endpointId);
    } finally {
      if (listener.exitCode === null) listener.kill("SIGKILL");
      await new Promise((resolve) => local.close(resolve));
    }
  });
});

async function until<T>(read: () => T | undefined, what: string, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
