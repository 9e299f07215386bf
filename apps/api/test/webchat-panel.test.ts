import { randomUUID } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type { Browser, BrowserContextOptions, Frame, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "../src/organizations/organizations.js";
import { hasChromium, launchChromium, serveHostPage, waitForFrame } from "./browser.js";
import { as, type Client, createTestOrganization, eventually, useTestApi } from "./harness.js";
import { connectLiveWebchat } from "./webchat-helpers.js";

/** Screenshots for a person to look at (git-ignored). */
const OUTPUT = new URL("../test-output/webchat/", import.meta.url);
const AXE_SOURCE = createRequire(import.meta.url).resolve("axe-core/axe.min.js");

const api = useTestApi();

// What the callbacks run in the page see; this file compiles without the DOM library.
declare const document: any;
declare const MutationObserver: any;
declare const localStorage: any;
declare function getComputedStyle(element: unknown): any;

describe.skipIf(!hasChromium)("what the visitor sees in the chat panel", () => {
  let browser: Browser;
  let axeSource: string;

  beforeAll(async () => {
    browser = await launchChromium();
    axeSource = await readFile(AXE_SOURCE, "utf8");
    await mkdir(OUTPUT, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
  });

  const root = () => api.baseUrl.replace(/\/v1$/, "");

  /** A live web chat channel with these settings, and an API client of the same environment. */
  async function channelWith(settings: Record<string, string>) {
    const org = await createTestOrganization(api);
    const channel = await connectLiveWebchat(api, org.id, settings);
    return { org, channelId: channel.id, client: as(api, org.live) };
  }

  async function openPanel(channelId: string, options: BrowserContextOptions = {}, query = "") {
    const context = await browser.newContext({ viewport: { width: 400, height: 640 }, ...options });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    page.on("console", (message) => {
      if (message.type() === "error" || /Content Security Policy/i.test(message.text())) errors.push(message.text());
    });
    await page.goto(`${root()}/webchat/${channelId}${query}`);
    await page.waitForSelector("body[data-ready=true]", { timeout: 15_000 });
    return { context, page, errors };
  }

  /** The visitor writes; the business sees the conversation. */
  async function visitorWrites(frame: Page | Frame, client: Client, channelId: string, text: string) {
    await frame.fill("#text", text);
    await frame.press("#text", "Enter");
    const conversations = await eventually(
      () => client.get("/conversations", { query: { channel_id: channelId } }),
      (response) => response.body.data.length === 1,
    );
    return conversations.body.data[0] as { id: string; contact_id: string };
  }

  /** axe-core, from node_modules, run in the page: violations of impact serious or critical. */
  async function seriousViolations(frame: Page | Frame) {
    await frame.evaluate(axeSource);
    const results = await frame.evaluate(async () => {
      const axe = (globalThis as unknown as { axe: { run: (context: unknown, options: unknown) => Promise<any> } }).axe;
      const run = await axe.run(document, { resultTypes: ["violations"] });
      return run.violations.map((violation: any) => ({
        id: violation.id,
        impact: violation.impact,
        nodes: violation.nodes.map((node: any) => node.target.join(" ")),
      }));
    });
    return results.filter((violation: { impact: string }) => ["serious", "critical"].includes(violation.impact));
  }

  it("asks the pre-chat questions, refuses a missing or bad email, and gives the answers to the contact", async () => {
    const { channelId, client } = await channelWith({
      greeting: "Hi! Ask us anything.",
      prechat_name: "optional",
      prechat_email: "required",
    });
    const { context, page, errors } = await openPanel(channelId);
    try {
      expect(await page.textContent(".message.greeting")).toBe("Hi! Ask us anything.");
      expect(await page.isVisible("#prechat")).toBe(true);
      expect(await page.isVisible("#composer")).toBe(false);

      await page.click("#prechat-start");
      expect(await page.textContent("#prechat-error")).toBe("Please enter your email address.");
      expect(await page.getAttribute("#prechat-email", "aria-invalid")).toBe("true");
      expect(await page.evaluate(() => document.activeElement?.id)).toBe("prechat-email");

      await page.fill("#prechat-name", "Grace Visitor");
      await page.fill("#prechat-email", "grace@@example");
      await page.press("#prechat-email", "Enter");
      expect(await page.textContent("#prechat-error")).toBe("Please enter a valid email address.");
      expect(await seriousViolations(page)).toEqual([]);
      // Nothing started while the answers are refused.
      const sessions = await api.client.sql`select id from webchat_sessions where channel_id = ${channelId}`;
      expect(sessions).toHaveLength(0);

      await page.fill("#prechat-email", "grace@example.com");
      await page.press("#prechat-email", "Enter");
      await page.waitForSelector("#composer:not([hidden])");
      expect(await page.isVisible("#prechat")).toBe(false);
      expect(await page.evaluate(() => document.activeElement?.id)).toBe("text");

      const conversation = await visitorWrites(page, client, channelId, "Hello, I have a question");
      const contact = await client.get(`/contacts/${conversation.contact_id}`);
      expect(contact.body).toMatchObject({ name: "Grace Visitor", email: "grace@example.com" });
      // Ending the chat: the next visitor on this device is asked again.
      await page.click("#end");
      await page.waitForSelector("#prechat:not([hidden])");
      expect(await page.isVisible("#composer")).toBe(false);
      expect(errors).toEqual([]);
      // A kept token that no longer works (expired, ended elsewhere): the form again, not a session without answers.
      const stale = await context.newPage();
      await stale.addInitScript((key) => {
        localStorage.setItem(key, `wct_${"A".repeat(40)}`);
      }, `parley:webchat:${channelId}`);
      await stale.goto(`${root()}/webchat/${channelId}`);
      await stale.waitForSelector("body[data-ready=true]");
      expect(await stale.isVisible("#prechat")).toBe(true);
      expect(await stale.textContent("#status")).toBe("");
    } finally {
      await context.close();
    }
  });

  it("shows the agent's name on replies, typing dots that come and go, safe links, times and read marks", async () => {
    const { org, channelId, client } = await channelWith({ greeting: "Hi! Ask us anything." });
    const { context, page, errors } = await openPanel(channelId);
    try {
      const conversation = await visitorWrites(page, client, channelId, "Where is my order?");
      const mark = page.locator(".row.inbound .mark").first();
      await expect.poll(() => mark.textContent(), { timeout: 10_000 }).toBe("✓ Delivered");
      const agent = await createUser(api.context.db, {
        organizationId: org.id,
        name: "Ana Agent",
        email: `${randomUUID()}@example.com`,
      });
      await client.post(`/conversations/${conversation.id}/assign`, { body: { user_id: agent.id } });

      expect((await client.post(`/conversations/${conversation.id}/typing`)).status).toBe(200);
      await page.waitForSelector("#typing:not([hidden])", { timeout: 10_000 });
      expect(await page.textContent("#typing")).toBe("Ana Agent is typing…");
      await client.post(`/conversations/${conversation.id}/typing`, { body: { typing: false } });
      await page.waitForSelector("#typing[hidden]", { state: "attached", timeout: 10_000 });

      await client.post(`/conversations/${conversation.id}/typing`);
      await page.waitForSelector("#typing:not([hidden])", { timeout: 10_000 });
      const reply = await client.post("/messages", {
        body: {
          conversation_id: conversation.id,
          type: "text",
          text: "Track it at https://example.com/track?order=42. Not javascript:alert(1), <b>bold</b>; mail help@example.com via mailto:help@example.com",
        },
      });
      expect(reply.status).toBe(201);
      const bubble = page.locator(`.message.outbound[data-id="${reply.body.id}"]`);
      await bubble.waitFor({ timeout: 10_000 });
      await page.waitForSelector("#typing[hidden]", { state: "attached", timeout: 10_000 });
      const row = page.locator(".row.outbound", { has: bubble });
      expect(await row.locator(".sender").textContent()).toBe("Ana Agent");
      expect(await row.locator("time").getAttribute("datetime")).toBe(reply.body.created_at);
      expect(await bubble.textContent()).toContain("<b>bold</b>");
      expect(await bubble.locator("b").count()).toBe(0);
      const links = await bubble.locator("a").evaluateAll((anchors) =>
        anchors.map((a) => ({
          href: a.getAttribute("href"),
          text: a.textContent,
          rel: a.getAttribute("rel"),
          target: a.getAttribute("target"),
        })),
      );
      expect(links).toEqual([
        {
          href: "https://example.com/track?order=42",
          text: "https://example.com/track?order=42",
          rel: "noopener noreferrer",
          target: "_blank",
        },
        {
          href: "mailto:help@example.com",
          text: "mailto:help@example.com",
          rel: "noopener noreferrer",
          target: "_blank",
        },
      ]);
      expect(await bubble.getAttribute("dir")).toBe("auto");
      // The business answered: the visitor's message shows read.
      await expect.poll(() => mark.textContent(), { timeout: 10_000 }).toBe("✓✓ Read");

      // The stream drops (here: the server ends it): a reconnecting notice, then back to normal.
      await page.evaluate(() => {
        const seen: string[] = [];
        (globalThis as unknown as { connectionStates: string[] }).connectionStates = seen;
        new MutationObserver(() => seen.push(document.body.dataset.connection ?? "")).observe(document.body, {
          attributes: true,
          attributeFilter: ["data-connection"],
        });
      });
      api.context.replyHub.close();
      await expect
        .poll(() => page.evaluate(() => (globalThis as unknown as { connectionStates: string[] }).connectionStates), {
          timeout: 15_000,
        })
        .toEqual(expect.arrayContaining(["reconnecting", "ok"]));
      expect(await page.textContent("#notice")).toBe("");
      // The server unreachable: the panel says it is offline, and recovers.
      await context.setOffline(true);
      await page.waitForSelector("#notice[data-state=offline]", { timeout: 10_000 });
      expect(await page.textContent("#notice")).toContain("You are offline");
      await context.setOffline(false);
      await page.waitForSelector("#notice[data-state=ok]", { state: "attached", timeout: 15_000 });
      expect(errors.filter((error) => !/ERR_INTERNET_DISCONNECTED|net::/.test(error))).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("works from the keyboard alone: Tab reaches the input and Send, Enter sends, Escape leaves the panel", async () => {
    const { channelId, client } = await channelWith({});
    const panelUrl = `http://localhost:${new URL(api.baseUrl).port}/webchat/${channelId}`;
    const host = await serveHostPage(
      `<!doctype html><html lang="en"><title>A business</title><main><h1>Welcome</h1>
      <iframe id="chat" title="Chat" src="${panelUrl}" style="position:fixed;right:24px;bottom:24px;width:400px;height:640px;border:0"></iframe></main>
      <script>window.heard=[];addEventListener("message",(e)=>heard.push(e.data));</script>`,
    );
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    try {
      await page.goto(host.url);
      const frame = await panelFrame(page, panelUrl);
      const order: string[] = [];
      for (let step = 0; step < 4; step += 1) {
        await page.keyboard.press("Tab");
        order.push(await frame.evaluate(() => document.activeElement?.id ?? document.activeElement?.tagName ?? ""));
      }
      expect(order).toEqual(["end", "messages", "text", "send"]);
      await page.keyboard.press("Shift+Tab");
      await page.keyboard.type("Typed without a mouse");
      await page.keyboard.press("Enter");
      const conversation = await eventually(
        () => client.get("/conversations", { query: { channel_id: channelId } }),
        (response) => response.body.data.length === 1,
      );
      const inbound = await client.get(`/conversations/${conversation.body.data[0].id}/messages`);
      expect(inbound.body.data[0]).toMatchObject({ direction: "inbound", text: "Typed without a mouse" });
      // Send by the button, from the keyboard.
      await page.keyboard.type("And by the button");
      await page.keyboard.press("Tab");
      await page.keyboard.press("Enter");
      await eventually(
        () => client.get(`/conversations/${conversation.body.data[0].id}/messages`),
        (response) => response.body.data.length === 2,
      );
      // Escape leaves the panel. A plain iframe (no `?parent=`, not widget.js) tells its page nothing:
      // the panel posts only to an exact, declared origin (widget.js's close is tested with it).
      await page.keyboard.press("Escape");
      expect(await page.evaluate(() => (globalThis as unknown as { heard: unknown[] }).heard)).toEqual([]);
      expect(await frame.evaluate(() => document.activeElement === document.body)).toBe(true);
    } finally {
      await context.close();
      await host.close();
    }
  });

  it("speaks the visitor's language, right to left for Arabic, and honours reduced motion", async () => {
    const { channelId } = await channelWith({ prechat_email: "optional" });
    const french = await openPanel(channelId, { locale: "fr-FR" });
    try {
      expect(await french.page.getAttribute("html", "lang")).toBe("fr");
      expect(await french.page.textContent("#prechat-start")).toBe("Commencer");
      expect(await french.page.getAttribute("#text", "placeholder")).toBe("Écrivez un message");
    } finally {
      await french.context.close();
    }
    const spanish = await openPanel(channelId, { locale: "fr-FR" }, "?lang=es");
    try {
      expect(await spanish.page.textContent("#send")).toBe("Enviar");
    } finally {
      await spanish.context.close();
    }
    const arabic = await openPanel(channelId, { locale: "ar-EG", reducedMotion: "reduce" });
    try {
      expect(await arabic.page.getAttribute("html", "dir")).toBe("rtl");
      expect(await arabic.page.textContent("#send")).toBe("إرسال");
      // The layout turns round: the title starts at the right.
      const title = await arabic.page.locator("h1").boundingBox();
      const end = await arabic.page.locator("#end").boundingBox();
      expect(title && end && title.x > end.x).toBe(true);
      expect(await seriousViolations(arabic.page)).toEqual([]);
      expect(
        await arabic.page.evaluate(() => {
          const box = document.getElementById("typing");
          if (!box) return "";
          box.hidden = false;
          return getComputedStyle(box.querySelector(".dot") as unknown).animationName;
        }),
      ).toBe("none");
      expect(arabic.errors).toEqual([]);
    } finally {
      await arabic.context.close();
    }
  });

  it("looks right at desktop and phone widths (screenshots), with no serious accessibility violation", async () => {
    const { org, channelId, client } = await channelWith({ greeting: "Hi! Ask us anything." });
    const panelUrl = `${root()}/webchat/${channelId}`;
    const host = await serveHostPage(
      `<!doctype html><html lang="en"><title>A business</title><body style="margin:0;background:#e5e7eb;font:16px system-ui">
      <main style="padding:40px"><h1>Acme</h1><p>The business's own page.</p></main>
      <iframe id="chat" title="Chat" src="${panelUrl}" style="position:fixed;right:24px;bottom:24px;width:400px;height:640px;border:0;border-radius:12px;box-shadow:0 8px 30px rgba(0,0,0,.25)"></iframe></body>`,
    );
    const desktop = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await desktop.newPage();
    const phone = await browser.newContext({
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
    });
    try {
      await page.goto(host.url);
      const frame = await panelFrame(page, panelUrl);
      const conversation = await visitorWrites(frame, client, channelId, "Hello! Is my order on its way?");
      const agent = await createUser(api.context.db, {
        organizationId: org.id,
        name: "Ana Agent",
        email: `${randomUUID()}@example.com`,
      });
      await client.post(`/conversations/${conversation.id}/assign`, { body: { user_id: agent.id } });
      const reply = await client.post("/messages", {
        body: {
          conversation_id: conversation.id,
          type: "text",
          text: "It left this morning. Track it at https://example.com/track?order=42",
        },
      });
      await frame.waitForSelector(`.message.outbound[data-id="${reply.body.id}"]`, { timeout: 10_000 });
      await frame.waitForSelector(".mark[data-state=read]");
      await client.post(`/conversations/${conversation.id}/typing`);
      await frame.waitForSelector("#typing:not([hidden])", { timeout: 10_000 });
      expect(await seriousViolations(frame)).toEqual([]);
      await page.screenshot({ path: new URL("panel-desktop.png", OUTPUT).pathname });

      // The same conversation on a phone: the panel is the whole screen.
      const token = await frame.evaluate((key) => {
        try {
          return localStorage.getItem(key);
        } catch {
          return null;
        }
      }, `parley:webchat:${channelId}`);
      const mobile = await phone.newPage();
      if (token) {
        await mobile.addInitScript(
          ([key, value]) => {
            localStorage.setItem(key as string, value as string);
          },
          [`parley:webchat:${channelId}`, token],
        );
      }
      await mobile.goto(panelUrl);
      await mobile.waitForSelector("body[data-ready=true]");
      const size = await mobile.evaluate(() => {
        const composer = document.getElementById("composer")?.getBoundingClientRect();
        return { width: document.body.clientWidth, height: document.body.clientHeight, bottom: composer?.bottom };
      });
      expect(size).toEqual({ width: 390, height: 844, bottom: 844 });
      expect(await mobile.evaluate(() => getComputedStyle(document.getElementById("text") as unknown).fontSize)).toBe(
        "16px",
      );
      await mobile.screenshot({ path: new URL("panel-phone.png", OUTPUT).pathname });
    } finally {
      await desktop.close();
      await phone.close();
      await host.close();
    }
  });
});

async function panelFrame(page: Page, panelUrl: string): Promise<Frame> {
  const frame = await waitForFrame(page, (url) => url.startsWith(panelUrl));
  await frame.waitForSelector("body[data-ready=true]", { timeout: 15_000 });
  return frame;
}
