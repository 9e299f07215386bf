import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { newId } from "@parley/db";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../src/organizations/api-keys.js";
import { hasChromium, launchChromium } from "./browser.js";
import { as, type Client, createTestOrganization, eventually, useTestApi, useTestWorker } from "./harness.js";
import { useWebhookReceiver } from "./webhook-receiver.js";

/**
 * The console (apps/console) in Debian's Chromium against a running Parley: each view driven
 * as a person would, checked with axe-core, at 375 px, and its JavaScript weighed.
 * `CONSOLE_SCREENSHOTS=1` writes each view's screenshot to docs/console/ (docs/console.md).
 */
const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const CONSOLE_DIST = path.join(path.dirname(require.resolve("@parley/console/package.json")), "dist");
const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS
  ? path.resolve(import.meta.dirname, "../../../docs/console")
  : undefined;

const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });
useTestWorker(api, { webhookFastRetry: true });
const receiver = useWebhookReceiver();

async function seriousViolations(page: Page) {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (context: unknown, options: unknown) => Promise<any> } }).axe;
    const run = await axe.run((globalThis as any).document, { resultTypes: ["violations"] });
    return run.violations.map((violation: any) => ({
      id: violation.id,
      impact: violation.impact,
      nodes: violation.nodes.map((node: any) => node.target.join(" ")),
    }));
  });
  return violations.filter((violation: { impact: string }) => ["serious", "critical"].includes(violation.impact));
}

/** Every page must pass axe, fit 375 px without sideways scrolling, and may be photographed for the docs. */
async function checkView(page: Page, name: string) {
  await page.waitForSelector("h1");
  expect(await seriousViolations(page), `axe on ${name}`).toEqual([]);
  if (SCREENSHOTS) {
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  }
}

