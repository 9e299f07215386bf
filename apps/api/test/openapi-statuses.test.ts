import net from "node:net";
import { MAX_UPLOAD_BYTES, type Operation, operations } from "@parley/schema";
import { beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../src/organizations/api-keys.js";
import { as, call, createTestOrganization, type TestOrganization, useTestApi } from "./harness.js";

/**
 * Every status the server answers on a route is one the OpenAPI document declares for that
 * path and method (issue 39, item 8: a black-box suite behind Prism's validation proxy met
 * one that was not). Walks the catalogue and provokes, on each operation, what the
 * middleware answers for its kind of route.
 */

const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "1000000" });

type Responses = Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
let document: { paths: Record<string, Record<string, { responses: Responses }>> };
let org: TestOrganization;
let noScope: string;
let emailChannelId: string;

beforeAll(async () => {
  document = (await call(api, "GET", "/openapi.json")).body;
  org = await createTestOrganization(api);
  noScope = (await createApiKey(api.context.db, { organizationId: org.id, environment: "test", scopes: [] })).key;
  const channels = await as(api, org.test).get("/channels", { query: { type: "email" } });
  emailChannelId = channels.body.data[0].id;
});

/** The path with an id that matches nothing, except the sandbox email channel (its body is read). */
function concretePath(operation: Operation): string {
  return operation.path.replace(/\{(\w+)\}/g, (_, name: string) =>
    name === "channel_id" ? emailChannelId : "x_unknown",
  );
}

/** The statuses the document declares for an operation. */
function declared(operation: Operation): string[] {
  return Object.keys(document.paths[operation.path]?.[operation.method]?.responses ?? {});
}

/**
 * A request whose head declares a body of `length` bytes, none of which is sent: the
 * status of the answer, which a body over its limit gets before it is read.
 */
function declaredBodyStatus(path: string, method: string, headers: Record<string, string>, length: number) {
  return new Promise<number>((resolve, reject) => {
    const url = new URL(`${api.baseUrl}${path}`);
    const socket = net.connect(Number(url.port), url.hostname);
    let received = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      received += chunk;
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(received)?.[1];
      if (status) {
        socket.destroy();
        resolve(Number(status));
      }
    });
    socket.on("error", reject);
    socket.on("close", () => reject(new Error(`closed with no answer: ${received}`)));
    const head = Object.entries({ ...headers, Host: "x", "Content-Length": String(length) })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("");
    socket.write(`${method.toUpperCase()} ${url.pathname} HTTP/1.1\r\n${head}\r\n`);
  });
}

/** What each kind of route is provoked with, and the status each provocation got. */
async function provoke(operation: Operation): Promise<Record<string, number>> {
  const path = concretePath(operation);
  const method = operation.method.toUpperCase();
  const seen: Record<string, number> = {};
  seen["no key"] = (await call(api, method, path)).status;
  if (operation.scope) seen["a key without the scope"] = (await call(api, method, path, { key: noScope })).status;
  if (operation.testOnly) seen["a live key"] = (await call(api, method, path, { key: org.live, body: {} })).status;
  const body = operation.body ? {} : undefined;
  seen["unknown ids, an empty body"] = (await call(api, method, path, { key: org.test, body })).status;
  const auth = { Authorization: `Bearer ${org.test}` };
  if (method !== "GET") {
    // Read only where the operation takes a body; elsewhere never refused as invalid JSON.
    seen["a body that is not JSON"] = (
      await call(api, method, path, { key: org.test, rawBody: "{", headers: { "content-type": "application/json" } })
    ).status;
  }
  if (operation.body) {
    seen["a JSON body over 1 MB"] = await declaredBodyStatus(
      path,
      method,
      { ...auth, "Content-Type": "application/json" },
      1024 * 1024 + 1,
    );
  }
  if (operation.requestContentType) {
    seen["a body of another type"] = (
      await call(api, method, path, { key: org.test, rawBody: "text", headers: { "content-type": "text/plain" } })
    ).status;
    const type =
      operation.requestContentType === "multipart/form-data" ? "multipart/form-data; boundary=b" : "message/rfc822";
    seen[`a ${operation.requestContentType} body over its size`] = await declaredBodyStatus(
      path,
      method,
      { ...auth, "Content-Type": type },
      // Above the largest limit (an inbound email's 25 MB), whichever the route's.
      Math.max(MAX_UPLOAD_BYTES, 25 * 1024 * 1024) + 1024 * 1024,
    );
  }
  if (operation.idempotent) {
    seen["a malformed Idempotency-Key"] = (
      await call(api, method, path, { key: org.test, body: {}, headers: { "idempotency-key": "k".repeat(256) } })
    ).status;
  }
  return seen;
}

