import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type MetaOptions, TemporaryChannelError } from "../src/adapter.js";
import { MetaGraphError } from "../src/meta/errors.js";
import { fetchInboundMedia } from "../src/meta/media.js";
import type { InboundMedia } from "../src/meta/webhook.js";
import { type MetaSimulator, metaErrors, startMetaSimulator } from "../testing/meta-simulator.js";

let simulator: MetaSimulator;
let meta: MetaOptions;

beforeAll(async () => {
  simulator = await startMetaSimulator();
  meta = simulator.options();
});
afterAll(() => simulator.close());
beforeEach(() => simulator.reset());

function byId(id: string, more: Partial<InboundMedia> = {}): InboundMedia {
  return { id, url: null, contentType: null, filename: null, ...more };
}

function byUrl(url: string): InboundMedia {
  return { id: null, url, contentType: null, filename: null };
}

async function refusal(promise: Promise<unknown>): Promise<MetaGraphError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(MetaGraphError);
  return error as MetaGraphError;
}

describe("fetchInboundMedia: WhatsApp media by id", () => {
  it("looks the id up, then downloads its URL, both with the Bearer token", async () => {
    const bytes = randomBytes(3000);
    const { id } = simulator.addMedia(bytes, "image/jpeg");

    const media = await fetchInboundMedia(meta, simulator.accessToken, byId(id, { contentType: "image/jpeg" }));

    expect(media).toEqual({ bytes, contentType: "image/jpeg", filename: `image-${id}.jpg` });
    expect(simulator.requests.map((request) => [request.method, request.path])).toEqual([
      ["GET", `/v23.0/${id}`],
      ["GET", `/media/${id}`],
    ]);
    for (const request of simulator.requests) {
      expect(request.headers.authorization).toBe(`Bearer ${simulator.accessToken}`);
      expect(request.path).not.toContain(simulator.accessToken);
    }
  });

  it("keeps a document's file name, without any folder part", async () => {
    const { id } = simulator.addMedia(Buffer.from("%PDF-1.7"), "application/pdf");
    const media = await fetchInboundMedia(meta, simulator.accessToken, byId(id, { filename: "../../etc/invoice.pdf" }));
    expect(media).toMatchObject({ contentType: "application/pdf", filename: "invoice.pdf" });
  });

  it("drops content type parameters, as attachments store types (a voice note)", async () => {
    const { id } = simulator.addMedia(Buffer.from("OggS"), "audio/ogg; codecs=opus");
    const media = await fetchInboundMedia(
      meta,
      simulator.accessToken,
      byId(id, { contentType: "audio/ogg; codecs=opus" }),
    );
    expect(media).toMatchObject({ contentType: "audio/ogg", filename: `audio-${id}.ogg` });
  });

  it("takes the type from the lookup when the webhook gave none", async () => {
    const { id } = simulator.addMedia(Buffer.from("RIFF"), "video/mp4");
    const media = await fetchInboundMedia(meta, simulator.accessToken, byId(id));
    expect(media).toMatchObject({ contentType: "video/mp4", filename: `video-${id}.mp4` });
  });

  it("needs the token: the simulator's media URL refuses a download without it", async () => {
    const { url } = simulator.addMedia(Buffer.from("x"), "image/png");
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: `Bearer ${simulator.accessToken}` } })).status).toBe(200);
  });

  it("fails with Meta's code for an unknown media id", async () => {
    const error = await refusal(fetchInboundMedia(meta, simulator.accessToken, byId("999")));
    expect(error.code).toBe("100");
    expect(error.message).toMatch(/Object with ID '999' does not exist/);
  });

  it("fails with 190 for a wrong access token", async () => {
    const { id } = simulator.addMedia(Buffer.from("x"), "image/png");
    const error = await refusal(fetchInboundMedia(meta, "EAAwrong", byId(id)));
    expect(error.code).toBe("190");
  });

  it("refuses a file the lookup says is too large, without downloading it", async () => {
    const { id } = simulator.addMedia(Buffer.from("small really"), "video/mp4", { fileSize: 50_000_000 });
    const error = await refusal(fetchInboundMedia(meta, simulator.accessToken, byId(id), 1_000_000));
    expect(error.code).toBe("media_too_large");
    expect(simulator.requests.map((request) => request.path)).toEqual([`/v23.0/${id}`]);
  });

  it("refuses a download that turns out larger than the limit, with or without content-length", async () => {
    const big = randomBytes(4096);
    const declared = simulator.addMedia(big, "image/png", { fileSize: 10 });
    const chunked = simulator.addMedia(big, "image/png", { fileSize: 10, chunked: true });

    for (const { id } of [declared, chunked]) {
      const error = await refusal(fetchInboundMedia(meta, simulator.accessToken, byId(id), 1000));
      expect(error.code).toBe("media_too_large");
    }
    const whole = await fetchInboundMedia(meta, simulator.accessToken, byId(chunked.id), 4096);
    expect(whole.bytes).toEqual(big);
  });

  it("throws a TemporaryChannelError when the lookup is rate limited", async () => {
    const { id } = simulator.addMedia(Buffer.from("x"), "image/png");
    simulator.failNext(1, metaErrors.rateLimit(429));
    await expect(fetchInboundMedia(meta, simulator.accessToken, byId(id))).rejects.toBeInstanceOf(
      TemporaryChannelError,
    );
  });

  it("throws a TemporaryChannelError when the download fails with a 5xx", async () => {
    const { id } = simulator.addMedia(Buffer.from("x"), "image/png");
    simulator.failNext(1, { status: 503, body: "<html>Service Unavailable</html>" }, (request) =>
      request.path.startsWith("/media/"),
    );
    await expect(fetchInboundMedia(meta, simulator.accessToken, byId(id))).rejects.toBeInstanceOf(
      TemporaryChannelError,
    );
    expect(simulator.requests.map((request) => request.path)).toEqual([`/v23.0/${id}`, `/media/${id}`]);
  });

  it("throws a TemporaryChannelError when the download hangs past the timeout", async () => {
    const { id } = simulator.addMedia(Buffer.from("x"), "image/png");
    simulator.failNext(1, { hang: true }, (request) => request.path.startsWith("/media/"));
    const fetching = fetchInboundMedia(simulator.options({ timeoutMs: 200 }), simulator.accessToken, byId(id));
    await expect(fetching).rejects.toThrow(TemporaryChannelError);
  });
});

