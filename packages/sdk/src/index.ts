import type { api, OperationResponse } from "@parley/schema";
import { routes } from "@parley/schema/runtime";
import { constructEvent, verifySignature } from "@parley/webhook-verify";
import { type ClientOptions, type RequestOptions, Transport } from "./core.js";
import {
  apiKeysResource,
  type Body,
  Calls,
  channelsResource,
  contactsResource,
  conversationsResource,
  customFieldsResource,
  eventsResource,
  type Query,
  tagsResource,
  teamsResource,
  testHelpersResource,
  usersResource,
} from "./resources.js";
import { type Uploadable, type UploadOptions, uploadForm } from "./uploads.js";

/** A webhook body, typed by its `type` (what `parley.webhooks.constructEvent` returns). */
export type { EventType, ParleyEvent } from "@parley/webhook-verify";
export { APIPromise, backoffMs, type ClientOptions, isRetryable, type RequestOptions } from "./core.js";
export * from "./errors.js";
export { Page, PagePromise } from "./pagination.js";
export type { Uploadable, UploadOptions } from "./uploads.js";

export type Message = OperationResponse<typeof api.messages.get>;
export type Attachment = OperationResponse<typeof api.attachments.upload>;

export interface DownloadedFile {
  /** The bytes as they arrive. */
  stream: ReadableStream<Uint8Array>;
  contentType: string;
  filename: string | undefined;
  size: number | undefined;
}

function filenameOf(disposition: string | null): string | undefined {
  if (!disposition) return undefined;
  const extended = /filename\*=UTF-8''([^;]+)/i.exec(disposition)?.[1];
  if (extended) return decodeURIComponent(extended);
  return /filename="((?:\\.|[^"])*)"/.exec(disposition)?.[1]?.replace(/\\(.)/g, "$1");
}

/**
 * The Parley client. Resources mirror the API: `parley.contacts.create(...)`,
 * `parley.conversations.close(id)`, `parley.messages.send(...)`,
 * `parley.webhooks.deliveries.list(id)`.
 */
export class Parley {
  readonly contacts;
  readonly conversations;
  readonly channels;
  readonly users;
  readonly teams;
  readonly tags;
  readonly customFields;
  readonly events;
  readonly testHelpers;
  readonly messages;
  readonly uploads;
  readonly attachments;
  readonly webhooks;
  readonly apiKeys;

  constructor(options: ClientOptions = {}) {
    const transport = new Transport(options);
    const c = new Calls(transport);
    this.contacts = contactsResource(c);
    this.conversations = conversationsResource(c);
    this.channels = channelsResource(c);
    this.users = usersResource(c);
    this.teams = teamsResource(c);
    this.tags = tagsResource(c);
    this.customFields = customFieldsResource(c);
    this.events = eventsResource(c);
    this.testHelpers = testHelpersResource(c);
    this.apiKeys = apiKeysResource(c);

    const uploads = {
      /** Uploads a file from a path, bytes, a Blob or a stream; name and type inferred where possible. */
      create: async (file: Uploadable, options: UploadOptions & RequestOptions = {}) =>
        transport.request<Attachment>(routes.attachments.upload, { form: await uploadForm(file, options) }, options),
    };
    this.uploads = uploads;

    const messages = {
      send: (body: Body<typeof routes.messages.send>, options?: RequestOptions) =>
        c.call(routes.messages.send, {}, body, options),
      get: (id: string, options?: RequestOptions) =>
        c.call(routes.messages.get, { message_id: id }, undefined, options),
      list: (conversationId: string, query?: Query<typeof routes.messages.list>, options?: RequestOptions) =>
        c.list(routes.messages.list, { conversation_id: conversationId }, query, options),
      /** Uploads the file, then sends it as `type` (with `text` as caption) in one call. */
      sendMedia: async (
        input: {
          conversation_id: string;
          type: "image" | "video" | "audio" | "document";
          file: Uploadable;
          text?: string;
        } & UploadOptions,
        options?: RequestOptions,
      ): Promise<Message> => {
        const attachment = await uploads.create(input.file, {
          ...(input.filename ? { filename: input.filename } : {}),
          ...(input.contentType ? { contentType: input.contentType } : {}),
        });
        return c.call(
          routes.messages.send,
          {},
          {
            conversation_id: input.conversation_id,
            type: input.type,
            attachment_id: attachment.id,
            ...(input.text ? { text: input.text } : {}),
          },
          options,
        );
      },
    };
    this.messages = messages;

    this.attachments = {
      /** The file as a stream, with its type and original name. */
      download: async (id: string, options?: RequestOptions): Promise<DownloadedFile> => {
        const response = await transport.request<Response>(
          routes.attachments.content,
          { params: { attachment_id: id }, raw: true },
          options,
        );
        if (!response.body) throw new Error("The download has no body");
        const length = response.headers.get("content-length");
        return {
          stream: response.body,
          contentType: response.headers.get("content-type") ?? "application/octet-stream",
          filename: filenameOf(response.headers.get("content-disposition")),
          size: length === null ? undefined : Number(length),
        };
      },
    };

    const ops = routes.webhooks;
    const id = (webhookId: string) => ({ webhook_id: webhookId });
    this.webhooks = {
      list: (query?: Query<typeof ops.list>, options?: RequestOptions) => c.list(ops.list, {}, query, options),
      create: (body: Body<typeof ops.create>, options?: RequestOptions) => c.call(ops.create, {}, body, options),
      get: (webhookId: string, options?: RequestOptions) => c.call(ops.get, id(webhookId), undefined, options),
      update: (webhookId: string, body: Body<typeof ops.update>, options?: RequestOptions) =>
        c.call(ops.update, id(webhookId), body, options),
      delete: (webhookId: string, options?: RequestOptions) => c.call(ops.delete, id(webhookId), undefined, options),
      rotateSecret: (webhookId: string, options?: RequestOptions) =>
        c.call(ops.rotateSecret, id(webhookId), undefined, options),
      test: (webhookId: string, options?: RequestOptions) => c.call(ops.test, id(webhookId), undefined, options),
      deliveries: {
        list: (webhookId: string, query?: Query<typeof ops.deliveries>, options?: RequestOptions) =>
          c.list(ops.deliveries, id(webhookId), query, options),
        retry: (webhookId: string, deliveryId: string, options?: RequestOptions) =>
          c.call(ops.retryDelivery, { webhook_id: webhookId, delivery_id: deliveryId }, undefined, options),
      },
      /** Verifies a webhook's signature and returns its event (from `@parley/webhook-verify`). */
      constructEvent,
      verifySignature,
    };
  }
}

export default Parley;
