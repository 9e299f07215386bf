import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createTestOrganization, useTestApi } from "../harness.js";
import { openStream, startSession, visitor, webchatChannel } from "../webchat-helpers.js";

const api = useTestApi();
const DAY_MS = 86_400_000;

const hashOf = (token: string) => createHash("sha256").update(token).digest("hex");

async function setLastSeen(token: string, daysAgo: number) {
  await api.client.sql`
    update webchat_sessions set last_seen_at = now() - make_interval(days => ${daysAgo})
    where token_hash = ${hashOf(token)}`;
}

async function daysSinceSeen(token: string): Promise<number> {
  const [row] = await api.client.sql<{ ms: number }[]>`
    select (extract(epoch from now() - last_seen_at) * 1000)::float8 as ms from webchat_sessions
    where token_hash = ${hashOf(token)}`;
  return (row?.ms ?? Number.NaN) / DAY_MS;
}

describe("the widget page's headers", () => {
  it("sends a nonce-based Content-Security-Policy with connect-src 'self', nosniff and a Referrer-Policy", async () => {
    const org = await createTestOrganization(api);
    const channelId = await webchatChannel(api, org.test);
    const root = api.baseUrl.replace(/\/v1$/, "");
    const nonces = new Set<string>();
    for (let i = 0; i < 2; i++) {
      const page = await fetch(`${root}/webchat/${channelId}`);
      expect(page.status).toBe(200);
      const csp = page.headers.get("content-security-policy") ?? "";
      const directives = new Map(
        csp.split(";").map((directive) => {
          const [name = "", ...values] = directive.trim().split(/\s+/);
          return [name, values] as const;
        }),
      );
      const nonce = /'nonce-([A-Za-z0-9+/=]+)'/.exec(directives.get("script-src")?.join(" ") ?? "")?.[1] ?? "";
      expect(nonce.length).toBeGreaterThanOrEqual(16);
      expect(directives.get("script-src")).toEqual([`'nonce-${nonce}'`]);
      expect(directives.get("connect-src")).toEqual(["'self'"]);
      expect(directives.get("default-src")).toEqual(["'none'"]);
      expect(page.headers.get("x-content-type-options")).toBe("nosniff");
      expect(page.headers.get("referrer-policy")).toBe("no-referrer");
      // Every script of the page carries the nonce; nothing runs without it.
      const html = await page.text();
      const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((match) => match[0]);
      expect(scripts.length).toBeGreaterThan(0);
      for (const tag of scripts) expect(tag).toContain(`nonce="${nonce}"`);
      expect(html).not.toMatch(/\son[a-z]+=/i);
      nonces.add(nonce);
    }
    expect(nonces.size).toBe(2);
  });

  it("sends nosniff and the Referrer-Policy on the visitor API too", async () => {
    const org = await createTestOrganization(api);
    const token = await startSession(api, await webchatChannel(api, org.test));
    const history = await visitor(api, token).get("/session/messages");
    expect(history.headers.get("x-content-type-options")).toBe("nosniff");
    expect(history.headers.get("referrer-policy")).toBe("no-referrer");
  });
});

describe("the widget page's markup and script, for browsers that refuse it storage", () => {
  it("offers nothing to submit natively and attaches its handlers before it touches storage", async () => {
    const org = await createTestOrganization(api);
    const channelId = await webchatChannel(api, org.test);
    const html = await (await fetch(`${api.baseUrl.replace(/\/v1$/, "")}/webchat/${channelId}`)).text();
    // No form (a native submit would put the text in a URL) and no named field a submission could carry.
    expect(html).not.toMatch(/<form\b/i);
    expect(html).not.toMatch(/<(input|textarea|select|button)\b[^>]*\sname=/i);
    expect(html).not.toMatch(/\saction=/i);
    // In a third-party frame with storage blocked, touching localStorage throws: by then the
    // handlers are in place, and every touch is inside a try.
    const script = /<script\b[^>]*>([\s\S]*?)<\/script>/.exec(html)?.[1] ?? "";
    const firstStorage = script.search(/localStorage|sessionStorage/);
    expect(firstStorage).toBeGreaterThan(0);
    const beforeStorage = script.slice(0, firstStorage);
    expect(beforeStorage).toMatch(/getElementById\("send"\)\.addEventListener\("click"/);
    expect(beforeStorage).toMatch(/input\.addEventListener\("keydown"/);
    expect(beforeStorage).toMatch(/getElementById\("end"\)\.addEventListener\("click"/);
    expect(script).not.toMatch(/(localStorage|sessionStorage)\.(getItem|setItem|removeItem)/);
  });
});

describe("visitor tokens", () => {
  it("are taken from ?token= only on the event stream", async () => {
    const org = await createTestOrganization(api);
    const token = await startSession(api, await webchatChannel(api, org.test));
    for (const [method, path, body] of [
      ["GET", "/session/messages", undefined],
      ["POST", "/session/messages", { text: "hi" }],
      ["POST", "/session/receipts", { message_id: "msg_01J00000000000000000000000", status: "read" }],
      ["DELETE", "/session", undefined],
    ] as const) {
      const response = await fetch(`${api.baseUrl}/webchat${path}?token=${token}`, {
        method,
        headers: body ? { "content-type": "application/json" } : {},
        body: body ? JSON.stringify(body) : null,
      });
      expect(response.status, `${method} ${path}`).toBe(401);
      const error = (await response.json()) as { error: { code: string } };
      expect(error.error.code).toBe("authentication_required");
    }
    const stream = await openStream(api, token);
    expect(stream.response.status).toBe(200);
    stream.close();
    expect((await visitor(api, token).get("/session/messages")).status).toBe(200);
  });

  it("expire after 30 days without use, and are kept alive by use", async () => {
    const org = await createTestOrganization(api);
    const channelId = await webchatChannel(api, org.test);
    const idle = await startSession(api, channelId);
    const active = await startSession(api, channelId);
    await setLastSeen(idle, 31);
    await setLastSeen(active, 29);
    expect((await visitor(api, active).post("/session/messages", { text: "still here" })).status).toBe(201);
    // That use renewed it for another 30 days.
    expect(await daysSinceSeen(active)).toBeLessThan(0.01);
    for (const request of [
      () => visitor(api, idle).get("/session/messages"),
      () => visitor(api, idle).post("/session/messages", { text: "hello?" }),
      async () => {
        const response = await fetch(`${api.baseUrl}/webchat/session/events?token=${idle}`);
        return { status: response.status, body: await response.json() };
      },
    ]) {
      const response = await request();
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe("invalid_api_key");
    }
  });

  it("can be ended by the visitor: the token stops working at once, the business keeps the conversation", async () => {
    const org = await createTestOrganization(api);
    const channelId = await webchatChannel(api, org.test);
    const token = await startSession(api, channelId);
    const sent = await visitor(api, token).post("/session/messages", { text: "bye soon" });
    expect(sent.status).toBe(201);
    const preflight = await fetch(`${api.baseUrl}/webchat/session`, { method: "OPTIONS" });
    expect(preflight.headers.get("access-control-allow-methods")).toContain("DELETE");
    const ended = await visitor(api, token).delete("/session");
    expect(ended.status).toBe(204);
    for (const response of [
      await visitor(api, token).get("/session/messages"),
      await visitor(api, token).post("/session/messages", { text: "again" }),
      await visitor(api, token).delete("/session"),
    ]) {
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe("invalid_api_key");
    }
    const message = await fetch(`${api.baseUrl}/messages/${sent.body.id}`, {
      headers: { authorization: `Bearer ${org.test}` },
    });
    expect(message.status).toBe(200);
  });
});
