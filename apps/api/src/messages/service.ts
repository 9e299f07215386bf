import { loadMessages, messageJsonText, serializeMessage } from "@parley/core";
import { asJsonb, newId } from "@parley/db";
import type { api, Message, OperationInput } from "@parley/schema";
import { assertChannelConnected } from "../channels/status.js";
import { type AppContext, relayNow, withTransaction } from "../context.js";
import { findConversation } from "../conversations/queries.js";
import { ApiError, notFound } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { JsonBytes } from "../http/json-response.js";
import { type KeysetPosition, listKeyOf, type Page, toPage } from "../http/pagination.js";
import { checkMessageContent } from "./content-rules.js";
import { MessageTexts } from "./message-texts.js";
import {
  findMessage,
  findSendTarget,
  hasFilters,
  insertSentMessage,
  listConversationMessages,
  listConversationMessageVersions,
  type MessageRow,
  type PageMessageRow,
  retainAttachment,
  type SendTarget,
} from "./queries.js";
import { checkSmsSend } from "./sms-rules.js";

type SendInput = OperationInput<typeof api.messages.send>["body"];
type ListQuery = OperationInput<typeof api.messages.list>["query"];

/** An accepted send: the message as answered, and its statements, which may still be in flight. */
export interface SentMessage {
  message: Message;
  written: Promise<unknown>;
  /** To run once its transaction has committed: counts the send (`parley_messages_accepted_total`). */
  committed: () => void;
}

/**
 * Every refusal happens before anything is stored. An accepted send stores the message
 * and its delivery outbox row in one transaction, then answers at once: `queued` on a
 * channel, `null` on a manual record (stored, never delivered). `prefetched` is the
 * conversation as `findSendTarget` read it in this transaction, when it did.
 *
 * The message is answered as it is written, not read back, and its statements are left
 * in flight (`written`): the idempotency key's record and COMMIT go out right behind
 * them, in one round trip. The caller must await `written` once the transaction has
 * ended: a statement that failed made PostgreSQL roll the transaction back at COMMIT,
 * and only `written` tells (see Reply.written).
 */
export async function sendMessage(
  app: AppContext,
  tenant: Tenant,
  input: SendInput,
  prefetched?: SendTarget | undefined,
): Promise<SentMessage> {
  return withTransaction(app, async (tx) => {
    const found = prefetched ?? (await findSendTarget(tx, tenant, input.conversation_id));
    if (!found) {
      throw new ApiError("resource_not_found", `No such conversation: '${input.conversation_id}'`, {
        param: "conversation_id",
      });
    }
    assertChannelConnected(found.channelId, found.channelStatus);
    const channel = found.channelType ? { type: found.channelType, settings: found.channelSettings } : null;
    const { type, attachment } = await checkMessageContent(tx, tenant, channel, input);
    const sms = found.channelType === "sms" ? checkSmsSend(found, type, input.text) : null;
    if (attachment) await retainAttachment(tx, tenant, attachment.id);
    const now = new Date();
    const row: MessageRow = {
      id: newId("message"),
      ...tenant,
      conversationId: found.conversationId,
      direction: "outbound",
      type,
      text: input.text ?? null,
      attachmentId: attachment?.id ?? null,
      metadata: asJsonb(input.metadata ?? {}),
      status: found.channelId ? "queued" : null,
      errorCode: null,
      errorMessage: null,
      providerMessageId: null,
      authentication: null,
      smsSegments: sms?.segments ?? null,
      smsEncoding: sms?.encoding ?? null,
      createdAt: now,
      updatedAt: now,
    };
    const written = insertSentMessage(tx, row, found.channelId !== null, relayNow(app));
    // Never left unhandled: a shared transaction that aborts drops this try's reply unawaited
    // (its send runs again alone, see group-commit.ts); every other caller awaits it.
    written.catch(() => {});
    const committed = () => {
      if (found.channelId) app.metrics?.messageAccepted(found.channelType ?? "none");
    };
    return { message: serializeMessage(app.publicBaseUrl(), row, attachment), written, committed };
  });
}

export async function getMessage(app: AppContext, tenant: Tenant, id: string): Promise<Message> {
  const row = await findMessage(app.db, tenant, id);
  if (!row) throw notFound("message", id);
  const [message] = await loadMessages(app.publicBaseUrl(), app.db, [row]);
  if (!message) throw notFound("message", id);
  return message;
}

/** A conversation that does not exist is a 404 whatever its cursor says. */
async function decodeCursorOrNotFound(
  app: AppContext,
  tenant: Tenant,
  listKey: string,
  conversationId: string,
  cursor: string | undefined,
) {
  try {
    return app.cursors.decode(listKey, cursor);
  } catch (error) {
    if (!(await findConversation(app.db, tenant, conversationId))) throw notFound("conversation", conversationId);
    throw error;
  }
}

