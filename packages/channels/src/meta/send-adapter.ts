import type { z } from "zod";
import type {
  ChannelAdapter,
  MetaOptions,
  OutboundAttachment,
  OutboundMessage,
  SendResult,
  SendRule,
} from "../adapter.js";
import { type ChannelDefinition, canCarry } from "../capabilities.js";
import { MetaGraphError, type ProviderError } from "./errors.js";
import { createGraphClient, type GraphClient } from "./graph-client.js";

/** What one outbound message carries, checked: text, or a file with an optional caption. */
export type SendContent =
  | { type: "text"; text: string }
  | { type: "image" | "video" | "audio" | "document"; attachment: OutboundAttachment; caption: string | null };

/** What differs between WhatsApp, Messenger and Instagram sends. */
export interface MetaSendSpec<S extends { access_token: string }> {
  definition: ChannelDefinition;
  settings: z.ZodType<S>;
  window: SendRule;
  /** The Graph path messages are POSTed to, e.g. `{page_id}/messages`. */
  endpoint(settings: S): string;
  body(content: SendContent, recipient: string, message: OutboundMessage): unknown;
  /** The message id in the send's answer; null when the answer has none. */
  messageIdOf(answer: unknown): string | null;
}

/**
 * A live Meta adapter: checks settings, recipient, session window and message type
 * locally (a refusal makes no request), then one POST to the Graph API. Receipts come later
 * by webhook, so a send returns none.
 */
export function createMetaAdapter<S extends { access_token: string }>(
  meta: MetaOptions,
  spec: MetaSendSpec<S>,
): ChannelAdapter {
  return {
    async send(message) {
      const settings = spec.settings.safeParse(message.channel.settings);
      if (!settings.success) return failed("channel_misconfigured", settingsProblem(settings.error));
      const recipient = message.recipient;
      if (!recipient) return failed("recipient_unknown", `The contact has no address on ${spec.definition.label}`);
      const refused = spec.window(message, new Date());
      if (refused) return refused;
      const content = contentOf(message, spec.definition);
      if ("error" in content) return { outcome: "failed", error: content.error };
      const graph = createGraphClient(meta, settings.data.access_token);
      return post(graph, spec.endpoint(settings.data), spec.body(content, recipient, message), spec.messageIdOf);
    },
  };
}

async function post(
  graph: GraphClient,
  path: string,
  body: unknown,
  messageIdOf: (answer: unknown) => string | null,
): Promise<SendResult> {
  try {
    const id = messageIdOf(await graph.post(path, body));
    if (!id) return failed("unexpected_response", "Meta accepted the message without giving its id");
    return { outcome: "sent", providerMessageId: id, receipts: [] };
  } catch (error) {
    // Refusals become the message's error; a TemporaryChannelError goes up to be retried.
    if (error instanceof MetaGraphError) return { outcome: "failed", error: error.toProviderError() };
    throw error;
  }
}

function contentOf(message: OutboundMessage, definition: ChannelDefinition): SendContent | { error: ProviderError } {
  if (!canCarry(definition.capabilities, message.type)) {
    return { error: { code: "unsupported_message_type", message: `${definition.label} cannot carry ${message.type}` } };
  }
  if (message.type === "text") return { type: "text", text: message.text ?? "" };
  if (!message.attachment) {
    return { error: { code: "attachment_missing", message: `The ${message.type} message has no file` } };
  }
  const caption = message.text && message.text.length > 0 ? message.text : null;
  return { type: message.type, attachment: message.attachment, caption };
}

function failed(code: string, message: string): SendResult {
  return { outcome: "failed", error: { code, message } };
}

/** Which settings are wrong, by name; never their values (some are secrets). */
function settingsProblem(error: z.ZodError): string {
  const problems = error.issues.map((issue) => `${issue.path.join(".") || "settings"}: ${issue.message}`);
  return `The channel's settings are invalid (${problems.join("; ")})`;
}

/** A field of a send's answer, read without trusting the answer's shape. */
export function fieldOf(value: unknown, key: string): unknown {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

export function nonEmptyString(value: unknown): string | null {
  return typeof value === "string" && value.length > 0 ? value : null;
}