describe("fetchInboundMedia: Messenger and Instagram media by URL", () => {
  it("downloads the signed CDN URL directly, without showing it the access token", async () => {
    const bytes = randomBytes(2048);
    const { url } = simulator.addMedia(bytes, "image/png", { public: true });

    const media = await fetchInboundMedia(meta, simulator.accessToken, byUrl(url));

    const hash = createHash("sha256").update(url).digest("hex").slice(0, 16);
    expect(media).toEqual({ bytes, contentType: "image/png", filename: `image-${hash}.png` });
    expect(simulator.requests).toHaveLength(1);
    expect(simulator.requests[0]?.headers.authorization).toBeUndefined();
  });

  it("names a file of an unknown type as a document", async () => {
    const { url } = simulator.addMedia(Buffer.from("PK"), "application/zip", { public: true });
    const media = await fetchInboundMedia(meta, simulator.accessToken, byUrl(url));
    expect(media.contentType).toBe("application/zip");
    expect(media.filename).toMatch(/^document-[0-9a-f]{16}\.bin$/);
  });

  it("fails when the webhook named neither id nor URL", async () => {
    const error = await refusal(fetchInboundMedia(meta, simulator.accessToken, byId("", { id: null })));
    expect(error.code).toBe("media_missing");
    expect(simulator.requests).toEqual([]);
  });
});
