import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * As a user outside this repository: the published packages (`pnpm pack` of @parley/schema,
 * @parley/webhook-verify, @parley/sdk and @parley/cli) installed from their tarballs into an
 * empty npm project, with no workspace link, pulling only published dependencies; then
 * imported, required, type-checked, bundled for the browser, linted (publint, arethetypeswrong)
 * and used against a running Parley, the three READMEs' examples exactly as written.
 */
const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../../..");
const bin = (name: string) => path.join(root, "node_modules", ".bin", name);
const packages = ["packages/schema", "packages/webhook-verify", "packages/sdk", "apps/cli"];
const pnpm = ["-y", "pnpm@10.34.8"];

/** Targets of issue 22, minified and gzipped in a browser bundle. */
const SIZE_TARGETS = { sdk: 40_000, verifier: 15_000 };

let work: string;
let project: string;
let tarballs: string[];
let server: ChildProcess;
let baseUrl = "";
let testKey = "";
let serverOutput = "";

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

async function until<T>(read: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The environment of a user's shell: nothing of this workspace's. */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^(VITEST|TURBO|npm_|PNPM|NODE_OPTIONS$|NODE_PATH$)/i.test(name)) env[name] = value;
  }
  return { ...env, NO_COLOR: "1", PARLEY_API_KEY: testKey, PARLEY_BASE_URL: baseUrl, ...extra };
}

function inProject(command: string, args: string[], extra: Record<string, string> = {}) {
  return run(command, args, { cwd: project, env: userEnv(extra), maxBuffer: 16 * 1024 * 1024 });
}

/** `@parley/sdk` for `.../parley-sdk-1.0.0.tgz`. */
function packageNameOf(tarball: string): string {
  const name = /^parley-(.+)-\d+\.\d+\.\d+.*\.tgz$/.exec(path.basename(tarball))?.[1];
  if (!name) throw new Error(`not a package tarball: ${tarball}`);
  return `@parley/${name}`;
}

