import type { SendContent } from "./send-adapter.js";
import { fieldOf, nonEmptyString } from "./send-adapter.js";

/**
 * The Send API body shared by Messenger and Instagram: `{recipient:{id}, message:{...}}`.
 * A file goes as an attachment by URL. Its caption is not sent: the Send API has no caption,
 * and a second text message would be a second message with its own id and receipts, which
 * Parley's one message could not account for.
 */
export function pageMessageBody(content: SendContent, recipientId: string): Record<string, unknown> {
  return { recipient: { id: recipientId }, message: pageMessage(content) };
}

function pageMessage(content: SendContent): Record<string, unknown> {
  if (content.type === "text") return { text: content.text };
  return {
    attachment: {
      // The Send API calls a document a file.
      type: content.type === "document" ? "file" : content.type,
      // Parley's public URL expires: Meta must not keep it for reuse.
      payload: { url: content.attachment.publicUrl, is_reusable: false },
    },
  };
}

/** `{"recipient_id": "...", "message_id": "m_..."}` */
export function pageMessageIdOf(answer: unknown): string | null {
  return nonEmptyString(fieldOf(answer, "message_id"));
}
