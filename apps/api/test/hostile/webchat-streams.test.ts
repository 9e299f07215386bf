import { describe, expect, it } from "vitest";
import { as, createTestOrganization, eventually, type TestApi, useTestApi } from "../harness.js";
import { onlyConversation, openStream, startSession, visitor, webchatChannel } from "../webchat-helpers.js";

const queries: string[] = [];
/** Counts the statements it sends; streams per address are not what it tests. */
const api = useTestApi({ WEBCHAT_STREAMS_PER_ADDRESS: "1000" }, { onQuery: (query) => queries.push(query) });
const perAddress = useTestApi({ WEBCHAT_STREAMS_PER_ADDRESS: "3" });
const perProcess = useTestApi({ WEBCHAT_STREAMS_PER_PROCESS: "2" });

type Stream = Awaited<ReturnType<typeof openStream>>;

/** A visitor who has written (so the conversation exists), with the business's key for replies. */
async function conversingVisitor(on: TestApi) {
  const org = await createTestOrganization(on);
  const channelId = await webchatChannel(on, org.test);
  const token = await startSession(on, channelId);
  expect((await visitor(on, token).post("/session/messages", { text: "Hi" })).status).toBe(201);
  const conversationId = await onlyConversation(on, org.test, channelId);
  const reply = async (text: string) => {
    const sent = await as(on, org.test).post("/messages", {
      body: { conversation_id: conversationId, type: "text", text },
    });
    expect(sent.status).toBe(201);
    return sent.body.id as string;
  };
  return { token, reply };
}

async function expectRefused(on: TestApi, token: string) {
  const response = await fetch(`${on.baseUrl}/webchat/session/events?token=${token}`);
  expect(response.status).toBe(429);
  const body = (await response.json()) as { error: { code: string } };
  expect(body.error.code).toBe("rate_limited");
  expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
}

describe("web chat event streams", () => {
  it("read the database once per poll for all streams, not once per stream", async () => {
    const visitors = await Promise.all(Array.from({ length: 30 }, () => conversingVisitor(api)));
    const streams: Stream[] = [];
    for (const { token } of visitors) {
      const stream = await openStream(api, token);
      expect(stream.response.status).toBe(200);
      streams.push(stream);
    }
    try {
      queries.length = 0;
      const start = Date.now();
      // A measuring window of two seconds: four polls of 500 ms.
      await eventually(
        async () => Date.now() - start,
        (elapsed) => elapsed >= 2_000,
        5_000,
      );
      const elapsed = Date.now() - start;
      const reads = queries.filter((query) => /\b(messages|webchat_sessions)\b/.test(query)).length;
      // One statement per poll (two while sessions wait for a conversation), whatever the
      // number of streams; polling per stream sent 30 x 2 per poll.
      expect(reads).toBeLessThanOrEqual(2 * (Math.ceil(elapsed / 500) + 1));
      // And every stream still gets its reply.
      const ids = await Promise.all(visitors.map((v, index) => v.reply(`Reply ${index}`)));
      await Promise.all(streams.map((stream, index) => stream.readUntil((text) => text.includes(`id: ${ids[index]}`))));
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it("keep at most two open per session: a third closes the oldest", async () => {
    const { token, reply } = await conversingVisitor(api);
    const first = await openStream(api, token);
    const second = await openStream(api, token);
    const third = await openStream(api, token);
    try {
      expect(third.response.status).toBe(200);
      expect(await first.ended(5_000)).toBe(true);
      const id = await reply("To the open ones");
      await second.readUntil((text) => text.includes(`id: ${id}`));
      await third.readUntil((text) => text.includes(`id: ${id}`));
    } finally {
      for (const stream of [first, second, third]) stream.close();
    }
  });

  it("are capped per source address: 429 rate_limited beyond, a session's own replacement still allowed", async () => {
    const a = await conversingVisitor(perAddress);
    const b = await conversingVisitor(perAddress);
    const open = [
      await openStream(perAddress, a.token),
      await openStream(perAddress, a.token),
      await openStream(perAddress, b.token),
    ];
    try {
      for (const stream of open) expect(stream.response.status).toBe(200);
      await expectRefused(perAddress, b.token);
      // A's third replaces A's oldest: still three from this address.
      const replacement = await openStream(perAddress, a.token);
      open.push(replacement);
      expect(replacement.response.status).toBe(200);
      expect(await open[0]?.ended(5_000)).toBe(true);
    } finally {
      for (const stream of open) stream.close();
    }
  });

  it("are capped per process: 429 rate_limited beyond", async () => {
    const visitors = await Promise.all([0, 1, 2].map(() => conversingVisitor(perProcess)));
    const open: Stream[] = [];
    try {
      for (const { token } of visitors.slice(0, 2)) {
        const stream = await openStream(perProcess, token);
        open.push(stream);
        expect(stream.response.status).toBe(200);
      }
      await expectRefused(perProcess, visitors[2]?.token ?? "");
      // A closed stream frees its place.
      open[0]?.close();
      await eventually(
        async () => {
          const stream = await openStream(perProcess, visitors[2]?.token ?? "");
          open.push(stream);
          if (stream.response.status !== 200) stream.close();
          return stream.response.status;
        },
        (status) => status === 200,
      );
    } finally {
      for (const stream of open) stream.close();
    }
  });
});
