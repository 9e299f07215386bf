import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, NoSuchKey, S3Client } from "@aws-sdk/client-s3";
import { whatsappTextMessage } from "@parley/channels/testing";
import { createS3AttachmentStore, signedContentUrl } from "@parley/core";
import { findFreePort } from "@parley/db";
import { workerOptionsFrom } from "@parley/worker";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfigs } from "../src/config.js";
import { type Client, waitForStatus } from "./delivery-helpers.js";
import {
  connectEmailChannel,
  customerAddress,
  deliverOverSmtp,
  fakeDns,
  mailTo,
  newMessageId,
  onlyMessageWithProviderId,
  rawEmail,
  useSmtpSink,
} from "./email-helpers.js";
import { download, makeImage, makePdf, upload } from "./files.js";
import { eventually, setupOrganization, type TestOrganization, useTestApi, useTestWorker } from "./harness.js";
import {
  bodyOf,
  connectMetaChannel,
  deliverWebhook,
  postMessage,
  sendRequests,
  useMetaSimulator,
  waId,
  waitForInbound,
} from "./meta-helpers.js";

/**
 * Issue 25: attachments in an S3-compatible bucket (`ATTACHMENTS_S3_*`), against a local
 * S3 server (s3rver) started here: the API uploads and serves the bytes from the bucket,
 * the worker reads them to send and stores inbound files there too, providers get
 * pre-signed S3 links with `ATTACHMENTS_S3_PRESIGN=true`, and the clean-up job deletes the
 * objects of the rows it deletes (a deleted contact's files included). Nothing goes to
 * `attachment_contents`.
 */
const BUCKET = "parley-attachments";
const SUPPORT = "support@s3.acme.test";
// The standard AWS variables: the SDK's default credential chain reads them.
process.env.AWS_ACCESS_KEY_ID = "S3RVER";
process.env.AWS_SECRET_ACCESS_KEY = "S3RVER";

const s3Port = await findFreePort();
const endpoint = `http://127.0.0.1:${s3Port}`;
let s3Directory = "";
let s3Server: S3rver | undefined;
const bucket = new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true });

beforeAll(async () => {
  s3Directory = await mkdtemp(path.join(tmpdir(), "parley-s3rver-"));
  s3Server = new S3rver({
    port: s3Port,
    address: "127.0.0.1",
    silent: true,
    directory: s3Directory,
    configureBuckets: [{ name: BUCKET, configs: [] }],
  });
  await s3Server.run();
});
afterAll(async () => {
  await s3Server?.close();
  bucket.destroy();
  if (s3Directory) await rm(s3Directory, { recursive: true, force: true });
});

const relay = useSmtpSink();
const meta = useMetaSimulator();
const s3Env = {
  ATTACHMENTS_S3_BUCKET: BUCKET,
  ATTACHMENTS_S3_ENDPOINT: endpoint,
  ATTACHMENTS_S3_REGION: "us-east-1",
  ATTACHMENTS_S3_PRESIGN: "true",
};
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000", ...s3Env }, { ownDatabase: true });
const worker = useTestWorker(api, () => ({
  meta: meta.simulator.options(),
  smtpInbound: { port: 0, host: "127.0.0.1", emailAuthentication: { resolver: fakeDns() } },
  attachmentS3: { bucket: BUCKET, endpoint, region: "us-east-1", presign: true },
}));

let org: TestOrganization;
let live: Client;
beforeAll(async () => {
  ({ org, live } = await setupOrganization(api));
});

async function objectBytes(key: string): Promise<Buffer | undefined> {
  try {
    const object = await bucket.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    return Buffer.from((await object.Body?.transformToByteArray()) ?? []);
  } catch (error) {
    if (error instanceof NoSuchKey) return undefined;
    throw error;
  }
}

async function objectKeys(): Promise<string[]> {
  const listed = await bucket.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${org.id}/` }));
  return (listed.Contents ?? []).map((object) => object.Key ?? "").sort();
}

async function storedInPostgres(attachmentId: string): Promise<number> {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from attachment_contents where attachment_id = ${attachmentId}`;
  return row?.count ?? 0;
}

