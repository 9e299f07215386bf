import { normalizePhone, smsSettingsOf } from "@parley/channels";
import { applySmsKeyword, ingestInboundMessage, receiveSms } from "@parley/core";
import type { api, Message, OperationInput } from "@parley/schema";
import { findChannel } from "../channels/service.js";
import { assertChannelConnected } from "../channels/status.js";
import type { AppContext } from "../context.js";
import { findConversation } from "../conversations/queries.js";
import { ApiError, validationError } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { checkMessageContent } from "../messages/content-rules.js";

type InboundInput = OperationInput<typeof api.testHelpers.inboundMessage>["body"];

/**
 * A message from the contact, recorded through the same ingestion code as a real
 * channel's inbound path: same content rules, session window, reopening and event. On an
 * SMS channel it may come from a number instead of a conversation (`channel_id`, `from`),
 * as a provider's webhook brings it.
 */
export async function simulateInboundMessage(app: AppContext, tenant: Tenant, input: InboundInput): Promise<Message> {
  if (input.conversation_id !== undefined) {
    if (input.channel_id !== undefined || input.from !== undefined) {
      throw validationError("conversation_id", "give either conversation_id, or channel_id and from, not both");
    }
    return inConversation(app, tenant, input.conversation_id, input);
  }
  if (input.channel_id === undefined || input.from === undefined) {
    throw validationError("conversation_id", "is required, unless channel_id and from are given");
  }
  return fromNumber(app, tenant, input.channel_id, input.from, input);
}

async function inConversation(
  app: AppContext,
  tenant: Tenant,
  conversationId: string,
  input: InboundInput,
): Promise<Message> {
  return app.db.transaction(async (tx) => {
    const found = await findConversation(tx, tenant, conversationId, "update");
    if (!found) {
      throw new ApiError("resource_not_found", `No such conversation: '${conversationId}'`, {
        param: "conversation_id",
      });
    }
    const { conversation } = found;
    assertChannelConnected(conversation.channelId, found.channelStatus);
    const channel = found.channelType ? { type: found.channelType, settings: found.channelSettings } : null;
    const { type, attachment } = await checkMessageContent(tx, tenant, channel, input);
    const message = await ingestInboundMessage(tx, app.publicBaseUrl(), tenant, {
      conversationId: conversation.id,
      type,
      text: input.text ?? null,
      attachment,
    });
    if (found.channelType === "sms" && conversation.channelId) {
      await applySmsKeyword(tx, { id: conversation.channelId, ...tenant }, conversation.id, input.text ?? null);
    }
    return message;
  });
}

/** A text (or MMS) from a phone number to an SMS channel, through the SMS providers' own inbound path. */
async function fromNumber(
  app: AppContext,
  tenant: Tenant,
  channelId: string,
  from: string,
  input: InboundInput,
): Promise<Message> {
  const channel = await findChannel(app.db, tenant, channelId);
  if (!channel) throw new ApiError("resource_not_found", `No such channel: '${channelId}'`, { param: "channel_id" });
  if (channel.type !== "sms") {
    throw validationError(
      "channel_id",
      `is a ${channel.type} channel: a message from a number is simulated on sms channels; give conversation_id`,
    );
  }
  assertChannelConnected(channel.id, channel.status);
  if (!normalizePhone(from, smsSettingsOf(channel.settings).default_region)) {
    throw validationError(
      "from",
      "is not a phone number: give E.164 (+14155550100) or a number of the channel's default region",
    );
  }
  const { type, attachment } = await checkMessageContent(app.db, tenant, channel, input);
  const bytes = attachment ? await app.attachmentStore.get(app.db, attachment) : undefined;
  const file =
    attachment && bytes ? { bytes, contentType: attachment.contentType, filename: attachment.filename } : null;
  const outcome = await receiveSms(
    app.db,
    app.publicBaseUrl(),
    channel,
    { providerMessageId: null, from: { address: from, name: null }, type, text: input.text ?? null, file },
    app.attachmentStore,
  );
  if (outcome.duplicate) throw new Error("a simulated SMS has no provider id: it cannot be a duplicate");
  return outcome.message;
}
