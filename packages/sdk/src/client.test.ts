import { afterEach, describe, expect, it } from "vitest";
import { apiError, json, scriptedServer } from "../test/scripted-server.js";
import {
  ApiError,
  AuthenticationError,
  ConflictError,
  ConnectionError,
  NotFoundError,
  Parley,
  PermissionError,
  RateLimitError,
  TimeoutError,
  ValidationError,
} from "./node.js";

const contact = (id: string) => ({ object: "contact", id, name: id });
let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

async function serve(script: Parameters<typeof scriptedServer>[0]) {
  const server = await scriptedServer(script);
  close = server.close;
  return { server, parley: new Parley({ apiKey: "parley_test_x", baseUrl: server.baseUrl, maxRetries: 3 }) };
}

describe("retries", () => {
  it("retries a 500 with the same Idempotency-Key, then answers the success", async () => {
    const { server, parley } = await serve((_request, index, res) =>
      index < 2 ? json(res, 500, apiError("internal_error")) : json(res, 201, contact("cnt_1")),
    );
    expect(await parley.contacts.create({ name: "Ada" })).toMatchObject({ id: "cnt_1" });
    expect(server.requests).toHaveLength(3);
    const keys = server.requests.map((request) => request.headers["idempotency-key"]);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(keys).size).toBe(1);
    expect(server.requests[0]?.headers.authorization).toBe("Bearer parley_test_x");
  });

  it("uses the caller's idempotencyKey and a new one for each logical call", async () => {
    const { server, parley } = await serve((_request, _index, res) => json(res, 201, contact("cnt_1")));
    await parley.contacts.create({ name: "A" }, { idempotencyKey: "mine" });
    await parley.contacts.create({ name: "B" });
    await parley.contacts.create({ name: "C" });
    const keys = server.requests.map((request) => request.headers["idempotency-key"]);
    expect(keys[0]).toBe("mine");
    expect(keys[1]).not.toBe(keys[2]);
  });

  it("sends no Idempotency-Key on routes that do not honour it", async () => {
    const { server, parley } = await serve((_request, _index, res) => json(res, 201, { object: "tag", id: "tag_1" }));
    await parley.tags.create({ name: "vip" });
    expect(server.requests[0]?.headers["idempotency-key"]).toBeUndefined();
  });

  it("retries 408, 429 and 409 idempotency_in_progress, honouring Retry-After", async () => {
    const answers = [
      (res: Parameters<Parameters<typeof scriptedServer>[0]>[2]) => json(res, 408, apiError("timeout")),
      (res: Parameters<Parameters<typeof scriptedServer>[0]>[2]) =>
        json(res, 429, apiError("rate_limited"), { "retry-after": "1" }),
      (res: Parameters<Parameters<typeof scriptedServer>[0]>[2]) => json(res, 409, apiError("idempotency_in_progress")),
      (res: Parameters<Parameters<typeof scriptedServer>[0]>[2]) => json(res, 201, contact("cnt_9")),
    ];
    const { server, parley } = await serve((_request, index, res) => answers[index]?.(res));
    const started = Date.now();
    expect((await parley.contacts.create({})).id).toBe("cnt_9");
    expect(server.requests).toHaveLength(4);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it("does not retry a 422 or a 409 idempotency_key_reuse", async () => {
    const { server, parley } = await serve((_request, index, res) =>
      index === 0 ? json(res, 422, apiError("validation_error")) : json(res, 409, apiError("idempotency_key_reuse")),
    );
    await expect(parley.contacts.create({})).rejects.toBeInstanceOf(ValidationError);
    await expect(parley.contacts.create({})).rejects.toBeInstanceOf(ConflictError);
    expect(server.requests).toHaveLength(2);
  });

  it("gives up after maxRetries", async () => {
    const { server, parley } = await serve((_request, _index, res) => json(res, 503, apiError("internal_error")));
    await expect(parley.contacts.list()).rejects.toBeInstanceOf(ApiError);
    expect(server.requests).toHaveLength(4);
  });
});

describe("errors", () => {
  it("maps each status to its family, with code, message, param and request id", async () => {
    const cases = [
      [401, AuthenticationError],
      [403, PermissionError],
      [404, NotFoundError],
      [400, ValidationError],
      [422, ValidationError],
      [409, ConflictError],
    ] as const;
    for (const [status, family] of cases) {
      const { parley } = await serve((_request, _index, res) =>
        json(res, status, { error: { code: "some_code", message: "Because", param: "name", request_id: "req_42" } }),
      );
      const error = await parley.contacts.get("cnt_1").then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(family);
      expect(error).toMatchObject({
        status,
        code: "some_code",
        message: "Because",
        param: "name",
        requestId: "req_42",
      });
      await close?.();
      close = undefined;
    }
  });

  it("throws RateLimitError once retries are spent on 429", async () => {
    const server = await scriptedServer((_request, _index, res) =>
      json(res, 429, apiError("rate_limited"), { "retry-after": "0" }),
    );
    close = server.close;
    const parley = new Parley({ apiKey: "k", baseUrl: server.baseUrl, maxRetries: 1 });
    await expect(parley.tags.list()).rejects.toBeInstanceOf(RateLimitError);
  });

  it("throws TimeoutError when the server does not answer within the timeout", async () => {
    const server = await scriptedServer(() => {});
    close = server.close;
    const parley = new Parley({ apiKey: "k", baseUrl: server.baseUrl, timeout: 100, maxRetries: 0 });
    await expect(parley.contacts.list()).rejects.toBeInstanceOf(TimeoutError);
  });

  it("throws ConnectionError when nothing listens", async () => {
    const parley = new Parley({ apiKey: "k", baseUrl: "http://127.0.0.1:9/v1", maxRetries: 0 });
    await expect(parley.contacts.list()).rejects.toBeInstanceOf(ConnectionError);
  });

  it("stops on an aborted signal", async () => {
    const server = await scriptedServer(() => {});
    close = server.close;
    const parley = new Parley({ apiKey: "k", baseUrl: server.baseUrl, maxRetries: 3 });
    const controller = new AbortController();
    const call = parley.contacts.list(undefined, { signal: controller.signal });
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(ConnectionError);
  });

  it("reads PARLEY_API_KEY and PARLEY_BASE_URL when not given", () => {
    process.env.PARLEY_API_KEY = "parley_test_env";
    try {
      expect(() => new Parley()).not.toThrow();
    } finally {
      delete process.env.PARLEY_API_KEY;
    }
    expect(() => new Parley()).toThrow(/PARLEY_API_KEY/);
  });
});

describe("pagination", () => {
  function pages(total: number, size: number) {
    return (url: string) => {
      const after = Number(new URL(url, "http://x").searchParams.get("after") ?? 0);
      const data = Array.from({ length: Math.min(size, total - after) }, (_, i) => contact(`cnt_${after + i}`));
      const hasMore = after + size < total;
      return {
        object: "list",
        data,
        pagination: { has_more: hasMore, next_cursor: hasMore ? String(after + size) : null },
      };
    };
  }

  it("iterates every item across pages with for await", async () => {
    const page = pages(7, 3);
    const { server, parley } = await serve((request, _index, res) => json(res, 200, page(request.url)));
    const ids: string[] = [];
    for await (const item of parley.contacts.list({ limit: 3 })) ids.push(item.id);
    expect(ids).toEqual(["cnt_0", "cnt_1", "cnt_2", "cnt_3", "cnt_4", "cnt_5", "cnt_6"]);
    expect(server.requests.map((request) => new URL(request.url, "http://x").searchParams.get("after"))).toEqual([
      null,
      "3",
      "6",
    ]);
    expect(server.requests.every((request) => request.url.includes("limit=3"))).toBe(true);
  });

  it("gives the first page when awaited, pages() page by page, and toArray with a bound", async () => {
    const page = pages(5, 2);
    const { parley } = await serve((request, _index, res) => json(res, 200, page(request.url)));
    const first = await parley.contacts.list({ limit: 2 });
    expect(first.data).toHaveLength(2);
    expect(first.hasMore).toBe(true);
    const sizes: number[] = [];
    for await (const each of parley.contacts.list({ limit: 2 }).pages()) sizes.push(each.data.length);
    expect(sizes).toEqual([2, 2, 1]);
    expect(await parley.contacts.list({ limit: 2 }).toArray({ max: 3 })).toHaveLength(3);
  });
});

describe("responses", () => {
  it("withResponse shows the request id and the remaining rate limit", async () => {
    const { parley } = await serve((_request, _index, res) =>
      json(res, 200, contact("cnt_1"), { "x-ratelimit-remaining": "599", "x-parley-request-id": "req_abc" }),
    );
    const { data, requestId, rateLimitRemaining, response } = await parley.contacts.get("cnt_1").withResponse();
    expect(data.id).toBe("cnt_1");
    expect(requestId).toBe("req_abc");
    expect(rateLimitRemaining).toBe(599);
    expect(response.status).toBe(200);
  });

  it("encodes path parameters", async () => {
    const { server, parley } = await serve((_request, _index, res) => json(res, 200, contact("x")));
    await parley.contacts.get("cnt/../1");
    expect(server.requests[0]?.url).toBe("/v1/contacts/cnt%2F..%2F1");
  });
});

describe("uploads", () => {
  it("sends a file from a path as multipart with its name and the type of its extension", async () => {
    const { writeFile, mkdtemp } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const directory = await mkdtemp(`${tmpdir()}/parley-sdk-upload-`);
    await writeFile(`${directory}/report.pdf`, "%PDF-1.4 test");
    const { server, parley } = await serve((_request, _index, res) =>
      json(res, 201, { object: "attachment", id: "att_1" }),
    );
    await parley.uploads.create(`${directory}/report.pdf`);
    const request = server.requests[0];
    expect(request?.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
    expect(request?.body).toContain('filename="report.pdf"');
    expect(request?.body).toContain("Content-Type: application/pdf");
    expect(request?.body).toContain("%PDF-1.4 test");
  });

  it("sends bytes from a stream", async () => {
    const { server, parley } = await serve((_request, _index, res) =>
      json(res, 201, { object: "attachment", id: "att_1" }),
    );
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("hello "));
        controller.enqueue(new TextEncoder().encode("stream"));
        controller.close();
      },
    });
    await parley.uploads.create(stream, { filename: "note.txt" });
    expect(server.requests[0]?.body).toContain("hello stream");
    expect(server.requests[0]?.body).toContain("Content-Type: text/plain");
  });
});