describe("attachments in an S3-compatible bucket", () => {
  it("stores an upload as <organization>/<environment>/<id> and serves it through Parley", async () => {
    const pdf = makePdf("Stored in S3");
    const uploaded = await upload(api, org.live, { bytes: pdf, type: "application/pdf", filename: "s3.pdf" });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(201);
    const id = uploaded.body.id as string;

    expect(await objectBytes(`${org.id}/live/${id}`)).toEqual(pdf);
    expect(await storedInPostgres(id)).toBe(0);

    // With the key, and by the keyless signed link Parley gives providers.
    const fetched = await download(org.live, uploaded.body.url);
    expect(fetched.status).toBe(200);
    expect(fetched.headers.get("content-type")).toBe("application/pdf");
    expect(fetched.bytes.equals(pdf)).toBe(true);
    const signed = await fetch(signedContentUrl(api.baseUrl.replace(/\/v1$/, ""), api.context.contentUrlSecret, id));
    expect(signed.status).toBe(200);
    expect(Buffer.from(await signed.arrayBuffer()).equals(pdf)).toBe(true);

    // The object gone from the bucket (removed by hand): not found, never a 5xx.
    await bucket.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: `${org.id}/live/${id}` }));
    const gone = await download(org.live, uploaded.body.url);
    expect(gone.status).toBe(404);
    expect(JSON.parse(gone.bytes.toString()).error.code).toBe("attachment_not_found");
  });

  it("sends an email attachment the worker read from the bucket", async () => {
    const channel = await connectEmailChannel(api, org.id, SUPPORT, relay.sink.url);
    const address = customerAddress("grace");
    const contact = await live.post("/contacts", { body: { name: "Grace", email: address } });
    expect(contact.status, JSON.stringify(contact.body)).toBe(201);
    const conversation = await live.post("/conversations", {
      body: { contact_id: contact.body.id, channel_id: channel.id },
    });
    expect(conversation.status, JSON.stringify(conversation.body)).toBe(201);
    const pdf = makePdf("Quote 7, from S3");
    const uploaded = await upload(api, org.live, { bytes: pdf, type: "application/pdf", filename: "quote-7.pdf" });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(201);
    // The bytes are in the bucket only: what the mail carries, the worker read from there.
    expect(await storedInPostgres(uploaded.body.id)).toBe(0);

    const queued = await postMessage(live, {
      conversation_id: conversation.body.id,
      type: "document",
      attachment_id: uploaded.body.id,
    });
    await waitForStatus(api, live, queued.id, "sent");
    const mail = await mailTo(relay.sink, address);
    expect(mail.parsed.attachments.map((file) => [file.filename, file.content.equals(pdf)])).toEqual([
      ["quote-7.pdf", true],
    ]);
  });

  it("stores a file received by the worker (inbound email) in the bucket", async () => {
    const png = await makeImage("png", { width: 12, height: 12, exif: null });
    const messageId = newMessageId();
    const address = customerAddress("ada");
    const raw = rawEmail({
      from: address,
      to: SUPPORT,
      messageId,
      subject: "Photo",
      text: "See the photo",
      attachments: [{ filename: "photo.png", contentType: "image/png", content: png }],
    });
    await deliverOverSmtp(worker, { from: address, to: SUPPORT }, raw);
    const stored = await onlyMessageWithProviderId(api, messageId);
    const message = (await live.get(`/messages/${stored.id}`)).body;
    const attachmentId = message.attachment.id as string;
    expect(await objectBytes(`${org.id}/live/${attachmentId}`)).toEqual(png);
    expect(await storedInPostgres(attachmentId)).toBe(0);
    const fetched = await download(org.live, message.attachment.url);
    expect(fetched.bytes.equals(png)).toBe(true);
  });

  it("gives WhatsApp a pre-signed S3 link to the file (ATTACHMENTS_S3_PRESIGN=true)", async () => {
    const channel = await connectMetaChannel(api, meta.simulator, org.id, "whatsapp");
    const customer = waId();
    const wamid = `wamid.s3${Date.now()}`;
    await deliverWebhook(
      api,
      whatsappTextMessage({ phoneNumberId: channel.accountId, from: customer, name: "Alan", id: wamid, text: "Hi" }),
      channel.appSecret,
    );
    const inbound = await waitForInbound(api, live, wamid);
    const png = await makeImage("png", { width: 16, height: 16, exif: null });
    const uploaded = await upload(api, org.live, { bytes: png, type: "image/png", filename: "receipt.png" });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(201);

    const queued = await postMessage(live, {
      conversation_id: inbound.conversation_id,
      type: "image",
      attachment_id: uploaded.body.id,
    });
    await waitForStatus(api, live, queued.id, "sent");
    const [request] = sendRequests(meta.simulator, channel.accountId).filter(
      (recorded) => bodyOf(recorded)?.biz_opaque_callback_data === queued.id,
    );
    const link = new URL(bodyOf(request).image.link);
    expect(`${link.origin}${link.pathname}`).toBe(`${endpoint}/${BUCKET}/${org.id}/live/${uploaded.body.id}`);
    expect(link.searchParams.get("X-Amz-Signature")).toMatch(/^[0-9a-f]{64}$/);
    expect(Number(link.searchParams.get("X-Amz-Expires"))).toBe(3600);
    const fetched = await fetch(link);
    expect(fetched.status).toBe(200);
    expect(fetched.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await fetched.arrayBuffer()).equals(png)).toBe(true);
  });

  it("deletes the objects of the attachments the clean-up deletes, a deleted contact's files included", async () => {
    const { org: other, live: otherLive } = await setupOrganization(api);
    const channel = await connectEmailChannel(api, other.id, "erasure@s3.acme.test", relay.sink.url);
    const contact = await otherLive.post("/contacts", { body: { name: "Erased", email: customerAddress("erased") } });
    const conversation = await otherLive.post("/conversations", {
      body: { contact_id: contact.body.id, channel_id: channel.id },
    });
    const sentFile = await upload(api, other.live, {
      bytes: makePdf("sent"),
      type: "application/pdf",
      filename: "a.pdf",
    });
    const unusedFile = await upload(api, other.live, {
      bytes: makePdf("unused"),
      type: "application/pdf",
      filename: "b.pdf",
    });
    const keptFile = await upload(api, other.live, {
      bytes: makePdf("kept"),
      type: "application/pdf",
      filename: "c.pdf",
    });
    const queued = await postMessage(otherLive, {
      conversation_id: conversation.body.id,
      type: "document",
      attachment_id: sentFile.body.id,
    });
    await waitForStatus(api, otherLive, queued.id, "sent");
    const keyOf = (id: string) => `${other.id}/live/${id}`;
    const listed = async () => {
      const result = await bucket.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${other.id}/` }));
      return (result.Contents ?? []).map((object) => object.Key ?? "").sort();
    };
    expect(await listed()).toEqual([sentFile.body.id, unusedFile.body.id, keptFile.body.id].map(keyOf).sort());

    // The contact erased: its message goes, and its file becomes unused.
    expect((await otherLive.delete(`/contacts/${contact.body.id}`)).status).toBe(200);
    // Past their expiry (a day more for a file a message used), as the clock would make them.
    await api.client.sql`
      update attachments set expires_at = now() - interval '2 days'
      where id in (${sentFile.body.id}, ${unusedFile.body.id})`;
    await api.client.sql`select graphile_worker.add_job('cleanup_expired', '{}'::json)`;

    const left = await eventually(listed, (keys) => keys.length === 1, 15_000);
    expect(left).toEqual([keyOf(keptFile.body.id)]);
    const rows = await api.client.sql<{ id: string }[]>`select id from attachments where organization_id = ${other.id}`;
    expect(rows.map((row) => row.id)).toEqual([keptFile.body.id]);
    expect(await objectKeys()).not.toContain(keyOf(sentFile.body.id));
  });

  it("stops a start whose bucket cannot be reached, in one line naming the variable", async () => {
    const missing = await createS3AttachmentStore({
      bucket: "no-such-bucket",
      endpoint,
      region: "us-east-1",
      presign: false,
    });
    await expect(missing.check()).rejects.toThrow(
      /^The bucket of ATTACHMENTS_S3_BUCKET \(no-such-bucket\) cannot be reached at http:\/\/127\.0\.0\.1:\d+: NotFound \(HTTP 404\)/,
    );
    missing.close();
    const present = await createS3AttachmentStore({ bucket: BUCKET, endpoint, region: "us-east-1", presign: false });
    await expect(present.check()).resolves.toBeUndefined();
    present.close();
  });

  it("reads the same variables for the API and the worker, and refuses an endpoint that is not a URL", () => {
    const { workerConfig } = loadConfigs({ ...s3Env, ATTACHMENTS_S3_PRESIGN: "1" });
    if (!workerConfig) throw new Error("RUN_WORKER is on by default");
    expect(workerOptionsFrom(workerConfig).attachmentS3).toEqual({
      bucket: BUCKET,
      endpoint,
      region: "us-east-1",
      presign: true,
    });
    expect(workerOptionsFrom({ ...workerConfig, ATTACHMENTS_S3_BUCKET: undefined }).attachmentS3).toBeUndefined();
    expect(() => loadConfigs({ ATTACHMENTS_S3_BUCKET: BUCKET, ATTACHMENTS_S3_ENDPOINT: "minio:9000" })).toThrow(
      /ATTACHMENTS_S3_ENDPOINT/,
    );
  });
});
