import http from "node:http";
import { describe, expect, it } from "vitest";
import { createTestOrganization, useTestApi } from "../harness.js";
import { webchatChannel } from "../webchat-helpers.js";

const SESSIONS_PER_ADDRESS = 3;
const SESSIONS_PER_CHANNEL = 5;
const MESSAGES_PER_ADDRESS = 4;
const MESSAGES_PER_CHANNEL = 6;

/** Its own database: the per-address counts of other files' visitors (all 127.0.0.1) stay out of it. */
const api = useTestApi(
  {
    WEBCHAT_SESSIONS_PER_MINUTE_PER_ADDRESS: String(SESSIONS_PER_ADDRESS),
    WEBCHAT_SESSIONS_PER_MINUTE_PER_CHANNEL: String(SESSIONS_PER_CHANNEL),
    WEBCHAT_MESSAGES_PER_MINUTE_PER_ADDRESS: String(MESSAGES_PER_ADDRESS),
    WEBCHAT_MESSAGES_PER_MINUTE_PER_CHANNEL: String(MESSAGES_PER_CHANNEL),
  },
  { ownDatabase: true },
);

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** Every address of 127.0.0.0/8 is this host's loopback: a request from another visitor's address. */
let nextHost = 2;
function newAddress(): string {
  const host = nextHost++;
  return `127.0.${Math.floor(host / 250)}.${(host % 250) + 2}`;
}

function send(from: string, method: string, path: string, body?: unknown, token?: string): Promise<Reply> {
  const url = new URL(`${api.baseUrl}/webchat${path}`);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method,
        localAddress: from,
        headers: {
          ...(payload
            ? { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)) }
            : {}),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : undefined }),
        );
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

const newSession = (from: string, channelId: string) => send(from, "POST", `/channels/${channelId}/sessions`, {});
const postMessage = (from: string, token: string, text: string) =>
  send(from, "POST", "/session/messages", { text }, token);

/** 429 with the API's own error body and a Retry-After within the minute. */
function expectRateLimited(reply: Reply) {
  expect({ status: reply.status, code: reply.body?.error?.code }).toEqual({ status: 429, code: "rate_limited" });
  expect(Object.keys(reply.body.error).sort()).toEqual(["code", "message", "request_id"]);
  expect(reply.body.error.request_id).toBe(reply.headers["x-parley-request-id"]);
  const retryAfter = String(reply.headers["retry-after"] ?? "");
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(60);
  expect(reply.headers["x-ratelimit-remaining"]).toBe("0");
}

/**
 * Windows are whole UTC minutes: a scenario that straddles a boundary (its replies'
 * `X-RateLimit-Reset` differ) is run once more, with a new organization and new addresses.
 */
async function inOneWindow<T>(scenario: () => Promise<{ replies: Reply[]; result: T }>): Promise<T> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const { replies, result } = await scenario();
    if (new Set(replies.map((reply) => reply.headers["x-ratelimit-reset"])).size === 1) return result;
  }
  throw new Error("two runs in a row straddled a minute boundary");
}

async function countRows(table: "webchat_sessions" | "messages" | "contacts", organizationId: string) {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from ${api.client.sql(table)} where organization_id = ${organizationId}`;
  return row?.count ?? 0;
}

describe("web chat visitor rate limits", () => {
  it("limits new sessions per source address: 429 rate_limited with Retry-After, and nothing created", async () => {
    const { org, refused, otherAddress } = await inOneWindow(async () => {
      const org = await createTestOrganization(api);
      const channelId = await webchatChannel(api, org.test);
      const address = newAddress();
      const replies: Reply[] = [];
      for (let i = 0; i <= SESSIONS_PER_ADDRESS; i++) replies.push(await newSession(address, channelId));
      const otherAddress = await newSession(newAddress(), channelId);
      return { replies: [...replies, otherAddress], result: { org, refused: replies, otherAddress } };
    });
    expect(refused.slice(0, SESSIONS_PER_ADDRESS).map((reply) => reply.status)).toEqual(
      Array(SESSIONS_PER_ADDRESS).fill(201),
    );
    const last = refused[SESSIONS_PER_ADDRESS];
    if (!last) throw new Error("no last reply");
    expectRateLimited(last);
    expect(last.body.error.message).toContain("per address");
    expect(otherAddress.status).toBe(201);
    expect(await countRows("webchat_sessions", org.id)).toBe(SESSIONS_PER_ADDRESS + 1);
  });

  it("limits new sessions per channel, whatever the addresses", async () => {
    const { replies, otherChannel } = await inOneWindow(async () => {
      const org = await createTestOrganization(api);
      const channelId = await webchatChannel(api, org.test);
      const replies: Reply[] = [];
      for (let i = 0; i <= SESSIONS_PER_CHANNEL; i++) replies.push(await newSession(newAddress(), channelId));
      const other = await createTestOrganization(api);
      const otherChannel = await newSession(newAddress(), await webchatChannel(api, other.test));
      return { replies: [...replies, otherChannel], result: { replies, otherChannel } };
    });
    expect(replies.slice(0, SESSIONS_PER_CHANNEL).every((reply) => reply.status === 201)).toBe(true);
    const last = replies[SESSIONS_PER_CHANNEL];
    if (!last) throw new Error("no last reply");
    expectRateLimited(last);
    expect(last.body.error.message).toContain("per channel");
    expect(otherChannel.status).toBe(201);
  });

  it("limits visitor messages per source address, storing nothing refused", async () => {
    const { org, replies } = await inOneWindow(async () => {
      const org = await createTestOrganization(api);
      const channelId = await webchatChannel(api, org.test);
      const address = newAddress();
      const session = await newSession(address, channelId);
      const replies: Reply[] = [];
      for (let i = 0; i <= MESSAGES_PER_ADDRESS; i++)
        replies.push(await postMessage(address, session.body.token, `m${i}`));
      return { replies, result: { org, replies } };
    });
    expect(replies.slice(0, MESSAGES_PER_ADDRESS).every((reply) => reply.status === 201)).toBe(true);
    const last = replies[MESSAGES_PER_ADDRESS];
    if (!last) throw new Error("no last reply");
    expectRateLimited(last);
    expect(last.body.error.message).toContain("per address");
    expect(await countRows("messages", org.id)).toBe(MESSAGES_PER_ADDRESS);
    expect(await countRows("contacts", org.id)).toBe(1);
  });

  it("limits visitor messages per channel across visitors and addresses", async () => {
    const { org, replies } = await inOneWindow(async () => {
      const org = await createTestOrganization(api);
      const channelId = await webchatChannel(api, org.test);
      const replies: Reply[] = [];
      for (let visitor = 0; visitor <= MESSAGES_PER_CHANNEL / 2; visitor++) {
        const address = newAddress();
        const session = await newSession(address, channelId);
        for (let i = 0; i < 2; i++) replies.push(await postMessage(address, session.body.token, `v${visitor} m${i}`));
      }
      return { replies, result: { org, replies } };
    });
    expect(replies.slice(0, MESSAGES_PER_CHANNEL).every((reply) => reply.status === 201)).toBe(true);
    const refused = replies.slice(MESSAGES_PER_CHANNEL);
    expect(refused).toHaveLength(2);
    for (const reply of refused) {
      expectRateLimited(reply);
      expect(reply.body.error.message).toContain("per channel");
    }
    expect(await countRows("messages", org.id)).toBe(MESSAGES_PER_CHANNEL);
  });
});
