import { randomBytes } from "node:crypto";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import {
  download,
  hasGpsDirectory,
  IMAGE_TYPES,
  type ImageFormat,
  MAX_UPLOAD_BYTES,
  makeImage,
  makePdf,
  multipartBody,
  padPng,
  postUploadBody,
  RESIZE_ABOVE_BYTES,
  type UploadFile,
  upload,
  uploadNamed,
} from "../../test/files.js";
import { type ApiResponse, createTestOrganization, expectError, TIMESTAMP, useTestApi } from "../../test/harness.js";
import { createApiKey } from "../organizations/api-keys.js";

const api = useTestApi();

const ATTACHMENT_ID = /^att_[0-9A-HJKMNP-TV-Z]{26}$/;
const DAY_MS = 24 * 60 * 60 * 1000;

async function setup() {
  const org = await createTestOrganization(api);
  return { org, key: org.test };
}

function expectFileError(response: ApiResponse) {
  expectError(response, 422, "validation_error", "file");
  expect(response.body.error.details).toEqual([{ param: "file", message: expect.any(String) }]);
}

async function uploaded(key: string, file: UploadFile) {
  const response = await upload(api, key, file);
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

/** The stored file as the content endpoint answers it; its length is the attachment's size. */
async function downloaded(key: string, attachment: { url: string; size: number }) {
  const file = await download(key, attachment.url);
  expect(file.status).toBe(200);
  expect(file.bytes.length).toBe(attachment.size);
  return file.bytes;
}

async function attachmentCount(organizationId: string): Promise<number> {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from attachments where organization_id = ${organizationId}`;
  return row?.count ?? -1;
}

/** The fixture really carries what the test claims to strip. */
async function expectExifWithGps(bytes: Buffer, orientation?: number) {
  const metadata = await sharp(bytes).metadata();
  expect(metadata.exif).toBeDefined();
  expect(hasGpsDirectory(metadata.exif ?? Buffer.alloc(0))).toBe(true);
  if (orientation !== undefined) expect(metadata.orientation).toBe(orientation);
}

async function expectCleanImage(bytes: Buffer, format: ImageFormat, width: number, height: number) {
  const metadata = await sharp(bytes).metadata();
  expect(metadata.format).toBe(format);
  expect({ width: metadata.width, height: metadata.height }).toEqual({ width, height });
  expect(metadata.exif).toBeUndefined();
  expect(metadata.orientation).toBeUndefined();
}

describe("POST /uploads: the attachment", () => {
  it("answers 201 with an attachment whose url downloads the PDF byte for byte", async () => {
    const { key } = await setup();
    const pdf = makePdf();
    const before = Date.now();

    const response = await upload(api, key, { bytes: pdf, type: "application/pdf", filename: "invoice.pdf" });

    const after = Date.now();
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    const attachment = response.body;
    expect(attachment).toEqual({
      object: "attachment",
      id: expect.stringMatching(ATTACHMENT_ID),
      filename: "invoice.pdf",
      content_type: "application/pdf",
      size: pdf.length,
      url: `${api.baseUrl}/attachments/${attachment.id}/content`,
      expires_at: expect.stringMatching(TIMESTAMP),
      created_at: expect.stringMatching(TIMESTAMP),
    });
    expect(Date.parse(attachment.created_at)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(attachment.created_at)).toBeLessThanOrEqual(after);
    expect(Date.parse(attachment.expires_at) - Date.parse(attachment.created_at)).toBe(DAY_MS);
    expect(await downloaded(key, attachment)).toEqual(pdf);
  });

  it("stores a text file as text/plain, dropping the declared type's parameters", async () => {
    const { key } = await setup();
    const text = Buffer.from("Bonjour, voici le récapitulatif.\n", "utf8");

    const attachment = await uploaded(key, { bytes: text, type: "text/plain;charset=utf-8", filename: "notes.txt" });

    expect(attachment).toMatchObject({ content_type: "text/plain", size: text.length, filename: "notes.txt" });
    expect(await downloaded(key, attachment)).toEqual(text);
  });

  // Files are mostly compressed already (re-encoded images, PDF, audio, video): PostgreSQL's
  // attempt to compress them again cost an 880 KB JPEG 15 ms of its insert for nothing.
  it("stores a file's bytes out of line as they are, without PostgreSQL compressing them", async () => {
    const { key } = await setup();
    const text = Buffer.from("the same line again and again\n".repeat(4_000), "utf8");

    const attachment = await uploaded(key, { bytes: text, type: "text/plain", filename: "log.txt" });

    const [stored] = await api.client.sql<{ compression: string | null; stored_bytes: number }[]>`
      select pg_column_compression(data) as compression, pg_column_size(data) as stored_bytes
      from attachment_contents where attachment_id = ${attachment.id}`;
    // Compressible as it is, it would be pglz-compressed to a fraction of its size by default.
    expect(stored).toEqual({ compression: null, stored_bytes: text.length });
    expect(await downloaded(key, attachment)).toEqual(text);
  });

  it.each([
    ["audio/aac", "voice.aac"],
    ["audio/mp4", "voice.m4a"],
    ["audio/mpeg", "song.mp3"],
    ["audio/amr", "memo.amr"],
    ["audio/ogg", "memo.ogg"],
    ["application/msword", "letter.doc"],
    ["application/vnd.openxmlformats-officedocument.wordprocessingml.document", "letter.docx"],
    ["application/vnd.ms-excel", "sheet.xls"],
    ["application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "sheet.xlsx"],
    ["video/mp4", "clip.mp4"],
    ["video/3gpp", "clip.3gp"],
  ])("accepts %s from the table and stores it unchanged", async (type, filename) => {
    const { key } = await setup();
    const bytes = randomBytes(2048);

    const attachment = await uploaded(key, { bytes, type, filename });

    expect(attachment).toMatchObject({ content_type: type, size: bytes.length, filename });
    expect(await downloaded(key, attachment)).toEqual(bytes);
  });

  it("creates the attachment in the key's environment: a live upload works with the live key", async () => {
    const { org } = await setup();
    const pdf = makePdf();

    const attachment = await uploaded(org.live, { bytes: pdf, type: "application/pdf", filename: "live.pdf" });

    expect(await downloaded(org.live, attachment)).toEqual(pdf);
    const [row] = await api.client.sql<{ environment: string; organization_id: string }[]>`
      select environment, organization_id from attachments where id = ${attachment.id}`;
    expect(row).toEqual({ environment: "live", organization_id: org.id });
  });
});

describe("POST /uploads: images", () => {
  it("turns a large JPEG upright by its EXIF orientation, scales it to 1600 px on the long side and strips EXIF and GPS", async () => {
    const { key } = await setup();
    // Stored 2400 × 1800 with orientation 6: it displays 1800 wide and 2400 high.
    const jpeg = await makeImage("jpeg", { width: 2400, height: 1800, noise: 0.6, orientation: 6 });
    expect(jpeg.length).toBeGreaterThan(2 * RESIZE_ABOVE_BYTES);
    await expectExifWithGps(jpeg, 6);

    const attachment = await uploaded(key, { bytes: jpeg, type: "image/jpeg", filename: "holiday.jpg" });

    expect(attachment).toMatchObject({ content_type: "image/jpeg", filename: "holiday.jpg" });
    expect(attachment.size).toBeLessThan(jpeg.length);
    await expectCleanImage(await downloaded(key, attachment), "jpeg", 1200, 1600);
  });

  it("turns a large PNG upright, scales it to 1600 px on the long side and strips EXIF and GPS", async () => {
    const { key } = await setup();
    const png = await makeImage("png", { width: 3000, height: 2000, noise: 0.2, orientation: 6 });
    expect(png.length).toBeGreaterThan(2 * RESIZE_ABOVE_BYTES);
    await expectExifWithGps(png, 6);

    const attachment = await uploaded(key, { bytes: png, type: "image/png", filename: "scan.png" });

    expect(attachment.content_type).toBe("image/png");
    // 2000 × 3000 once upright, scaled by 1600 / 3000.
    await expectCleanImage(await downloaded(key, attachment), "png", 1067, 1600);
  });

  it.each([
    ["jpeg", 3200, 2000, 1600, 1000],
    ["png", 2000, 3000, 1067, 1600],
    ["webp", 4000, 1000, 1600, 400],
  ] as const)(
    "scales a large %s of %d × %d to %d × %d, keeping its aspect",
    async (format, width, height, scaledWidth, scaledHeight) => {
      const { key } = await setup();
      const image = await makeImage(format, { width, height, noise: 0.25 });
      expect(image.length).toBeGreaterThan(RESIZE_ABOVE_BYTES);

      const attachment = await uploaded(key, { bytes: image, type: IMAGE_TYPES[format], filename: `big.${format}` });

      expect(attachment.content_type).toBe(IMAGE_TYPES[format]);
      await expectCleanImage(await downloaded(key, attachment), format, scaledWidth, scaledHeight);
    },
  );

  it.each([
    ["png", "small.png"],
    ["jpeg", "small.jpg"],
    ["webp", "small.webp"],
  ] as const)("keeps a small %s at its dimensions and strips its EXIF and GPS", async (format, filename) => {
    const { key } = await setup();
    const image = await makeImage(format, { width: 640, height: 480, noise: 0.1 });
    expect(image.length).toBeLessThan(RESIZE_ABOVE_BYTES);
    await expectExifWithGps(image);

    const attachment = await uploaded(key, { bytes: image, type: IMAGE_TYPES[format], filename });

    expect(attachment).toMatchObject({ content_type: IMAGE_TYPES[format], filename });
    await expectCleanImage(await downloaded(key, attachment), format, 640, 480);
  });

  it("turns a small JPEG upright by its orientation without scaling it", async () => {
    const { key } = await setup();
    const jpeg = await makeImage("jpeg", { width: 640, height: 480, orientation: 6 });
    expect(jpeg.length).toBeLessThan(RESIZE_ABOVE_BYTES);

    const attachment = await uploaded(key, { bytes: jpeg, type: "image/jpeg", filename: "portrait.jpg" });

    await expectCleanImage(await downloaded(key, attachment), "jpeg", 480, 640);
  });

  it("decides on the byte size: an image of exactly 400 KB keeps 2400 px, one byte more is scaled", async () => {
    const { key } = await setup();
    const png = await makeImage("png", { width: 2400, height: 150, exif: null });
    const atLimit = padPng(png, RESIZE_ABOVE_BYTES);
    const aboveLimit = padPng(png, RESIZE_ABOVE_BYTES + 1);
    expect([atLimit.length, aboveLimit.length]).toEqual([409_600, 409_601]);

    const kept = await uploaded(key, { bytes: atLimit, type: "image/png", filename: "at.png" });
    const scaled = await uploaded(key, { bytes: aboveLimit, type: "image/png", filename: "above.png" });

    await expectCleanImage(await downloaded(key, kept), "png", 2400, 150);
    await expectCleanImage(await downloaded(key, scaled), "png", 1600, 100);
  });

  it("never enlarges a heavy image that is already under 1600 px", async () => {
    const { key } = await setup();
    const jpeg = await makeImage("jpeg", { width: 1000, height: 800, noise: 1, quality: 100 });
    expect(jpeg.length).toBeGreaterThan(RESIZE_ABOVE_BYTES);

    const attachment = await uploaded(key, { bytes: jpeg, type: "image/jpeg", filename: "heavy.jpg" });

    await expectCleanImage(await downloaded(key, attachment), "jpeg", 1000, 800);
  });
});

describe("POST /uploads: size limit", () => {
  it("accepts a file of exactly 16,777,216 bytes", async () => {
    const { key } = await setup();
    const bytes = randomBytes(MAX_UPLOAD_BYTES);

    const attachment = await uploaded(key, { bytes, type: "application/pdf", filename: "exactly-16mb.pdf" });

    expect(attachment).toMatchObject({ size: MAX_UPLOAD_BYTES, content_type: "application/pdf" });
    expect((await downloaded(key, attachment)).equals(bytes)).toBe(true);
  });

  it("refuses a file of 16,777,217 bytes with 413 payload_too_large and stores nothing", async () => {
    const { org, key } = await setup();
    const bytes = randomBytes(MAX_UPLOAD_BYTES + 1);

    const response = await upload(api, key, { bytes, type: "text/plain", filename: "too-big.txt" });

    expectError(response, 413, "payload_too_large");
    expect(await attachmentCount(org.id)).toBe(0);
  });

  it("refuses a body far above the limit with 413 before reading it", async () => {
    const { org, key } = await setup();
    const bytes = randomBytes(MAX_UPLOAD_BYTES + 1024 * 1024);

    const response = await upload(api, key, { bytes, type: "application/pdf", filename: "huge.pdf" });

    expectError(response, 413, "payload_too_large");
    expect(await attachmentCount(org.id)).toBe(0);
  });
});

describe("POST /uploads: content types", () => {
  it.each([
    ["image/gif", "animation.gif"],
    ["application/zip", "archive.zip"],
    ["text/html", "page.html"],
    ["application/json", "data.json"],
    ["image/svg+xml", "logo.svg"],
  ])("refuses %s with 415 unsupported_media_type and stores nothing", async (type, filename) => {
    const { org, key } = await setup();

    const response = await upload(api, key, { bytes: randomBytes(512), type, filename });

    expectError(response, 415, "unsupported_media_type");
    expect(await attachmentCount(org.id)).toBe(0);
  });

  it("refuses a real GIF image with 415", async () => {
    const { key } = await setup();
    const gif = await sharp({ create: { width: 20, height: 20, channels: 3, background: "red" } })
      .gif()
      .toBuffer();

    expectError(
      await upload(api, key, { bytes: gif, type: "image/gif", filename: "a.gif" }),
      415,
      "unsupported_media_type",
    );
  });

  it.each([
    ["report.pdf", "application/pdf"],
    ["REPORT.PDF", "application/pdf"],
    ["notes.txt", "text/plain"],
    ["sheet.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"],
    ["voice.m4a", "audio/mp4"],
  ])("resolves application/octet-stream named %s by its extension as %s", async (filename, expected) => {
    const { key } = await setup();
    const bytes = makePdf();

    const attachment = await uploaded(key, { bytes, type: "application/octet-stream", filename });

    expect(attachment).toMatchObject({ content_type: expected, filename, size: bytes.length });
  });

  it("resolves application/octet-stream named .jpg as a JPEG image, processed like one", async () => {
    const { key } = await setup();
    const jpeg = await makeImage("jpeg", { width: 320, height: 240 });

    const attachment = await uploaded(key, { bytes: jpeg, type: "application/octet-stream", filename: "photo.jpg" });

    expect(attachment.content_type).toBe("image/jpeg");
    await expectCleanImage(await downloaded(key, attachment), "jpeg", 320, 240);
  });

  it("takes a part without its own Content-Type as text/plain, as multipart/form-data defines", async () => {
    const { key } = await setup();
    const text = Buffer.from("no type given");
    const { body, contentType } = multipartBody('name="file"; filename="untyped.pdf"', "text/plain", text);
    const withoutType = Buffer.from(body.toString("latin1").replace("Content-Type: text/plain\r\n", ""), "latin1");
    expect(withoutType.toString("latin1")).not.toContain("Content-Type");

    const response = await postUploadBody(api, key, withoutType, { "content-type": contentType });

    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(response.body).toMatchObject({ content_type: "text/plain", filename: "untyped.pdf", size: text.length });
  });

  it.each([["virus.exe"], ["archive.zip"], ["no-extension"], ["trailing-dot."]])(
    "refuses application/octet-stream named %s with 415",
    async (filename) => {
      const { org, key } = await setup();

      const response = await upload(api, key, { bytes: makePdf(), type: "application/octet-stream", filename });

      expectError(response, 415, "unsupported_media_type");
      expect(await attachmentCount(org.id)).toBe(0);
    },
  );

  it("lets the declared type win over the extension", async () => {
    const { key } = await setup();
    const png = await makeImage("png", { width: 40, height: 30 });

    const text = await uploaded(key, { bytes: Buffer.from("plain"), type: "text/plain", filename: "report.pdf" });
    const pdf = await uploaded(key, { bytes: makePdf(), type: "application/pdf", filename: "photo.jpg" });
    const image = await uploaded(key, { bytes: png, type: "image/png", filename: "photo.jpg" });

    expect(text).toMatchObject({ content_type: "text/plain", filename: "report.pdf" });
    expect(pdf).toMatchObject({ content_type: "application/pdf", filename: "photo.jpg" });
    expect(image).toMatchObject({ content_type: "image/png", filename: "photo.jpg" });
    await expectCleanImage(await downloaded(key, image), "png", 40, 30);
  });

  it("refuses a declared type outside the table even when the extension is in it", async () => {
    const { key } = await setup();

    const response = await upload(api, key, { bytes: makePdf(), type: "application/x-pdf", filename: "report.pdf" });

    expectError(response, 415, "unsupported_media_type");
  });
});

describe("POST /uploads: bodies that are not an upload", () => {
  it("refuses a JSON body with 415 unsupported_media_type", async () => {
    const { key } = await setup();

    const response = await postUploadBody(api, key, JSON.stringify({ file: "aGVsbG8=" }), {
      "content-type": "application/json",
    });

    expectError(response, 415, "unsupported_media_type");
  });

  it("refuses a body without Content-Type with 415", async () => {
    const { key } = await setup();

    const response = await postUploadBody(api, key, makePdf());

    expectError(response, 415, "unsupported_media_type");
  });

  it("refuses a raw PDF body sent as application/pdf with 415", async () => {
    const { key } = await setup();

    const response = await postUploadBody(api, key, makePdf(), { "content-type": "application/pdf" });

    expectError(response, 415, "unsupported_media_type");
  });

  it("refuses an empty request with 415", async () => {
    const { key } = await setup();

    expectError(await postUploadBody(api, key, ""), 415, "unsupported_media_type");
  });

  it("refuses multipart/form-data without a boundary with 415", async () => {
    const { key } = await setup();

    const response = await postUploadBody(api, key, "--x\r\n", { "content-type": "multipart/form-data" });

    expectError(response, 415, "unsupported_media_type");
  });

  it("refuses a multipart body without the field file with 422 naming file", async () => {
    const { org, key } = await setup();
    const form = new FormData();
    form.append("name", "invoice.pdf");
    const response = await fetch(`${api.baseUrl}/uploads`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });

    expectFileError({ status: response.status, headers: response.headers, body: await response.json() });
    expect(await attachmentCount(org.id)).toBe(0);
  });

  it("refuses a file sent in another field with 422 naming file", async () => {
    const { org, key } = await setup();

    const response = await upload(api, key, {
      bytes: makePdf(),
      type: "application/pdf",
      filename: "a.pdf",
      field: "document",
    });

    expectFileError(response);
    expect(await attachmentCount(org.id)).toBe(0);
  });

  it("refuses an empty file with 422 naming file", async () => {
    const { org, key } = await setup();

    const response = await upload(api, key, {
      bytes: new Uint8Array(0),
      type: "application/pdf",
      filename: "empty.pdf",
    });

    expectFileError(response);
    expect(await attachmentCount(org.id)).toBe(0);
  });

  it("refuses a truncated multipart body with a 4xx, never a 5xx", async () => {
    const { org, key } = await setup();
    const { body, contentType } = multipartBody('name="file"; filename="a.pdf"', "application/pdf", makePdf());

    const response = await postUploadBody(api, key, body.subarray(0, body.length - 30), {
      "content-type": contentType,
    });

    expectFileError(response);
    expect(await attachmentCount(org.id)).toBe(0);
  });
});

describe("POST /uploads: files that are not what they claim", () => {
  it("refuses PDF bytes declared image/png with 422 naming file, never 5xx", async () => {
    const { org, key } = await setup();

    const response = await upload(api, key, { bytes: makePdf(), type: "image/png", filename: "photo.png" });

    expectFileError(response);
    expect(await attachmentCount(org.id)).toBe(0);
  });

  it("refuses a PNG declared image/jpeg with 422: an image must decode as the type it declares", async () => {
    const { key } = await setup();
    const png = await makeImage("png", { width: 50, height: 50 });

    expectFileError(await upload(api, key, { bytes: png, type: "image/jpeg", filename: "photo.jpg" }));
  });

  it("refuses a truncated JPEG with 422", async () => {
    const { org, key } = await setup();
    const jpeg = await makeImage("jpeg", { width: 400, height: 300, noise: 1 });

    const response = await upload(api, key, {
      bytes: jpeg.subarray(0, Math.floor(jpeg.length / 2)),
      type: "image/jpeg",
      filename: "broken.jpg",
    });

    expectFileError(response);
    expect(await attachmentCount(org.id)).toBe(0);
  });

  it("refuses a JPEG header followed by garbage with 422", async () => {
    const { key } = await setup();
    const jpeg = await makeImage("jpeg", { width: 400, height: 300, exif: null });
    const corrupt = Buffer.concat([jpeg.subarray(0, 20), Buffer.alloc(4096, 0x07)]);

    expectFileError(await upload(api, key, { bytes: corrupt, type: "image/jpeg", filename: "corrupt.jpg" }));
  });

  it("answers a JPEG with scrambled image data with a 201 or a 4xx, never a 5xx", async () => {
    const { key } = await setup();
    const jpeg = await makeImage("jpeg", { width: 400, height: 300, noise: 1, exif: null });
    const scrambled = Buffer.from(jpeg);
    for (let index = 600; index < scrambled.length - 2; index += 7) scrambled[index] = (scrambled[index] ?? 0) ^ 0xff;

    const response = await upload(api, key, { bytes: scrambled, type: "image/jpeg", filename: "scrambled.jpg" });

    expect([201, 422], JSON.stringify(response.body)).toContain(response.status);
  });

  it("refuses random bytes declared image/webp with 422", async () => {
    const { key } = await setup();

    expectFileError(await upload(api, key, { bytes: randomBytes(5000), type: "image/webp", filename: "x.webp" }));
  });
});

describe("POST /uploads: file names", () => {
  it.each([
    ["facture été 日本.pdf"],
    ['say "hi".pdf'],
    ["line\nbreak.pdf"],
    ["semi; colon=equals, comma (1).pdf"],
    ["😀 smile.pdf"],
  ])("keeps the name %j exactly", async (filename) => {
    const { key } = await setup();

    const response = await uploadNamed(api, key, filename, "application/pdf", makePdf());

    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(response.body.filename).toBe(filename);
  });

  it("keeps a UTF-8 name sent raw in filename, as browsers send it", async () => {
    const { key } = await setup();

    const attachment = await uploaded(key, { bytes: makePdf(), type: "application/pdf", filename: "reçu 領収書.pdf" });

    expect(attachment.filename).toBe("reçu 領収書.pdf");
  });

  it("keeps the first 255 characters of a longer name, never half a character", async () => {
    const { key } = await setup();
    const filename = `${"😀".repeat(300)}.pdf`;

    const response = await uploadNamed(api, key, filename, "application/pdf", makePdf());

    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(Array.from(response.body.filename)).toEqual(Array.from("😀".repeat(255)));
  });

  it("refuses a name holding a NUL character with 422 naming file, never 5xx", async () => {
    const { org, key } = await setup();

    const response = await uploadNamed(api, key, "a\u0000b.pdf", "application/pdf", makePdf());

    expectFileError(response);
    expect(await attachmentCount(org.id)).toBe(0);
  });

  it("keeps only the field file when other files come first", async () => {
    const { key } = await setup();
    const form = new FormData();
    form.append("thumbnail", new Blob([new Uint8Array(makePdf("thumb"))], { type: "application/pdf" }), "thumb.pdf");
    form.append("note", "see attached");
    form.append("file", new Blob([new Uint8Array(makePdf("main"))], { type: "application/pdf" }), "main.pdf");
    const response = await fetch(`${api.baseUrl}/uploads`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });

    expect(response.status).toBe(201);
    const attachment: any = await response.json();
    expect(attachment.filename).toBe("main.pdf");
    expect(await downloaded(key, attachment)).toEqual(makePdf("main"));
  });
});

describe("POST /uploads: requests", () => {
  it("ignores Idempotency-Key: two uploads with the same key create two attachments", async () => {
    const { org, key } = await setup();
    const file = { bytes: makePdf(), type: "application/pdf", filename: "twice.pdf" };
    const headers = { "idempotency-key": "upload-once" };

    const first = await upload(api, key, file, headers);
    const second = await upload(api, key, file, headers);

    expect([first.status, second.status]).toEqual([201, 201]);
    expect(second.body.id).not.toBe(first.body.id);
    expect(second.headers.get("idempotent-replayed")).toBeNull();
    expect(await attachmentCount(org.id)).toBe(2);
  });

  it("needs messages:write: messages:read alone is 403 insufficient_scope", async () => {
    const { org } = await setup();
    const reader = await createApiKey(api.context.db, {
      organizationId: org.id,
      environment: "test",
      scopes: ["messages:read"],
    });
    const writer = await createApiKey(api.context.db, {
      organizationId: org.id,
      environment: "test",
      scopes: ["messages:write"],
    });
    const file = { bytes: makePdf(), type: "application/pdf", filename: "a.pdf" };

    const refused = await upload(api, reader.key, file);

    expectError(refused, 403, "insufficient_scope");
    expect(refused.body.error.message).toContain("messages:write");
    expect(await attachmentCount(org.id)).toBe(0);
    expect((await upload(api, writer.key, file)).status).toBe(201);
  });

  it("needs a key: without one it is 401", async () => {
    const response = await fetch(`${api.baseUrl}/uploads`, { method: "POST", body: new FormData() });

    expect(response.status).toBe(401);
    const body: any = await response.json();
    expect(body.error.code).toBe("authentication_required");
  });
});
