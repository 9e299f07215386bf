import { type InboundEmail, parseInboundEmail, threadHints } from "@parley/channels";
import type { channels, Database } from "@parley/db";
import type { EmailAuthentication } from "@parley/schema";
import type { AttachmentStore } from "../attachments/store.js";
import { inboundMediaType } from "./media-kind.js";
import { type ReceiveOutcome, receiveChannelMessage } from "./receive.js";

type ChannelRow = typeof channels.$inferSelect;

/** A mail Parley cannot take: no sender to answer. */
export class InboundEmailError extends Error {
  override name = "InboundEmailError";
}

/**
 * One email from a customer, from the SMTP server or the HTTP route: the text (quoted
 * history stripped) with the first attachment as one message, each further attachment
 * as a message of its own in the same conversation. `authentication` (see
 * `authenticateEmail`) is stored on each, and decides whether the mail may join the
 * sender's existing contact and conversation.
 */
export async function receiveEmail(
  db: Database,
  baseUrl: string,
  channel: ChannelRow,
  raw: Buffer,
  authentication: EmailAuthentication,
  store: AttachmentStore,
): Promise<ReceiveOutcome> {
  const email = await parseInboundEmail(raw);
  if (!email.from) throw new InboundEmailError("The message has no From address to answer.");
  const from = { address: email.from.address.toLowerCase(), name: email.from.name };
  const metadata = { email: { subject: email.subject, message_id: email.messageId } };
  const hints = threadHints(email);
  const [first, ...rest] = email.attachments;
  const outcome = await receiveChannelMessage(
    db,
    baseUrl,
    channel,
    {
      providerMessageId: email.messageId,
      from,
      threadHints: hints,
      type: first ? inboundMediaType(first.contentType) : "text",
      // A media message without a body has no caption (null, as its further attachments); a text one has "".
      text: email.text ?? (first ? null : ""),
      file: first ? fileOf(first) : null,
      metadata,
      authentication,
    },
    store,
  );
  // No early return on a duplicate: a sending server retries a mail stored in part (the body's
  // message committed, a later attachment not), and each attachment is deduplicated by its own id.
  for (const [index, attachment] of rest.entries()) {
    await receiveChannelMessage(
      db,
      baseUrl,
      channel,
      {
        providerMessageId: email.messageId ? `${email.messageId}#${index + 2}` : null,
        from,
        // Where the body went: found by its id, or, for unverified mail (threaded by Parley's ids only), by the ids it names.
        threadHints: email.messageId ? [email.messageId, ...hints] : hints,
        type: inboundMediaType(attachment.contentType),
        text: null,
        file: fileOf(attachment),
        metadata,
        authentication,
      },
      store,
    );
  }
  return outcome;
}

function fileOf(attachment: InboundEmail["attachments"][number]) {
  return { bytes: attachment.content, contentType: attachment.contentType, filename: attachment.filename };
}
