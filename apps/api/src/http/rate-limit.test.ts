import { contacts } from "@parley/db";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import {
  type ApiResponse,
  as,
  createTestOrganization,
  eventually,
  type TestApi,
  useTestApi,
} from "../../test/harness.js";
import { currentWindow, RateLimitCounter } from "./rate-limit.js";

const LIMIT = 5;
/** Requests of one organization a process may count ahead of PostgreSQL's count. */
const FLUSH_BATCH = 2;
const settings = { RATE_LIMIT_PER_MINUTE: String(LIMIT), RATE_LIMIT_FLUSH_BATCH: String(FLUSH_BATCH) };
const first = useTestApi(settings);
/** A second app with its own pool on the same database: another API process. */
const second = useTestApi(settings);

function resetOf(response: ApiResponse): string | null {
  return response.headers.get("x-ratelimit-reset");
}

/**
 * Windows are whole UTC minutes: a scenario that straddles a boundary sees a fresh
 * allowance. Such a run is detected by its differing `X-RateLimit-Reset` values and
 * repeated once (with a new organization); the repeat cannot straddle a boundary too.
 */
async function inOneWindow<T extends { responses: ApiResponse[] }>(scenario: () => Promise<T>): Promise<T> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const result = await scenario();
    const resets = new Set(result.responses.map(resetOf));
    if (resets.size === 1) return result;
  }
  throw new Error("two runs in a row straddled a minute boundary");
}

function remainingOf(response: ApiResponse): number {
  return Number(response.headers.get("x-ratelimit-remaining"));
}

function expectRateLimited(response: ApiResponse) {
  expect({ status: response.status, code: response.body?.error?.code }).toEqual({ status: 429, code: "rate_limited" });
  expect(Object.keys(response.body.error).sort()).toEqual(["code", "message", "request_id"]);
  expect(response.body.error.request_id).toBe(response.headers.get("x-parley-request-id"));
  expect(response.headers.get("x-ratelimit-limit")).toBe(String(LIMIT));
  expect(response.headers.get("x-ratelimit-remaining")).toBe("0");
  const retryAfter = response.headers.get("retry-after") ?? "";
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(60);
  // Retry-After points at the end of the window that X-RateLimit-Reset announces.
  const reset = Number(resetOf(response));
  expect(Math.abs(reset - Number(retryAfter) - Math.floor(Date.now() / 1000))).toBeLessThanOrEqual(2);
}

/** The organization's count in PostgreSQL for the current window (what every process has added). */
async function sharedCount(api: TestApi, organizationId: string): Promise<number> {
  const [row] = await api.client.sql<{ count: number }[]>`
    select coalesce(sum(count), 0)::int as count from rate_limit_windows
    where organization_id = ${organizationId} and window_start = ${currentWindow().start.toISOString()}::timestamptz`;
  return row?.count ?? 0;
}

async function contactCount(api: TestApi, organizationId: string): Promise<number> {
  const rows = await api.context.db
    .select({ id: contacts.id })
    .from(contacts)
    .where(eq(contacts.organizationId, organizationId));
  return rows.length;
}

