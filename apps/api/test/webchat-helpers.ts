import { expect } from "vitest";
import { connectChannel } from "../src/channels/service.js";
import { as, call, type TestApi } from "./harness.js";

/** A live web chat channel of the organization, connected as `pnpm admin connect-channel` does. */
export function connectLiveWebchat(
  api: TestApi,
  organizationId: string,
  settings: Record<string, unknown>,
  name = "Acme support",
) {
  return connectChannel(api.context.db, api.context.secretBox, {
    organizationId,
    environment: "live",
    type: "webchat",
    name,
    provider: "webchat",
    settings,
  });
}

/** The web chat channel every test environment has. */
export async function webchatChannel(api: TestApi, key: string): Promise<string> {
  const channels = await as(api, key).get("/channels", { query: { type: "webchat" } });
  return channels.body.data[0].id as string;
}

/** The visitor's side: requests to `/v1/webchat`, with the token as a Bearer header when given. */
export function visitor(api: TestApi, token?: string, headers: Record<string, string> = {}) {
  const send = (method: string) => (path: string, body?: unknown) =>
    call(api, method, `/webchat${path}`, {
      ...(body === undefined ? {} : { body }),
      headers: { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
  return { get: send("GET"), post: send("POST"), delete: send("DELETE") };
}

export async function startSession(api: TestApi, channelId: string, body: unknown = {}): Promise<string> {
  const response = await visitor(api).post(`/channels/${channelId}/sessions`, body);
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.token as string;
}

/** The conversation of a channel that has exactly one, as the business sees it. */
export async function onlyConversation(api: TestApi, key: string, channelId: string): Promise<string> {
  const list = await as(api, key).get("/conversations", { query: { channel_id: channelId } });
  expect(list.body.data).toHaveLength(1);
  return list.body.data[0].id as string;
}

/** An open event stream: what it has received so far, read until `done` holds. */
export async function openStream(api: TestApi, token: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const response = await fetch(`${api.baseUrl}/webchat/session/events?token=${token}`, {
    signal: controller.signal,
    headers,
  });
  const reader = response.body?.getReader();
  let received = "";
  let ended = false;
  return {
    response,
    get received() {
      return received;
    },
    /** Reads until `done` holds or the stream ends; throws after `timeoutMs`. */
    async readUntil(done: (text: string) => boolean, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!done(received) && !ended) {
        if (!reader) throw new Error("the stream has no body");
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`stream condition not met within ${timeoutMs} ms; received: ${received}`);
        let timer: NodeJS.Timeout | undefined;
        const chunk = await Promise.race([
          reader.read().catch(() => ({ done: true as const, value: undefined })),
          new Promise<"timeout">((resolve) => {
            timer = setTimeout(() => resolve("timeout"), left);
          }),
        ]);
        clearTimeout(timer);
        if (chunk === "timeout") continue;
        if (chunk.done) ended = true;
        received += new TextDecoder().decode(chunk.value ?? new Uint8Array());
      }
      return received;
    },
    /** Resolves when the server ends the stream. */
    async ended(timeoutMs = 10_000) {
      await this.readUntil(() => false, timeoutMs).catch(() => {});
      return ended;
    },
    close: () => controller.abort(),
  };
}

/** The `data:` of each `event: message` in a stream's text. */
export function streamedMessages(text: string): Record<string, unknown>[] {
  return [...text.matchAll(/event: message\ndata: (.*)\n/g)].map((match) => JSON.parse(match[1] ?? "{}"));
}