describe.skipIf(!hasChromium)("the console in a real browser", () => {
  let browser: Browser;
  let consoleUrl: string;
  let client: Client;
  let testKey: string;
  let conversationId: string;

  beforeAll(async () => {
    browser = await launchChromium();
    consoleUrl = `${api.baseUrl.replace(/\/v1$/, "")}/console/`;
    const org = await createTestOrganization(api);
    testKey = org.test;
    client = as(api, org.test);
    const channels = await client.get("/channels", { query: { type: "whatsapp" } });
    const contact = await client.post("/contacts", { body: { name: "Ada Lovelace", phone: "+15550100001" } });
    const conversation = await client.post("/conversations", {
      body: { contact_id: contact.body.id, channel_id: channels.body.data[0].id },
    });
    conversationId = conversation.body.id;
    await client.post("/teams", { body: { name: "Support" } });
    await client.post("/test-helpers/inbound-messages", {
      body: { conversation_id: conversationId, type: "text", text: "Hello, where is my order?" },
    });
  });

  afterAll(async () => {
    await browser?.close();
  });

  async function signedIn(width = 1280): Promise<Page> {
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    await page.goto(consoleUrl);
    await page.fill("#api-key", testKey);
    await page.click("button[type=submit]");
    await page.waitForSelector(".env-test");
    return page;
  }

  it("is served with its own policy: no inline script, nothing from another origin, never framed", async () => {
    const response = await fetch(consoleUrl);
    expect(response.status).toBe(200);
    const policy = response.headers.get("content-security-policy") ?? "";
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toContain("unsafe-inline");
    const html = await response.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/https?:\/\//);
  });

  it("weighs under 150 kB of JavaScript gzipped", () => {
    const assets = path.join(CONSOLE_DIST, "assets");
    const gzipped = readdirSync(assets)
      .filter((file) => file.endsWith(".js"))
      .reduce((sum, file) => sum + gzipSync(readFileSync(path.join(assets, file))).length, 0);
    expect(gzipped).toBeGreaterThan(1_000);
    expect(gzipped).toBeLessThan(150 * 1024);
  });

  it("refuses a wrong key with the API's message and request id, and signs in with a test key, TEST always shown", async () => {
    const page = await browser.newPage();
    try {
      await page.goto(consoleUrl);
      await checkView(page, "sign-in");
      await page.fill("#api-key", "parley_test_not_a_real_key");
      await page.click("button[type=submit]");
      const error = await page.waitForSelector("[role=alert]");
      expect(await error.textContent()).toMatch(/request id req_/);
      await page.fill("#api-key", testKey);
      await page.click("button[type=submit]");
      expect(await page.textContent(".env")).toBe("TEST");
      // The key is in the tab's sessionStorage, never in the address.
      expect(page.url()).not.toContain(testKey);
      expect(await page.evaluate(() => (globalThis as any).sessionStorage.getItem("parley.console.key"))).toBe(testKey);
      await page.click("text=Sign out");
      await page.waitForSelector("#api-key");
      expect(await page.evaluate(() => (globalThis as any).sessionStorage.length)).toBe(0);
    } finally {
      await page.close();
    }
  });

  it("finds the conversation, replies, and shows the status moving to delivered", async () => {
    const page = await signedIn();
    try {
      await page.waitForSelector(`a[href="#/conversations/${conversationId}"]`);
      await checkView(page, "conversations");
      await page.selectOption("#filter-status", "open");
      await page.click(`a[href="#/conversations/${conversationId}"]`);
      await page.waitForSelector("text=Hello, where is my order?");
      await page.fill("#reply-text", "It left the warehouse this morning.");
      await page.click(".reply button[type=submit]");
      const sent = page.locator(".message.outbound", { hasText: "It left the warehouse this morning." });
      await sent.locator(".status-delivered").waitFor({ timeout: 15_000 });
      const stored = await client.get(`/conversations/${conversationId}/messages`);
      expect(stored.body.data[0]).toMatchObject({ text: "It left the warehouse this morning.", status: "delivered" });
      // Notes and what happened to the conversation sit in its timeline.
      await page.fill("#note-body", "Customer is a VIP: answer fast.");
      await page.click(".notes button[type=submit]");
      await page.locator(".timeline .note", { hasText: "Customer is a VIP: answer fast." }).waitFor();
      await page.selectOption("#assign-team", { label: "Support" });
      await page.locator(".timeline .activity", { hasText: "Assigned to nobody, team Support" }).waitFor();
      await checkView(page, "conversation");
      await page.click(".actions button:has-text('Close')");
      await page.locator(".timeline .activity", { hasText: "Closed" }).waitFor();
      await page.locator(".actions button:has-text('Reopen')").waitFor();

      // A file the channel cannot carry is refused before anything is sent, in the API's words.
      const webchat = await client.get("/channels", { query: { type: "webchat" } });
      const visitor = await client.post("/contacts", { body: { name: "Web visitor" } });
      const chat = await client.post("/conversations", {
        body: { contact_id: visitor.body.id, channel_id: webchat.body.data[0].id },
      });
      await page.goto(`${consoleUrl}#/conversations/${chat.body.id}`);
      await page.waitForSelector("#reply-file");
      await page.setInputFiles("#reply-file", { name: "photo.png", mimeType: "image/png", buffer: Buffer.from("png") });
      const refusal = await page.waitForSelector(".reply [role=alert]");
      expect(await refusal.textContent()).toContain(
        "The webchat channel cannot carry 'image' messages; see the channel's capabilities.",
      );
      await page.click(".reply button[type=submit]");
      const chatMessages = await client.get(`/conversations/${chat.body.id}/messages`);
      expect(chatMessages.body.data).toEqual([]);

      await page.click("text=Channels");
      await page.waitForSelector(".card");
      await checkView(page, "channels");
    } finally {
      await page.close();
    }
  }, 60_000);

  it("shows a failed webhook delivery with its attempt, and retries it: the new attempt appears", async () => {
    const endpoint = receiver.endpoint((_request, index) =>
      index === 0 ? { status: 500, body: "down" } : { status: 200 },
    );
    const created = await client.post("/webhooks", { body: { url: endpoint.url, events: ["contact.created"] } });
    const grace = await client.post("/contacts", { body: { name: "Grace Hopper" } });
    const contactId = grace.body.id as string;
    const vip = await client.post("/tags", { body: { name: "VIP" } });
    await eventually(
      async () => endpoint.received.length,
      (count) => count >= 1,
    );
    const page = await signedIn();
    try {
      await page.click("text=Webhooks");
      await page.waitForSelector(`a[href="#/webhooks/${created.body.id}"]`);
      await checkView(page, "webhooks");
      await page.click(`a[href="#/webhooks/${created.body.id}"]`);
      const failed = page.locator(".delivery.failed").first();
      await failed.waitFor();
      expect(await failed.textContent()).toContain("HTTP 500");
      const before = await page.locator(".delivery").count();
      await failed.locator("button", { hasText: "Retry" }).click();
      await eventually(
        () => page.locator(".delivery").count(),
        (count) => count > before,
      );
      await page.locator(".delivery.succeeded").first().waitFor();
      await checkView(page, "webhook");
      // The secret is shown once, on rotation; disabling shows at once.
      await page.click("button:has-text('Rotate the secret')");
      const shown = await page.waitForSelector(".secret");
      expect(await shown.textContent()).toMatch(/whsec_[0-9A-Za-z]{20,}/);
      await page.click("button:has-text('I have kept it')");
      expect(await page.locator(".secret").count()).toBe(0);
      await page.click("button:has-text('Disable')");
      await page.locator("button:has-text('Enable')").waitFor();
      const endpointNow = await client.get(`/webhooks/${created.body.id}`);
      expect(endpointNow.body.enabled).toBe(false);
      await page.click("text=Events");
      await page.waitForSelector(".events li");
      await checkView(page, "events");
      await page.click("text=Contacts");
      await page.waitForSelector("text=Grace Hopper");
      await checkView(page, "contacts");
      await page.click("text=Grace Hopper");
      await page.waitForSelector("dl.fields");
      await checkView(page, "contact");
      await page.click("text=Edit");
      await page.fill("#contact-email", "grace@example.com");
      await page.check("label.check:has-text('VIP') input");
      await page.click("form.edit button[type=submit]");
      await page.waitForSelector("text=grace@example.com");
      const grace = await client.get(`/contacts/${contactId}`);
      expect(grace.body).toMatchObject({ email: "grace@example.com", tags: [vip.body.id] });
      // Cursor pages: past 25 events, the next are appended.
      for (let index = 0; index < 26; index++) await client.post("/contacts", { body: { name: `Reader ${index}` } });
      await page.click("text=Events");
      await page.waitForSelector(".events li");
      expect(await page.locator(".events li").count()).toBe(25);
      await page.click("button:has-text('Load more')");
      await eventually(
        () => page.locator(".events li").count(),
        (count) => count > 25,
      );
    } finally {
      await page.close();
    }
  }, 60_000);

  it("scrolls a conversation of 1,000 messages: older pages load as the reader scrolls up, no task blocking half a second", async () => {
    const channels = await client.get("/channels", { query: { type: "whatsapp" } });
    const contact = await client.post("/contacts", { body: { name: "Long talker" } });
    const long = await client.post("/conversations", {
      body: { contact_id: contact.body.id, channel_id: channels.body.data[0].id },
    });
    // Written straight to the table, as 1,000 inbound messages a second apart would be stored.
    const [owner] = await api.client.sql<{ organization_id: string }[]>`
      select organization_id from conversations where id = ${long.body.id}`;
    const start = Date.now() - 1_000_000;
    await api.client.sql.begin(async (tx) => {
      for (let index = 0; index < 1_000; index++) {
        const at = new Date(start + index * 1_000).toISOString();
        await tx`
          insert into messages (id, organization_id, environment, conversation_id, direction, type, text, metadata,
                                created_at, updated_at)
          values (${newId("message")}, ${owner?.organization_id as string}, 'test', ${long.body.id as string},
                  'inbound', 'text', ${`Message ${index + 1}`}, '{}'::jsonb, ${at}::timestamptz, ${at}::timestamptz)`;
      }
    });
    const page = await signedIn();
    try {
      await page.goto(`${consoleUrl}#/conversations/${long.body.id}`);
      await page.waitForSelector(".message");
      // Long tasks (50 ms or more on the main thread) from here on: what a person feels as jank.
      await page.evaluate(() => {
        const tasks: number[] = [];
        (globalThis as any).longTasks = tasks;
        new (globalThis as any).PerformanceObserver((list: any) => {
          for (const entry of list.getEntries()) tasks.push(entry.duration);
        }).observe({ type: "longtask" });
      });
      // The first page, before any scroll: a scroll can load the next one before it is counted.
      const counts: number[] = [await page.locator(".message").count()];
      await eventually(
        async () => {
          await page.evaluate(() => {
            const timeline = (globalThis as any).document.querySelector(".timeline");
            timeline.scrollTop = 0;
          });
          const count = await page.locator(".message").count();
          if (counts.at(-1) !== count) counts.push(count);
          return count;
        },
        (count) => count >= 1_000,
        60_000,
      );
      await page.waitForSelector("text=The start of the conversation");
      expect(await page.locator(".message").count()).toBe(1_000);
      // Pages of 50, one after another as the top came into view: never the whole list at once.
      expect(counts[0]).toBeLessThanOrEqual(50);
      expect(counts.length).toBeGreaterThanOrEqual(10);
      const longTasks: number[] = await page.evaluate(() => (globalThis as any).longTasks);
      console.log(`1,000 messages: ${counts.length} loads, long tasks ${JSON.stringify(longTasks.map(Math.round))} ms`);
      expect(Math.max(0, ...longTasks)).toBeLessThan(500);
    } finally {
      await page.close();
    }
  }, 120_000);

  it("with a restricted key, shows what its scopes allow and says what it cannot show", async () => {
    const [org] = await api.client.sql<{ organization_id: string }[]>`
      select organization_id from conversations where id = ${conversationId}`;
    const { key } = await createApiKey(api.context.db, {
      organizationId: org?.organization_id as string,
      environment: "test",
      scopes: ["conversations:read"],
    });
    const page = await browser.newPage();
    try {
      await page.goto(consoleUrl);
      await page.fill("#api-key", key);
      await page.click("button[type=submit]");
      await page.waitForSelector(`a[href="#/conversations/${conversationId}"]`);
      await page.click(`a[href="#/conversations/${conversationId}"]`);
      // Each view's note, once that view shows it: read at once, the note could be the last view's.
      await page.locator("[role=note]", { hasText: "messages:read" }).waitFor({ timeout: 15_000 });
      await page.click("text=Webhooks");
      await page.locator("[role=note]", { hasText: "webhooks:read" }).waitFor({ timeout: 15_000 });
      expect(await page.textContent("[role=note]")).toContain("webhooks:read");
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("is usable by keyboard alone: sign in, open a conversation, reply", async () => {
    const page = await browser.newPage();
    /** Tab until the focused element matches, as a keyboard user moves. */
    const tabTo = async (selector: string) => {
      for (let presses = 0; presses < 60; presses++) {
        await page.keyboard.press("Tab");
        if (await page.evaluate((wanted) => (globalThis as any).document.activeElement?.matches(wanted), selector))
          return;
      }
      throw new Error(`Tab never reached ${selector}`);
    };
    try {
      await page.goto(consoleUrl);
      await tabTo("#api-key");
      await page.keyboard.type(testKey);
      await page.keyboard.press("Enter");
      await page.waitForSelector(`a[href="#/conversations/${conversationId}"]`);
      await tabTo(`a[href="#/conversations/${conversationId}"]`);
      await page.keyboard.press("Enter");
      await page.waitForSelector("#reply-text");
      await tabTo("#reply-text");
      await page.keyboard.type("Typed without a mouse.");
      await page.keyboard.press("Control+Enter");
      await page.locator(".message.outbound", { hasText: "Typed without a mouse." }).waitFor({ timeout: 15_000 });
    } finally {
      await page.close();
    }
  });

  it("is readable at 375 px: no page scrolls sideways", async () => {
    const page = await signedIn(375);
    try {
      for (const view of [
        "conversations",
        `conversations/${conversationId}`,
        "contacts",
        "channels",
        "webhooks",
        "events",
      ]) {
        await page.goto(`${consoleUrl}#/${view}`);
        await page.waitForSelector("h1");
        await page.waitForLoadState("networkidle");
        const overflow = await page.evaluate(() => {
          const { document, innerWidth } = globalThis as any;
          return document.documentElement.scrollWidth - innerWidth;
        });
        expect(overflow, view).toBeLessThanOrEqual(0);
      }
    } finally {
      await page.close();
    }
  });
});