describe("per-minute allowance", () => {
  it("counts X-RateLimit-Remaining down, then answers 429 rate_limited with Retry-After", async () => {
    const { responses, org } = await inOneWindow(async () => {
      const org = await createTestOrganization(first);
      const client = as(first, org.test);
      const responses: ApiResponse[] = [];
      for (let i = 0; i < LIMIT; i++) responses.push(await client.get("/contacts"));
      responses.push(await client.get("/contacts"));
      responses.push(await client.post("/contacts", { body: { name: "Too late" } }));
      return { responses, org };
    });

    const allowed = responses.slice(0, LIMIT);
    expect(allowed.map((response) => response.status)).toEqual(Array(LIMIT).fill(200));
    expect(allowed.map(remainingOf)).toEqual([4, 3, 2, 1, 0]);
    for (const response of allowed) expect(response.headers.get("x-ratelimit-limit")).toBe(String(LIMIT));
    for (const response of responses.slice(LIMIT)) expectRateLimited(response);
    expect(await contactCount(first, org.id)).toBe(0);
  });

  it("announces the end of the current UTC minute in X-RateLimit-Reset", async () => {
    const org = await createTestOrganization(first);
    const before = Math.floor(Date.now() / 1000);
    const response = await as(first, org.test).get("/contacts");
    const after = Math.floor(Date.now() / 1000);
    const reset = Number(resetOf(response));
    expect(reset % 60).toBe(0);
    expect(reset).toBeGreaterThan(before);
    expect(reset).toBeLessThanOrEqual(after + 60);
  });

  it("counts error responses of an authenticated caller too", async () => {
    const { responses } = await inOneWindow(async () => {
      const client = as(first, (await createTestOrganization(first)).test);
      const responses = [
        await client.get("/no-such-route"),
        await client.get("/contacts/cnt_00000000000000000000000000"),
        await client.get("/contacts", { query: { limit: 0 } }),
        await client.put("/contacts"),
        await client.get("/contacts"),
        await client.get("/contacts"),
      ];
      return { responses };
    });
    expect(responses.map((response) => response.status)).toEqual([404, 404, 422, 405, 200, 429]);
    expect(responses.slice(0, 5).map(remainingOf)).toEqual([4, 3, 2, 1, 0]);
  });

  it("never lets concurrent requests through beyond the limit", async () => {
    const { responses } = await inOneWindow(async () => {
      const client = as(first, (await createTestOrganization(first)).test);
      const responses = await Promise.all(Array.from({ length: 3 * LIMIT }, () => client.get("/contacts")));
      return { responses };
    });
    const allowed = responses.filter((response) => response.status === 200);
    expect(allowed).toHaveLength(LIMIT);
    expect(allowed.map(remainingOf).sort()).toEqual([0, 1, 2, 3, 4]);
    const refused = responses.filter((response) => response.status !== 200);
    expect(refused).toHaveLength(2 * LIMIT);
    for (const response of refused) expectRateLimited(response);
  });
});