export async function listMessagesPage(app: AppContext, tenant: Tenant, conversationId: string, query: ListQuery) {
  const listKey = listKeyOf("conversations.messages.list", tenant, conversationId);
  const after = await decodeCursorOrNotFound(app, tenant, listKey, conversationId, query.after);
  const filters = {
    direction: query.direction,
    createdAfter: query.created_after,
    createdBefore: query.created_before,
  };
  const kept = app.levers?.messageTexts === false ? undefined : messageTexts;
  // Read twice among the last pages before this one: read and kept at least once since.
  // A conversation admitted for the first time has nothing kept yet, and traffic spread
  // over many conversations would read each such page twice (0.66x the baseline's).
  const textsLikelyKept = (kept?.recentReadsOf(conversationId) ?? 0) >= 2;
  const admitted = kept?.admits(conversationId) ? kept : undefined;
  if (admitted && textsLikelyKept && !hasFilters(filters)) {
    const page = await pageOfKeptTexts(app, tenant, conversationId, query.limit, after, admitted, listKey);
    if (page) return page;
  }
  // The page is confined to the tenant itself: a message in it says the conversation is
  // the tenant's, and only an empty page needs the conversation looked up (a statement
  // fewer for every other page).
  const rows = await listConversationMessages(app.db, tenant, conversationId, filters, query.limit, after);
  if (rows.length === 0 && !(await findConversation(app.db, tenant, conversationId))) {
    throw notFound("conversation", conversationId);
  }
  const texts = await textsOf(app, rows.slice(0, query.limit), kept, admitted);
  const page = toPage(rows, query.limit, { codec: app.cursors, listKey }, () => texts);
  return new JsonBytes<Page<Message>>(pageBytes(page));
}

/**
 * A page of a conversation read again soon, from its messages' kept texts: its rows' ids,
 * times and versions read, never their content. Undefined when a message of the page has
 * no kept text for its version (new, changed, or with an attachment, whose text is never
 * kept) or the page is empty: the page is then read whole, a statement more.
 */
async function pageOfKeptTexts(
  app: AppContext,
  tenant: Tenant,
  conversationId: string,
  limit: number,
  after: KeysetPosition | undefined,
  texts: MessageTexts,
  listKey: string,
): Promise<JsonBytes<Page<Message>> | undefined> {
  const versions = await listConversationMessageVersions(app.db, tenant, conversationId, limit, after);
  const kept = versions.slice(0, limit).map((row) => texts.get(row.id, row.rowVersion));
  if (versions.length === 0 || kept.includes(undefined)) return undefined;
  return new JsonBytes<Page<Message>>(
    pageBytes(toPage(versions, limit, { codec: app.cursors, listKey }, () => kept as Buffer[])),
  );
}

const PAGE_START = Buffer.from('{"object":"list","data":[');
const COMMA = Buffer.from(",");

/** JSON.stringify(page), its messages' JSON in place: the same bytes, copied once. */
function pageBytes(page: Page<Buffer>): Buffer {
  const parts: Buffer[] = [PAGE_START];
  page.data.forEach((text, index) => {
    if (index > 0) parts.push(COMMA);
    parts.push(text);
  });
  parts.push(Buffer.from(`],"pagination":${JSON.stringify(page.pagination)}}`));
  return Buffer.concat(parts);
}

/** The messages' answers as JSON, in this process's MessageTexts, by their rows' versions. */
const messageTexts = new MessageTexts();

/**
 * The answers of a page's messages, as JSON: kept from a page that read the same version
 * of the row, else written (with the attachment's row) and kept in `keepIn` unless the
 * message has an attachment.
 */
async function textsOf(
  app: AppContext,
  rows: PageMessageRow[],
  texts: MessageTexts | undefined,
  keepIn: MessageTexts | undefined,
) {
  const kept = rows.map((row) => texts?.get(row.id, row.rowVersion));
  const missing = rows.filter((_row, index) => kept[index] === undefined);
  if (missing.length === 0) return kept as Buffer[];
  const written = await writeTexts(app, missing, keepIn);
  let next = 0;
  return kept.map((text) => text ?? (written[next++] as Buffer));
}

/** The messages' answers as JSON, each kept (in `texts`) by the version of the row written, unless it has an attachment. */
async function writeTexts(app: AppContext, rows: PageMessageRow[], texts: MessageTexts | undefined) {
  const withAttachments = rows.filter((row) => row.attachmentId !== null);
  const loaded = await loadMessages(app.publicBaseUrl(), app.db, withAttachments);
  const attached = new Map(loaded.map((message) => [message.id, message]));
  return rows.map((row) => {
    if (row.attachmentId !== null) return Buffer.from(JSON.stringify(attached.get(row.id)));
    const text = Buffer.from(messageJsonText(row));
    texts?.set(row.id, row.rowVersion, text);
    return text;
  });
}
