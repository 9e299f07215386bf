import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium, launchChromium, serveHostPage, storageRefused, waitForFrame } from "./browser.js";
import { as, createTestOrganization, eventually, useTestApi, useTestWorker } from "./harness.js";

const api = useTestApi({}, { ownDatabase: true });
useTestWorker(api);

describe.skipIf(!hasChromium)("the web chat widget in a real browser", () => {
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchChromium();
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
  it("works embedded cross-site, where the browser refuses the iframe its storage", async () => {
    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    const channels = await client.get("/channels", { query: { type: "webchat" } });
    const channelId = channels.body.data[0].id as string;

    // The API listens on 127.0.0.1; the iframe is addressed by `localhost` and the host page is
    // served from 127.0.0.1: two sites, so the panel is a third-party frame.
    const apiPort = new URL(api.baseUrl).port;
    const panelUrl = `http://localhost:${apiPort}/webchat/${channelId}`;
    const host = await serveHostPage(
      `<!doctype html><title>A business</title><iframe id="chat" src="${panelUrl}" style="width:360px;height:520px;border:0"></iframe>`,
    );
    const page = await browser.newPage();
    const navigations: string[] = [];
    page.on("framenavigated", (frame) => navigations.push(frame.url()));
    try {
      await page.goto(host.url);
      const frame = await waitForFrame(page, (url) => url.startsWith(panelUrl));
      await frame.waitForSelector("body[data-ready=true]", { timeout: 15_000 });
      // The browser's default: a third-party frame gets no storage. The page must live without it.
      expect(await frame.evaluate(storageRefused)).toEqual({ local: true, session: true });

      await frame.fill("#text", "Hello across sites");
      await frame.press("#text", "Enter");
      const conversations = await eventually(
        () => client.get("/conversations", { query: { channel_id: channelId } }),
        (response) => response.body.data.length === 1,
        15_000,
      );
      const conversationId = conversations.body.data[0].id as string;
      const inbound = await eventually(
        () => client.get(`/conversations/${conversationId}/messages`, { query: { direction: "inbound" } }),
        (response) => response.body.data.length === 1,
      );
      expect(inbound.body.data[0]).toMatchObject({ direction: "inbound", text: "Hello across sites" });

      const reply = await client.post("/messages", {
        body: { conversation_id: conversationId, type: "text", text: "Hello from the business" },
      });
      expect(reply.status).toBe(201);
      await frame.waitForSelector(`.outbound[data-id="${reply.body.id}"]`, { timeout: 15_000 });
      expect(await frame.textContent(`.outbound[data-id="${reply.body.id}"]`)).toBe("Hello from the business");

      // A second message goes through the same session (the token held in memory).
      await frame.fill("#text", "And a second one");
      await frame.press("#text", "Enter");
      await eventually(
        () => client.get(`/conversations/${conversationId}/messages`, { query: { direction: "inbound" } }),
        (response) => response.body.data.length === 2,
      );
      const all = await client.get("/conversations", { query: { channel_id: channelId } });
      expect(all.body.data).toHaveLength(1);

      // The form never submitted natively: the panel is still the page it was, and no text went into a URL.
      expect(frame.url()).toBe(panelUrl);
      for (const url of navigations) expect(url).not.toMatch(/text=|Hello|second/);
    } finally {
      await page.close();
      await host.close();
    }
  });
  it("never submits the form natively, so no message text ever lands in a URL", async () => {
    const org = await createTestOrganization(api);
    const channels = await as(api, org.test).get("/channels", { query: { type: "webchat" } });
    const channelId = channels.body.data[0].id as string;
    const panelUrl = `http://localhost:${new URL(api.baseUrl).port}/webchat/${channelId}`;
    const host = await serveHostPage(`<!doctype html><iframe src="${panelUrl}"></iframe>`);
    // Even with its script dead (here: not run at all), the page offers the browser nothing to submit.
    for (const javaScriptEnabled of [true, false]) {
      const context = await browser.newContext({ javaScriptEnabled });
      const page = await context.newPage();
      const requested: string[] = [];
      page.on("request", (request) => requested.push(request.url()));
      // A native submit would be refused by the page's `form-action 'none'`; it must not even be tried.
      const violations: string[] = [];
      page.on("console", (message) => {
        if (/Content Security Policy|form-action/i.test(message.text())) violations.push(message.text());
      });
      try {
        await page.goto(host.url);
        const frame = await waitForFrame(page, (url) => url.startsWith(panelUrl));
        await frame.waitForSelector("#text");
        await frame.fill("#text", "secret words");
        await frame.press("#text", "Enter");
        await frame.click("#composer button");
        // Give a native submit (a navigation) every chance to happen: the frame would reload.
        await page.waitForLoadState("networkidle");
        expect(frame.isDetached()).toBe(false);
        expect(frame.url()).toBe(panelUrl);
        for (const url of requested) expect(url).not.toMatch(/secret|text=/);
        expect(violations).toEqual([]);
        // Nothing to submit: no form, and the text field has no name a submission would carry.
        expect(await frame.$("form")).toBeNull();
        expect(await frame.getAttribute("#text", "name")).toBeNull();
      } finally {
        await context.close();
      }
    }
    await host.close();
  });
});