describe("whose allowance", () => {
  it("is per organization: another organization is unaffected", async () => {
    const { responses } = await inOneWindow(async () => {
      const exhausted = as(first, (await createTestOrganization(first)).test);
      const other = await createTestOrganization(first);
      const responses: ApiResponse[] = [];
      for (let i = 0; i <= LIMIT; i++) responses.push(await exhausted.get("/contacts"));
      responses.push(await as(first, other.test).get("/contacts"));
      responses.push(await as(first, other.live).get("/contacts"));
      return { responses };
    });
    expectRateLimited(responses[LIMIT] as ApiResponse);
    const [test, live] = responses.slice(LIMIT + 1);
    expect(test?.status).toBe(200);
    expect(remainingOf(test as ApiResponse)).toBe(LIMIT - 1);
    expect(live?.status).toBe(200);
    expect(remainingOf(live as ApiResponse)).toBe(LIMIT - 2);
  });

  it("is shared by the live and test keys of one organization", async () => {
    const { responses } = await inOneWindow(async () => {
      const org = await createTestOrganization(first);
      const live = as(first, org.live);
      const test = as(first, org.test);
      const responses = [
        await live.get("/contacts"),
        await test.get("/contacts"),
        await live.get("/contacts"),
        await test.get("/contacts"),
        await live.get("/contacts"),
        await test.get("/contacts"),
        await live.get("/contacts"),
      ];
      return { responses };
    });
    expect(responses.slice(0, LIMIT).map((response) => response.status)).toEqual(Array(LIMIT).fill(200));
    expect(responses.slice(0, LIMIT).map(remainingOf)).toEqual([4, 3, 2, 1, 0]);
    for (const response of responses.slice(LIMIT)) expectRateLimited(response);
  });

  it("is shared by every API process: one that finds it spent admits at most the flush batch", async () => {
    const { responses, org } = await inOneWindow(async () => {
      const org = await createTestOrganization(first);
      const one = as(first, org.test);
      const responses: ApiResponse[] = [];
      for (let i = 0; i < LIMIT; i++) responses.push(await one.get("/contacts"));
      // The first process's counts reach PostgreSQL within its flush interval.
      await eventually(
        () => sharedCount(first, org.id),
        (count) => count >= LIMIT,
        5_000,
      );
      const two = as(second, org.test);
      for (let i = 0; i < FLUSH_BATCH + 3; i++) responses.push(await two.get("/contacts"));
      return { responses, org };
    });
    expect(first.baseUrl).not.toBe(second.baseUrl);
    expect(responses.slice(0, LIMIT).map((response) => response.status)).toEqual(Array(LIMIT).fill(200));
    expect(responses.slice(0, LIMIT).map(remainingOf)).toEqual([4, 3, 2, 1, 0]);
    const fromSecond = responses.slice(LIMIT).map((response) => response.status);
    const admitted = fromSecond.filter((status) => status === 200).length;
    expect(admitted).toBeLessThanOrEqual(FLUSH_BATCH);
    // Once refused, always refused in the window: the second process has learnt the count.
    expect(fromSecond).toEqual([...Array(admitted).fill(200), ...Array(fromSecond.length - admitted).fill(429)]);
    for (const response of responses.slice(LIMIT + admitted)) expectRateLimited(response);
    expect(await contactCount(first, org.id)).toBe(0);
  });

  it("admits at most the limit plus the flush batch of each process when two processes are hammered at once", async () => {
    const { responses } = await inOneWindow(async () => {
      const org = await createTestOrganization(first);
      const one = as(first, org.test);
      const two = as(second, org.test);
      const responses = await Promise.all(
        Array.from({ length: 4 * LIMIT }, (_, i) => (i % 2 === 0 ? one : two).get("/contacts")),
      );
      return { responses };
    });
    const admitted = responses.filter((response) => response.status === 200).length;
    expect(admitted).toBeGreaterThanOrEqual(LIMIT);
    expect(admitted).toBeLessThanOrEqual(LIMIT + 2 * FLUSH_BATCH);
    for (const response of responses.filter((response) => response.status !== 200)) expectRateLimited(response);
  });

  it("is not spent by requests without a valid key", async () => {
    const { responses } = await inOneWindow(async () => {
      const org = await createTestOrganization(first);
      const stranger = as(first, `${org.test.slice(0, -4)}0000`);
      const responses: ApiResponse[] = [];
      for (let i = 0; i <= LIMIT; i++) responses.push(await stranger.get("/contacts"));
      responses.push(await as(first, org.test).get("/contacts"));
      return { responses };
    });
    for (const response of responses.slice(0, LIMIT + 1)) {
      expect(response.status).toBe(401);
      expect(response.headers.get("x-ratelimit-limit")).toBe(String(LIMIT));
    }
    const own = responses[LIMIT + 1] as ApiResponse;
    expect(own.status).toBe(200);
    expect(remainingOf(own)).toBe(LIMIT - 1);
  });
});

describe("RateLimitCounter.countNow", () => {
  // What authenticate admits without awaiting: a count that needs no flush.
  it("numbers a request at once, and counts nothing while the process holds a full batch", async () => {
    const bucket = `test:count-now:${Date.now()}:${Math.random()}`;
    const counter = new RateLimitCounter(first.context.db, { flushMs: 60_000, flushBatch: 4 });
    const window = currentWindow();
    try {
      expect(counter.countNow(bucket, window)).toBe(1);
      // Half the batch: the counts are on their way to PostgreSQL, the next one waits for none.
      expect(counter.countNow(bucket, window)).toBe(2);
      expect(counter.countNow(bucket, window)).toBe(3);
      expect(counter.countNow(bucket, window)).toBe(4);
      expect(counter.countNow(bucket, window)).toBeUndefined();
      expect(await counter.count(bucket, window)).toBe(5);
      await counter.flush();
      const [row] = await first.client.sql<{ count: number }[]>`
        select count from rate_limit_windows
        where organization_id = ${bucket} and window_start = ${window.start.toISOString()}::timestamptz`;
      expect(row?.count).toBe(5);
    } finally {
      await counter.close();
    }
  });
});
