import type { AddressInfo } from "node:net";
import express from "express";
import { afterEach, expect, test } from "vitest";
import { createExpressServer } from "./express-server.js";

let close: (() => Promise<void>) | undefined;

afterEach(async () => {
  await close?.();
  close = undefined;
});

async function listen(app: express.Express, options = {}) {
  const server = createExpressServer(app, options);
  const prototypesOnArrival: boolean[] = [];
  // Before express handles the request: what Node made it with.
  server.prependListener("request", (req, res) => {
    prototypesOnArrival.push(Object.getPrototypeOf(req) === app.request && Object.getPrototypeOf(res) === app.response);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  close = () => new Promise((resolve) => server.close(() => resolve()));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, prototypesOnArrival };
}

test("requests and responses arrive with the app's prototypes, so express has none to change", async () => {
  const app = express();
  app.get("/things/:id", (req, res) => {
    res.set("x-seen", req.get("x-sent") ?? "none").json({ id: req.params.id, query: req.query });
  });
  const { base, prototypesOnArrival } = await listen(app);

  for (let i = 0; i < 3; i++) {
    const response = await fetch(`${base}/things/${i}?a=b`, { headers: { "x-sent": `hello ${i}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-seen")).toBe(`hello ${i}`);
    expect(await response.json()).toEqual({ id: String(i), query: { a: "b" } });
  }
  expect(prototypesOnArrival).toEqual([true, true, true]);
});

test("the server's own options still hold, and a request body is read as before", async () => {
  const app = express();
  app.post("/echo", express.json(), (req, res) => {
    res.status(201).json(req.body);
  });
  const { server, base } = await listen(app, { requestTimeout: 1_234 });
  expect(server.requestTimeout).toBe(1_234);

  const response = await fetch(`${base}/echo`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ text: "déjà vu" }),
  });
  expect(response.status).toBe(201);
  expect(await response.json()).toEqual({ text: "déjà vu" });
});