/** The first fenced block of `language` in a package's README: the example a user copies. */
async function readmeExample(packageDir: string, language: string): Promise<string> {
  const readme = await readFile(path.join(root, packageDir, "README.md"), "utf8");
  const block = new RegExp("```" + language + "\\n([\\s\\S]*?)```").exec(readme)?.[1];
  if (!block) throw new Error(`${packageDir}/README.md has no \`\`\`${language} block`);
  return block;
}

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), "parley-consumer-"));
  const packs = path.join(work, "packs");
  await mkdir(packs);
  for (const dir of packages) {
    await run("npx", [...pnpm, "pack", "--pack-destination", packs], { cwd: path.join(root, dir) });
  }
  tarballs = (await readdir(packs)).map((name) => path.join(packs, name));
  project = path.join(work, "project");
  await mkdir(project);
  await writeFile(
    path.join(project, "package.json"),
    JSON.stringify({ name: "consumer", version: "1.0.0", private: true, type: "module" }),
  );
  await inProject("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", ...tarballs]);

  // A running Parley (API and worker on an embedded PostgreSQL), as `pnpm start` gives it.
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}/v1`;
  server = spawn(process.execPath, [path.join(root, "apps/api/dist/main.js")], {
    env: {
      ...process.env,
      DATA_DIR: path.join(work, "data"),
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: "warn",
      PARLEY_WEBHOOK_FAST_RETRY: "1",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  server.stdout?.on("data", (chunk) => {
    serverOutput += chunk;
  });
  server.stderr?.on("data", (chunk) => {
    serverOutput += chunk;
  });
  testKey = await until(
    () => {
      if (server.exitCode !== null) throw new Error(`Parley exited:\n${serverOutput}`);
      return /test key:\s+(parley_test_\S+)/.exec(serverOutput)?.[1];
    },
    "Parley to start",
    240_000,
  );
}, 300_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.once("exit", resolve));
    server.kill("SIGTERM");
    await exited;
  }
  if (work) await rm(work, { recursive: true, force: true });
});

describe("installed from the packed tarballs into a plain npm project", () => {
  it("pulls only published packages: no workspace protocol, no link, no private package", async () => {
    for (const tarball of tarballs) {
      const { stdout } = await run("tar", ["-xzOf", tarball, "package/package.json"]);
      const manifest = JSON.parse(stdout) as { private?: boolean; dependencies?: Record<string, string> };
      expect(manifest.private, tarball).not.toBe(true);
      for (const version of Object.values(manifest.dependencies ?? {}))
        expect(version).not.toMatch(/workspace:|link:|file:/);
    }
    const { stdout } = await inProject("npm", ["ls", "--all", "--parseable"]);
    expect(stdout).not.toContain(root);
  });

  // Until the packages are on the registry, overrides (pnpm) and resolutions (yarn) stand in
  // for it: the tarballs' dependencies on each other resolve to the tarballs.
  it.each([
    ["pnpm", ["-y", "pnpm@10.34.8", "install"]],
    ["yarn", ["-y", "yarn@1.22.22", "install", "--silent", "--no-lockfile"]],
  ])("installs with %s as well", async (manager, install) => {
    const dir = path.join(work, `with-${manager}`);
    await mkdir(dir);
    const local = Object.fromEntries(tarballs.map((tarball) => [packageNameOf(tarball), `file:${tarball}`]));
    await writeFile(
      path.join(dir, "package.json"),
      JSON.stringify({
        name: `with-${manager}`,
        private: true,
        type: "module",
        dependencies: local,
        ...(manager === "pnpm" ? { pnpm: { overrides: local } } : { resolutions: local }),
      }),
    );
    await run("npx", install, { cwd: dir, env: userEnv(), maxBuffer: 16 * 1024 * 1024 }).catch(
      (error: { stdout?: string; stderr?: string }) => {
        throw new Error(`${manager} install failed:\n${error.stdout}\n${error.stderr}`);
      },
    );
    await writeFile(
      path.join(dir, "check.mjs"),
      `import { Parley } from "@parley/sdk"; import { constructEvent } from "@parley/webhook-verify";
console.log(typeof new Parley({ apiKey: "k" }).contacts.create, typeof constructEvent);`,
    );
    const { stdout } = await run("node", ["check.mjs"], { cwd: dir, env: userEnv() });
    expect(stdout.trim()).toBe("function function");
  });

  it("imports as ESM and requires as CommonJS", async () => {
    await writeFile(
      path.join(project, "esm.mjs"),
      `import { Parley, ParleyError } from "@parley/sdk";
import { Parley as NodeParley } from "@parley/sdk/node";
import { constructEvent, verifySignature } from "@parley/webhook-verify";
import { routes } from "@parley/schema/runtime";
import { api } from "@parley/schema";
console.log([typeof Parley, typeof ParleyError, Parley === NodeParley, typeof constructEvent, typeof verifySignature, routes.contacts.create.path, api.contacts.create.method].join(" "));`,
    );
    await writeFile(
      path.join(project, "cjs.cjs"),
      `const { Parley } = require("@parley/sdk");
const { constructEvent } = require("@parley/webhook-verify");
const { routes } = require("@parley/schema/runtime");
console.log([typeof Parley, typeof constructEvent, routes.contacts.create.path].join(" "));`,
    );
    expect((await inProject("node", ["esm.mjs"])).stdout.trim()).toBe(
      "function function true function function /contacts post",
    );
    expect((await inProject("node", ["cjs.cjs"])).stdout.trim()).toBe("function function /contacts");
  });

  it.each(["node16", "bundler"])("type-checks with moduleResolution %s (declarations included)", async (resolution) => {
    await writeFile(
      path.join(project, "consumer.ts"),
      `import { Parley, type Message, NotFoundError } from "@parley/sdk";
