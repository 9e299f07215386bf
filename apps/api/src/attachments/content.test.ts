import { describe, expect, it } from "vitest";
import { type Download, download, jsonOf, makeImage, makePdf, upload, uploadNamed } from "../../test/files.js";
import { as, type Client, createTestOrganization, useTestApi } from "../../test/harness.js";
import { createApiKey } from "../organizations/api-keys.js";

const api = useTestApi();

const UNKNOWN_ATTACHMENT = "att_01ARZ3NDEKTSV4RRFFQ69G5FAV";

async function setup() {
  const org = await createTestOrganization(api);
  return { org, key: org.test, client: as(api, org.test) };
}

async function uploaded(key: string, bytes: Uint8Array, type: string, filename: string) {
  const response = await upload(api, key, { bytes, type, filename });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function uploadedNamed(key: string, filename: string, bytes: Uint8Array = makePdf()) {
  const response = await uploadNamed(api, key, filename, "application/pdf", bytes);
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

function contentUrl(id: string) {
  return `${api.baseUrl}/attachments/${id}/content`;
}

function expectNotFound(file: Download) {
  expect(file.status).toBe(404);
  const body = jsonOf(file);
  expect(body.error.code).toBe("attachment_not_found");
  expect(body.error.request_id).toBe(file.headers.get("x-parley-request-id"));
}

async function storedBytes(attachmentId: string): Promise<Buffer | undefined> {
  const [row] = await api.client.sql<{ data: Buffer }[]>`
    select data from attachment_contents where attachment_id = ${attachmentId}`;
  return row?.data;
}

async function expire(attachmentId: string) {
  await api.client.sql`
    update attachments set expires_at = now() - interval '1 minute' where id = ${attachmentId}`;
}

/** A contact, a conversation on the sandbox WhatsApp channel, and a document sent in it. */
async function sendDocument(client: Client, attachmentId: string) {
  const channels = await client.get("/channels", { query: { type: "whatsapp" } });
  const contact = await client.post("/contacts", { body: { name: "Ada" } });
  const conversation = await client.post("/conversations", {
    body: { contact_id: contact.body.id, channel_id: channels.body.data[0].id },
  });
  const message = await client.post("/messages", {
    body: { conversation_id: conversation.body.id, type: "document", attachment_id: attachmentId },
  });
  expect(message.status, JSON.stringify(message.body)).toBe(201);
  return { contact: contact.body, conversation: conversation.body, message: message.body };
}

/** The `filename*` parameter of a Content-Disposition, decoded. */
function extendedFilename(disposition: string): string | undefined {
  const match = /(?:^|;)\s*filename\*=UTF-8''([^;\s]+)/i.exec(disposition);
  return match?.[1] === undefined ? undefined : decodeURIComponent(match[1]);
}

/** The plain `filename` parameter: a quoted string of printable ASCII without quotes or backslashes. */
function fallbackFilename(disposition: string): string | undefined {
  return /(?:^|;)\s*filename="([\x20\x21\x23-\x5b\x5d-\x7e]*)"/.exec(disposition)?.[1];
}

describe("GET /attachments/{id}/content", () => {
  it("answers the exact stored bytes with their type, the name and Cache-Control: private", async () => {
    const { key } = await setup();
    const pdf = makePdf("Statement");
    const attachment = await uploaded(key, pdf, "application/pdf", "statement.pdf");

    const file = await download(key, attachment.url);

    expect(file.status).toBe(200);
    expect(file.bytes).toEqual(pdf);
    expect(file.bytes).toEqual(await storedBytes(attachment.id));
    expect(file.headers.get("content-type")).toBe("application/pdf");
    expect(file.headers.get("cache-control")).toBe("private");
    expect(file.headers.get("content-length")).toBe(String(pdf.length));
    expect(file.headers.get("x-parley-request-id")).toMatch(/^req_/);
    const disposition = file.headers.get("content-disposition") ?? "";
    expect(disposition).toMatch(/^attachment;/);
    expect(fallbackFilename(disposition)).toBe("statement.pdf");
    expect(extendedFilename(disposition)).toBe("statement.pdf");
  });

  it("answers a processed image as stored, with its stored type", async () => {
    const { key } = await setup();
    const png = await makeImage("png", { width: 120, height: 80 });
    const attachment = await uploaded(key, png, "image/png", "pixel.png");

    const file = await download(key, attachment.url);

    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("image/png");
    expect(file.bytes).toEqual(await storedBytes(attachment.id));
    expect(file.bytes.length).toBe(attachment.size);
  });

  it("answers a text file as text/plain without adding a charset", async () => {
    const { key } = await setup();
    const text = Buffer.from("Hello\n", "utf8");
    const attachment = await uploaded(key, text, "text/plain", "hello.txt");

    const file = await download(key, attachment.url);

    expect(file.headers.get("content-type")).toBe("text/plain");
    expect(file.bytes).toEqual(text);
  });

  it("accepts the id in lower case", async () => {
    const { key } = await setup();
    const attachment = await uploaded(key, makePdf(), "application/pdf", "a.pdf");

    const file = await download(key, contentUrl(`att_${attachment.id.slice(4).toLowerCase()}`));

    expect(file.status).toBe(200);
  });

  it.each([
    ["facture été 日本.pdf", "facture ete __.pdf"],
    ['say "hi".pdf', "say _hi_.pdf"],
    ["line\nbreak.pdf", "line_break.pdf"],
    ["carriage\r\nreturn.pdf", "carriage__return.pdf"],
    ["tab\there; x=y, (1)*'.pdf", "tab_here; x=y, (1)*'.pdf"],
    ["😀.pdf", "_.pdf"],
    ["100% real.pdf", "100% real.pdf"],
  ])("names %j safely: an ASCII fallback and filename* decoding to the original", async (filename, fallback) => {
    const { key } = await setup();
    const attachment = await uploadedNamed(key, filename);
    expect(attachment.filename).toBe(filename);

    const file = await download(key, attachment.url);

    expect(file.status).toBe(200);
    const disposition = file.headers.get("content-disposition") ?? "";
    expect(disposition).toMatch(/^attachment; /);
    expect(disposition).toMatch(/^[\x20-\x7e]*$/);
    expect(fallbackFilename(disposition)).toBe(fallback);
    expect(extendedFilename(disposition)).toBe(filename);
  });

  it("names a Unicode file sent raw by a browser-like client the same way", async () => {
    const { key } = await setup();
    const attachment = await uploaded(key, makePdf(), "application/pdf", "facture été 日本.pdf");

    const file = await download(key, attachment.url);

    expect(extendedFilename(file.headers.get("content-disposition") ?? "")).toBe("facture été 日本.pdf");
  });
});

describe("GET /attachments/{id}/content: what cannot be reached", () => {
  it("answers 404 attachment_not_found for another organization's attachment", async () => {
    const owner = await setup();
    const stranger = await setup();
    const attachment = await uploaded(owner.key, makePdf(), "application/pdf", "private.pdf");

    expectNotFound(await download(stranger.org.test, attachment.url));
    expectNotFound(await download(stranger.org.live, attachment.url));
    expect((await download(owner.key, attachment.url)).status).toBe(200);
  });

  it("answers 404 attachment_not_found for the other environment's attachment, both ways", async () => {
    const { org } = await setup();
    const sandbox = await uploaded(org.test, makePdf(), "application/pdf", "sandbox.pdf");
    const real = await uploaded(org.live, makePdf(), "application/pdf", "real.pdf");

    expectNotFound(await download(org.live, sandbox.url));
    expectNotFound(await download(org.test, real.url));
    expect((await download(org.test, sandbox.url)).status).toBe(200);
    expect((await download(org.live, real.url)).status).toBe(200);
  });

  it.each([[UNKNOWN_ATTACHMENT], ["att_nope"], ["msg_01ARZ3NDEKTSV4RRFFQ69G5FAV"]])(
    "answers 404 attachment_not_found for %s",
    async (id) => {
      const { key } = await setup();

      expectNotFound(await download(key, contentUrl(id)));
    },
  );

  it("answers 404 for a standalone upload once it has expired", async () => {
    const { key } = await setup();
    const attachment = await uploaded(key, makePdf(), "application/pdf", "old.pdf");

    await expire(attachment.id);

    expectNotFound(await download(key, attachment.url));
  });

  it("keeps a sent file downloadable through the message's attachment.url after the upload expires", async () => {
    const { key, client } = await setup();
    const pdf = makePdf("Kept");
    const attachment = await uploaded(key, pdf, "application/pdf", "kept.pdf");
    const { message } = await sendDocument(client, attachment.id);

    await expire(attachment.id);

    const fetched = await client.get(`/messages/${message.id}`);
    expect(fetched.body.attachment.url).toBe(attachment.url);
    const file = await download(key, fetched.body.attachment.url);
    expect(file.status).toBe(200);
    expect(file.bytes).toEqual(pdf);
    expect(extendedFilename(file.headers.get("content-disposition") ?? "")).toBe("kept.pdf");
  });

  it("stops serving an expired file once the only message that used it is deleted with its contact", async () => {
    const { key, client } = await setup();
    const attachment = await uploaded(key, makePdf(), "application/pdf", "gone.pdf");
    const { contact } = await sendDocument(client, attachment.id);
    await expire(attachment.id);
    expect((await download(key, attachment.url)).status).toBe(200);

    expect((await client.delete(`/contacts/${contact.id}`)).status).toBe(200);

    expectNotFound(await download(key, attachment.url));
  });

  it("keeps serving an unexpired upload after the message that used it is deleted", async () => {
    const { key, client } = await setup();
    const attachment = await uploaded(key, makePdf(), "application/pdf", "fresh.pdf");
    const { contact } = await sendDocument(client, attachment.id);

    expect((await client.delete(`/contacts/${contact.id}`)).status).toBe(200);

    expect((await download(key, attachment.url)).status).toBe(200);
  });
});

describe("GET /attachments/{id}/content: scopes", () => {
  it("needs messages:read: messages:write alone is 403 insufficient_scope", async () => {
    const { org, key } = await setup();
    const attachment = await uploaded(key, makePdf(), "application/pdf", "a.pdf");
    const writer = await createApiKey(api.context.db, {
      organizationId: org.id,
      environment: "test",
      scopes: ["messages:write"],
    });
    const reader = await createApiKey(api.context.db, {
      organizationId: org.id,
      environment: "test",
      scopes: ["messages:read"],
    });

    const refused = await download(writer.key, attachment.url);

    expect(refused.status).toBe(403);
    expect(jsonOf(refused).error.code).toBe("insufficient_scope");
    expect(jsonOf(refused).error.message).toContain("messages:read");
    expect((await download(reader.key, attachment.url)).status).toBe(200);
  });

  it("answers 401 without a key", async () => {
    const { key } = await setup();
    const attachment = await uploaded(key, makePdf(), "application/pdf", "a.pdf");

    const response = await fetch(attachment.url);

    expect(response.status).toBe(401);
  });
});
