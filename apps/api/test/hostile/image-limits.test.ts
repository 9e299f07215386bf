import zlib from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { makeImage, pngChunk, upload } from "../files.js";
import { createTestOrganization, expectError, type TestOrganization, useTestApi } from "../harness.js";

/**
 * Image decoding costs by pixels, not bytes. One pixel cap holds for every image whatever
 * its file size (25 megapixels, `IMAGE_MAX_PIXELS`), read from the header before any
 * pixel is decoded; and a process decodes at most `IMAGE_PROCESSING_CONCURRENCY` (2)
 * images at once, the others waiting their turn.
 */
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "1000000" });

/**
 * A complete, valid 16383 × 16383 RGBA PNG (every row present, all zero): 1 GB of pixels
 * in about 1 MB. Decoding it took 2 CPU-seconds and a GB of memory.
 */
async function hugeRgbaPng(): Promise<Buffer> {
  const side = 16_383;
  const header = Buffer.alloc(13);
  header.writeUInt32BE(side, 0);
  header.writeUInt32BE(side, 4);
  header[8] = 8; // bit depth
  header[9] = 6; // RGBA
  const row = Buffer.alloc(1 + side * 4);
  const deflate = zlib.createDeflate({ level: 9, memLevel: 9 });
  const compressed: Buffer[] = [];
  deflate.on("data", (chunk: Buffer) => compressed.push(chunk));
  const ended = new Promise((resolve) => deflate.on("end", resolve));
  for (let y = 0; y < side; y++) {
    if (!deflate.write(row)) await new Promise((resolve) => deflate.once("drain", resolve));
  }
  deflate.end();
  await ended;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", header),
    pngChunk("IDAT", Buffer.concat(compressed)),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

let org: TestOrganization;
beforeAll(async () => {
  org = await createTestOrganization(api);
});

describe("the pixel cap", () => {
  it("refuses a 1 MB 16383 × 16383 RGBA PNG at once with 422 on file, at almost no CPU", async () => {
    const bytes = await hugeRgbaPng();
    expect(bytes.length).toBeGreaterThan(400 * 1024);
    expect(bytes.length).toBeLessThan(2 * 1024 * 1024);

    // The API runs in this process: its CPU time is this process's.
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const response = await upload(api, org.test, { bytes, type: "image/png", filename: "huge.png" });
    const elapsedMs = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);

    expectError(response, 422, "validation_error", "file");
    expect(response.body.error.message).toMatch(/pixels/);
    expect(response.body.error.message).toContain("25000000");
    expect(elapsedMs).toBeLessThan(1_500);
    expect((cpu.user + cpu.system) / 1000).toBeLessThan(1_000);
  });

  it("refuses a small file over the cap as a large one, and accepts an image just under it", async () => {
    const over = await makeImage("png", { width: 5_001, height: 5_000 });
    expectError(
      await upload(api, org.test, { bytes: over, type: "image/png", filename: "over.png" }),
      422,
      "validation_error",
      "file",
    );

    const under = await makeImage("png", { width: 5_000, height: 5_000 });
    const accepted = await upload(api, org.test, { bytes: under, type: "image/png", filename: "under.png" });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
  });
});

describe("image processing slots", () => {
  it("decodes at most 2 images at once; the others wait and all succeed", async () => {
    const photo = await makeImage("jpeg", { width: 4000, height: 3000, noise: 0.3 });
    const slots = api.context.images.slots;
    let most = 0;
    let queued = 0;
    let uploading = true;
    const watch = (async () => {
      while (uploading) {
        most = Math.max(most, slots.inUse);
        queued = Math.max(queued, slots.waiting);
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();

    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, n) =>
        upload(api, org.test, { bytes: photo, type: "image/jpeg", filename: `photo-${n}.jpg` }),
      ),
    );
    uploading = false;
    await watch;

    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 201, 201, 201]);
    expect(slots.size).toBe(2);
    expect(most).toBe(2);
    // The cap was reached with uploads left over: they waited rather than ran at once.
    expect(queued).toBeGreaterThan(0);
    expect(slots.inUse).toBe(0);
  });
});
