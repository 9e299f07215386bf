// The young generation's "promoting state" outside Parley (bench/notebook.md, 2026-11-29,
// evening): an express 5 route reading a page of 25 rows with postgres.js, loaded by 50
// connections after an idle moment, with the server's garbage collections traced.
//
//   node bench/promotion.mjs [runs] [variant...]
//
// Variants: `noexpress` (node:http calls the same handler), `nodb` (rows built in JS after a
// 1 ms timer), `nullrows` (the handler drops its rows at its end). Prints, per run, the MB
// promoted per scavenge during the load: about 0.1 out of the state, 4 to 6 in it.
import { spawn } from "node:child_process";
import http from "node:http";
import { createRequire } from "node:module";

const fromBench = createRequire(import.meta.url);
const fromApi = createRequire(new URL("../apps/api/package.json", import.meta.url));
const PORT = 4566;

if (process.argv[2] === "--server") await serve(process.argv.slice(3));
else await drive(Number(process.argv[2] ?? 3), process.argv.slice(3));

async function drive(runs, variants) {
  const autocannon = fromBench("autocannon");
  const { startEmbeddedDatabase } = await import("../packages/db/dist/index.js");
  const { mkdtemp } = await import("node:fs/promises");
  const { tmpdir } = await import("node:os");
  const db = await startEmbeddedDatabase(await mkdtemp(`${tmpdir()}/parley-promotion-`));
  try {
    for (let run = 1; run <= runs; run++) {
      const args = [
        "--trace-gc-nvp",
        "--max-semi-space-size=32",
        new URL(import.meta.url).pathname,
        "--server",
        ...variants,
      ];
      const child = spawn(process.execPath, args, {
        env: { ...process.env, DATABASE_URL: db.url },
        stdio: ["ignore", "pipe", "inherit"],
      });
      let output = "";
      child.stdout.on("data", (chunk) => {
        output += chunk;
      });
      while (!output.includes("listening")) await new Promise((resolve) => setTimeout(resolve, 100));
      const url = `http://127.0.0.1:${PORT}/page`;
      for (let i = 0; i < 200; i++) await fetch(url).then((response) => response.arrayBuffer());
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const start = output.length;
      const load = await autocannon({ url, connections: 50, duration: 6 });
      child.kill();
      await new Promise((resolve) => child.once("exit", resolve));
      const scavenges = output
        .slice(start)
        .split("\n")
        .filter((line) => line.includes("gc=s "))
        .map((line) => Number(line.match(/ promoted=(\d+)/)?.[1] ?? 0));
      const steady = scavenges.slice(Math.floor(scavenges.length / 4));
      const promoted = steady.reduce((sum, bytes) => sum + bytes, 0) / Math.max(1, steady.length) / 1e6;
      console.log(
        `run ${run} [${variants.join(" ") || "as is"}]: ${Math.round(load.requests.average)} pages/s, p99 ${load.latency.p99} ms, ${promoted.toFixed(2)} MB promoted per scavenge`,
      );
    }
  } finally {
    await db.stop();
  }
}

async function serve(variants) {
  const express = fromApi("express");
  const postgres = (await import(fromApi.resolve("postgres"))).default;
  const sql = postgres(process.env.DATABASE_URL, { max: 10, onnotice: () => {} });
  await sql`create table if not exists promotion_page (id text primary key, body text, created_at timestamptz default now())`;
  await sql`truncate promotion_page`;
  for (let i = 0; i < 25; i++)
    await sql`insert into promotion_page (id, body) values (${`msg_${i}`}, ${"Hello there, a message of some length. ".repeat(8)})`;
  const fakeRows = () =>
    new Promise((resolve) =>
      setTimeout(
        () =>
          resolve(
            Array.from({ length: 25 }, (_, i) => [`msg_${i}`, `Hello ${i}. `.repeat(30), new Date().toISOString()]),
          ),
        1,
      ),
    );
  const handler = async (_req, res) => {
    let rows = variants.includes("nodb")
      ? await fakeRows()
      : await sql
          .unsafe("select id, body, created_at from promotion_page order by created_at desc limit 26", [], {
            prepare: true,
          })
          .values();
    const body = Buffer.from(
      JSON.stringify({ object: "list", data: rows.slice(0, 25).map(([id, text, at]) => ({ id, text, at })) }),
    );
    if (variants.includes("nullrows")) rows = null;
    res.setHeader("content-type", "application/json");
    res.setHeader("content-length", body.length);
    res.end(body);
  };
  const app = express();
  app.get("/page", handler);
  // As Parley's createExpressServer makes them (apps/api/src/http/express-server.ts).
  function Request(socket) {
    http.IncomingMessage.call(this, socket);
  }
  Request.prototype = app.request;
  function Response(req, options) {
    http.ServerResponse.call(this, req, options);
  }
  Response.prototype = app.response;
  const server = variants.includes("noexpress")
    ? http.createServer(handler)
    : http.createServer({ IncomingMessage: Request, ServerResponse: Response }, app);
  server.listen(PORT, "127.0.0.1", () => process.stdout.write("listening\n"));
  process.on("SIGTERM", () => process.exit(0));
}