import { constructEvent, type ParleyEvent } from "@parley/webhook-verify";

export async function main(parley: Parley, body: string, header: string): Promise<string> {
  const contact = await parley.contacts.create({ name: "Ada", email: "ada@example.com" });
  const name: string | null = contact.name;
  // @ts-expect-error a field the API does not have
  await parley.contacts.create({ nickname: "Ada" });
  const message: Message = await parley.messages.send({ conversation_id: "conv_1", type: "text", text: "Hi" });
  const event: ParleyEvent = await constructEvent(body, header, "whsec_x");
  // A union discriminated by type: each event's data is typed.
  if (event.type === "message.received") {
    const text: string | null = event.data.message.text;
    const conversationId: string = event.data.conversation.id;
    void [text, conversationId];
  }
  // @ts-expect-error contact events carry no message
  if (event.type === "contact.created") void event.data.message;
  for await (const listed of parley.contacts.list({ limit: 10 })) void listed.id;
  return [name, message.status, event.type, NotFoundError.name].join(" ");
}
`,
    );
    const compilerOptions =
      resolution === "node16"
        ? { module: "node16", moduleResolution: "node16" }
        : { module: "esnext", moduleResolution: "bundler" };
    await writeFile(
      path.join(project, `tsconfig.${resolution}.json`),
      JSON.stringify({
        compilerOptions: {
          ...compilerOptions,
          target: "es2022",
          lib: ["es2022", "dom", "dom.asynciterable"],
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: [],
        },
        files: ["consumer.ts"],
      }),
    );
    const checked = await inProject(bin("tsc"), ["-p", `tsconfig.${resolution}.json`]).catch(
      (error: { stdout: string }) => error,
    );
    expect("stdout" in checked ? checked.stdout : "").toBe("");
  });

  it("bundles the SDK and the verifier for the browser, within their size targets", async () => {
    const sizes: Record<string, number> = {};
    for (const [name, source] of [
      ["sdk", `import { Parley } from "@parley/sdk"; globalThis.parley = new Parley({ apiKey: "k" });`],
      ["verifier", `import { constructEvent } from "@parley/webhook-verify"; globalThis.verify = constructEvent;`],
    ] as const) {
      const result = await build({
        stdin: { contents: source, resolveDir: project, loader: "js" },
        bundle: true,
        minify: true,
        format: "esm",
        platform: "browser",
        write: false,
        logLevel: "silent",
      });
      expect(result.errors).toEqual([]);
      const code = result.outputFiles[0]?.contents ?? new Uint8Array();
      expect(new TextDecoder().decode(code)).not.toMatch(/node:fs|from"fs"/);
      sizes[name] = gzipSync(code, { level: 9 }).length;
    }
    process.stdout.write(
      `browser bundles, minified and gzipped: @parley/sdk ${sizes.sdk} bytes (target <= ${SIZE_TARGETS.sdk}), @parley/webhook-verify ${sizes.verifier} bytes (target <= ${SIZE_TARGETS.verifier})\n`,
    );
    expect(sizes.sdk).toBeLessThanOrEqual(SIZE_TARGETS.sdk);
    expect(sizes.verifier).toBeLessThanOrEqual(SIZE_TARGETS.verifier);
  });

  it("passes publint and arethetypeswrong, every tarball", async () => {
    for (const tarball of tarballs) {
      const lint = await run(bin("publint"), ["run", tarball, "--strict"], { env: userEnv() });
      expect(lint.stdout, tarball).toContain("All good");
      if (tarball.includes("parley-cli-")) continue; // a command, not a library: no types to check
      // node10 (TypeScript's pre-exports resolution) cannot see subpath exports: not supported.
      await run(bin("attw"), [tarball, "--profile", "node16", "--format", "ascii"], { env: userEnv() });
    }
  });
});

describe("the READMEs' examples, against a running Parley", () => {
  it("@parley/sdk: the example runs and sends", async () => {
    await writeFile(path.join(project, "sdk-example.mjs"), await readmeExample("packages/sdk", "js"));
    const { stdout } = await inProject("node", ["sdk-example.mjs"]);
    expect(stdout.trim()).toBe("queued");
  });

  it("@parley/schema: the example runs", async () => {
    await writeFile(path.join(project, "schema-example.mjs"), await readmeExample("packages/schema", "js"));
    const { stdout } = await inProject("node", ["schema-example.mjs"]);
    expect(stdout).toMatch(/^post \/contacts Ada Lovelace\n\d+ error codes\n$/);
  });

  it("@parley/webhook-verify: the example server verifies a real delivery and refuses a forged one", async () => {
    await writeFile(path.join(project, "verify-example.mjs"), await readmeExample("packages/webhook-verify", "js"));
    const port = await freePort();
    const { Parley } = (await import(path.join(project, "node_modules/@parley/sdk/dist/node.js"))) as {
      Parley: new (options: { apiKey: string; baseUrl: string }) => any;
    };
    const parley = new Parley({ apiKey: testKey, baseUrl });
    const endpoint = await parley.webhooks.create({ url: `http://127.0.0.1:${port}/`, events: ["contact.created"] });
    const example = spawn("node", ["verify-example.mjs"], {
      cwd: project,
      env: userEnv({ PORT: String(port), PARLEY_WEBHOOK_SECRET: endpoint.secret }),
    });
    let output = "";
    example.stdout.on("data", (chunk) => {
      output += chunk;
    });
    try {
      await until(
        async () =>
          (await fetch(`http://127.0.0.1:${port}/`, { method: "POST", body: "{}" }).catch(() => undefined))?.status,
        "the example server",
      ).then((status) => expect(status).toBe(400));
      const contact = await parley.contacts.create({ name: "Grace" });
      const events = await parley.events.list({ type: "contact.created" });
      const event = events.data.find(
        (item: { data: { contact: { id: string } } }) => item.data.contact.id === contact.id,
      );
      await until(() => (output.includes(`verified contact.created ${event.id}`) ? true : undefined), "the delivery");
    } finally {
      example.kill();
    }
  });

  it("@parley/cli: installs globally, runs as parley, and every line of its example works", async () => {
    const prefix = path.join(work, "global");
    const cli = tarballs.find((tarball) => tarball.includes("parley-cli-")) ?? "";
    // The same dependencies as the project's install above: from npm's cache, without asking
    // the registry again. The registry is this step's one outside dependency, and one run of
    // this test (5 s alone) once ran past its 120 s on a loaded machine, the step not seen.
    await inProject("npm", [
      "install",
      "-g",
      "--prefix",
      prefix,
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      ...tarballs,
    ]);
    const globalBin = path.join(prefix, "bin");
    expect((await inProject(path.join(globalBin, "parley"), ["--help"])).stdout).toContain("Usage: parley");
    expect((await inProject("npx", ["--no-install", "parley", "--help"])).stdout).toContain("Usage: parley");
    expect((await inProject("npx", ["--no-install", "@parley/cli", "--help"])).stdout).toContain("Usage: parley");
    expect(cli).not.toBe("");

    const lines = (await readmeExample("apps/cli", "sh"))
      .split("\n")
      .map((line) => line.replace(/\s+#.*$/, "").trim())
      .filter((line) => line.startsWith("parley "));
    expect(lines.length).toBeGreaterThanOrEqual(3);
    const env = { PATH: `${globalBin}${path.delimiter}${process.env.PATH}` };
    for (const line of lines) {
      const { stdout } = await inProject("sh", ["-c", line], env);
      expect(stdout.trim(), line).not.toBe("");
    }
    const created = await inProject("sh", ["-c", "parley --json contacts create --name 'Ada Lovelace'"], env);
    expect(JSON.parse(created.stdout).name).toBe("Ada Lovelace");
  });
});