describe("the statuses of every route", () => {
  it("are each declared by the OpenAPI document for that path and method", async () => {
    const undeclared: string[] = [];
    const provoked = new Set<number>();
    for (const operation of operations) {
      for (const [what, status] of Object.entries(await provoke(operation))) {
        provoked.add(status);
        if (!declared(operation).includes(String(status))) {
          undeclared.push(
            `${operation.method.toUpperCase()} ${operation.path} (${operation.id}): ${what} -> ${status}`,
          );
        }
      }
    }
    expect(undeclared).toEqual([]);
    // The walk did reach what it means to: the machinery's answers, not only 401s.
    expect([...provoked].sort()).toEqual(expect.arrayContaining([400, 401, 403, 404, 413, 415, 422]));
  });

  it("answers 413 and 415 on POST /uploads and POST /channels/{id}/inbound-email, declared with the error body", async () => {
    const auth = { Authorization: `Bearer ${org.test}` };
    const upload = operations.find((operation) => operation.id === "uploads.create");
    const email = operations.find((operation) => operation.id === "channels.receive_email");
    if (!upload || !email) throw new Error("the catalogue lost an operation");
    const answers = [
      [
        upload,
        413,
        await declaredBodyStatus(
          "/uploads",
          "post",
          { ...auth, "Content-Type": "multipart/form-data; boundary=b" },
          MAX_UPLOAD_BYTES * 2,
        ),
      ],
      [
        upload,
        415,
        (
          await call(api, "POST", "/uploads", {
            key: org.test,
            rawBody: "x",
            headers: { "content-type": "text/plain" },
          })
        ).status,
      ],
      [
        email,
        413,
        await declaredBodyStatus(
          concretePath(email),
          "post",
          { ...auth, "Content-Type": "message/rfc822" },
          26 * 1024 * 1024,
        ),
      ],
      [
        email,
        415,
        (
          await call(api, "POST", concretePath(email), {
            key: org.test,
            rawBody: "x",
            headers: { "content-type": "text/plain" },
          })
        ).status,
      ],
    ] as const;
    for (const [operation, expected, status] of answers) {
      expect(status, operation.id).toBe(expected);
      const response = document.paths[operation.path]?.[operation.method]?.responses[String(status)];
      expect(response?.content?.["application/json"]?.schema?.$ref, `${operation.id} ${status}`).toBe(
        "#/components/schemas/Error",
      );
    }
  });

  it("declares 413 on a JSON route and on the web chat's, as they answer it", async () => {
    const create = operations.find((operation) => operation.id === "contacts.create");
    if (!create) throw new Error("the catalogue lost contacts.create");
    const big = JSON.stringify({ name: "x".repeat(1024 * 1024) });
    expect(
      (await as(api, org.test).post("/contacts", { rawBody: big, headers: { "content-type": "application/json" } }))
        .status,
    ).toBe(413);
    expect(declared(create)).toContain("413");
    const webchat = (await as(api, org.test).get("/channels", { query: { type: "webchat" } })).body.data[0].id;
    const sessions = "/webchat/channels/{channel_id}/sessions";
    const visitor = await call(api, "POST", `/webchat/channels/${webchat}/sessions`, {
      rawBody: JSON.stringify({ name: "x".repeat(70 * 1024) }),
      headers: { "content-type": "application/json" },
    });
    expect(visitor.status).toBe(413);
    expect(Object.keys(document.paths[sessions]?.post?.responses ?? {})).toContain("413");
  });
});
