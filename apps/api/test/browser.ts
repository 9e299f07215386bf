import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type Browser, chromium, type Frame, type Page } from "playwright-core";
import { eventually } from "./harness.js";

/**
 * What the browser tests share: Debian's Chromium (installed by .ci/run; the tests skip
 * where it is missing), with its default third-party storage blocking left on, and a
 * business's site served from 127.0.0.1 while Parley is addressed as `localhost`: two sites.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const hasChromium = existsSync(CHROMIUM);

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
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
}

/** The page's frame whose address `matches`, once it is there (within 15 s). */
export async function waitForFrame(page: Page, matches: (url: string) => boolean): Promise<Frame> {
  const frame = await eventually(
    async () => page.frames().find((candidate) => matches(candidate.url())),
    (candidate) => candidate !== undefined,
    15_000,
  );
  if (!frame) throw new Error("no such frame");
  return frame;
}

/** A business's site on a site of its own (127.0.0.1, another port): the same page at every path. */
export async function serveHostPage(html: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    response.end(html);
  }).listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Run in the page: which storages throw when touched, as a browser's blocked third-party storage does. */
export function storageRefused(): { local: boolean; session: boolean } {
  const refused = (read: () => unknown) => {
    try {
      read();
      return false;
    } catch {
      return true;
    }
  };
  const page = globalThis as unknown as Record<"localStorage" | "sessionStorage", unknown>;
  return { local: refused(() => page.localStorage), session: refused(() => page.sessionStorage) };
}
