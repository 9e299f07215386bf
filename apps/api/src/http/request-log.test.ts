import type { AddressInfo } from "node:net";
import express from "express";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestId } from "./request-id.js";
import { requestLog } from "./request-log.js";

describe("request log", () => {
  const lines: Record<string, unknown>[] = [];
  let baseUrl = "";
  let close: () => Promise<void> = async () => {};

  beforeAll(async () => {
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const app = express();
    app.use(requestId);
    app.use(requestLog(app, logger));
    app.get("/things/:id", (req, res) => {
      req.log.info("looked at a thing");
      res.json({ ok: true });
    });
    const server = app.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = () => new Promise((resolve) => server.close(() => resolve()));
  });
  afterAll(() => close());

  it("gives each request its own child logger, with its id, method and path but never its query", async () => {
    const first = await fetch(`${baseUrl}/things/1?secret=s3cr3t`);
    const second = await fetch(`${baseUrl}/things/2`);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    const firstId = first.headers.get("x-parley-request-id");
    const secondId = second.headers.get("x-parley-request-id");
    const looked = lines.filter((line) => line.msg === "looked at a thing");
    expect(looked.map((line) => line.req)).toEqual([
      { id: firstId, method: "GET", path: "/things/1" },
      { id: secondId, method: "GET", path: "/things/2" },
    ]);
    const completed = lines.filter((line) => line.msg === "request completed");
    expect(completed.map((line) => [(line.req as { id: string }).id, line.res])).toEqual([
      [firstId, { status: 200 }],
      [secondId, { status: 200 }],
    ]);
    expect(JSON.stringify(lines)).not.toContain("s3cr3t");
  });
});
