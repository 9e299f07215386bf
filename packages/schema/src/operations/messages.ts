import { z } from "zod";
import { defineOperation } from "../operation.js";
import { dateTimeFilter, listOf, paginationQuery } from "../primitives.js";
import { attachment } from "../resources/attachment.js";
import { message, messageDirection, messageSendBody } from "../resources/message.js";

export const messageOperations = {
  send: defineOperation({
    id: "messages.send",
    method: "post",
    path: "/messages",
    tag: "Messages",
    summary: "Send a message",
    description:
      "The channel comes from the conversation and its capabilities are checked against `type` before anything is stored. Answers at once with status `queued` (or `null` on a manual-record conversation); the outcome arrives later as `message.sent`, `message.delivered` or `message.failed`.",
    scope: "messages:write",
    body: messageSendBody,
    bodyName: "MessageSend",
    response: message,
    responseName: "Message",
    status: 201,
    idempotent: true,
    errors: ["resource_not_found", "attachment_not_found", "unsupported_message_type", "attachment_type_mismatch"],
  }),
  get: defineOperation({
    id: "messages.get",
    method: "get",
    path: "/messages/{message_id}",
    tag: "Messages",
    summary: "Retrieve a message",
    description: "With its delivery state (`status` may be null).",
    scope: "messages:read",
    params: z.object({ message_id: z.string() }),
    response: message,
    responseName: "Message",
    status: 200,
    errors: [],
  }),
  list: defineOperation({
    id: "conversations.messages.list",
    method: "get",
    path: "/conversations/{conversation_id}/messages",
    tag: "Messages",
    summary: "List a conversation's messages",
    description: "Newest first.",
    scope: "messages:read",
    params: z.object({ conversation_id: z.string() }),
    query: z.strictObject({
      ...paginationQuery,
      direction: messageDirection.optional(),
      created_after: dateTimeFilter.optional(),
      created_before: dateTimeFilter.optional(),
    }),
    response: listOf(message),
    responseName: "MessageList",
    status: 200,
    errors: ["invalid_cursor"],
  }),
};

export const attachmentOperations = {
  upload: defineOperation({
    id: "uploads.create",
    method: "post",
    path: "/uploads",
    tag: "Uploads and attachments",
    summary: "Upload a file",
    description:
      "`multipart/form-data` with the file in the field `file`, at most 16 MB (16,777,216 bytes). The declared content type counts; `application/octet-stream` falls back to the file name's extension. Images are stripped of metadata and, above 400 KB, scaled to 1600 px on the longest side, so `content_type` and `size` describe the stored file. Ignores `Idempotency-Key`.",
    scope: "messages:write",
    requestContentType: "multipart/form-data",
    response: attachment,
    responseName: "Attachment",
    status: 201,
    errors: [],
  }),
  content: defineOperation({
    id: "attachments.content",
    method: "get",
    path: "/attachments/{attachment_id}/content",
    tag: "Uploads and attachments",
    summary: "Download an attachment's content",
    description:
      "The bytes, with `Content-Type`, the original file name in `Content-Disposition` and `Cache-Control: private`. Works for uploads until they expire and, forever, for the files of messages (sent or received).",
    scope: "messages:read",
    params: z.object({ attachment_id: z.string() }),
    response: z.string().describe("The file's bytes"),
    responseName: "AttachmentContent",
    responseContentType: "application/octet-stream",
    status: 200,
    errors: [],
  }),
};
