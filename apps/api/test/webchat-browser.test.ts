import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { as, createTestOrganization, eventually, useTestApi, useTestWorker } from "./harness.js";

/** Debian's `chromium` package; the test is skipped where it is not installed (`apt-get install chromium`). */
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);

const api = useTestApi({}, { ownDatabase: true });
useTestWorker(api);

describe.skipIf(!hasChromium)("the web chat widget in a real browser", () => {
  let browser: Browser;

  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
  });

  afterAll(async () => {
    await browser?.close();
  });

  it("sends the visitor's message to the API and shows the agent's reply, which the page reports read", async () => {
    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    const channels = await client.get("/channels", { query: { type: "webchat" } });
    const channelId = channels.body.data[0].id as string;

    const page = await browser.newPage();
    // The page's Content-Security-Policy must not block anything of its own.
    const violations: string[] = [];
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
    });
    await page.goto(`${api.baseUrl.replace(/\/v1$/, "")}/webchat/${channelId}`);
    await page.waitForSelector("body[data-ready=true]", { timeout: 15_000 });
    await page.fill("#text", "Hello from the browser");
    await page.press("#text", "Enter");

    const conversations = await eventually(
      () => client.get("/conversations", { query: { channel_id: channelId } }),
      (response) => response.body.data.length === 1,
    );
    const conversationId = conversations.body.data[0].id as string;
    const inbound = await eventually(
      () => client.get(`/conversations/${conversationId}/messages`, { query: { direction: "inbound" } }),
      (response) => response.body.data.length === 1,
    );
    expect(inbound.body.data[0]).toMatchObject({ direction: "inbound", text: "Hello from the browser", status: null });

    const reply = await client.post("/messages", {
      body: { conversation_id: conversationId, type: "text", text: "Hi! How can we help?" },
    });
    expect(reply.status).toBe(201);
    await page.waitForSelector(`.outbound[data-id="${reply.body.id}"]`, { timeout: 15_000 });
    expect(await page.textContent(`.outbound[data-id="${reply.body.id}"]`)).toBe("Hi! How can we help?");

    const read = await eventually(
      () => client.get(`/messages/${reply.body.id}`),
      (response) => response.body.status === "read",
    );
    expect(read.body.status).toBe("read");
    expect(violations).toEqual([]);
    await page.close();
  });
});
