import { authenticateEmail, InboundEmailError, loadMessages, receiveEmail } from "@parley/core";
import type { Message } from "@parley/schema";
import type { Request, Response } from "express";
import type { AppContext } from "../context.js";
import { ApiError, notFound, validationError } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { rawBody } from "../http/body-limit.js";
import { findMessage } from "../messages/queries.js";
import { findChannel } from "./service.js";
import { assertChannelConnected } from "./status.js";

const readRfc822 = rawBody({ type: "message/rfc822", limitBytes: 25 * 1024 * 1024 });

/** `POST /channels/{id}/inbound-email`: a raw message from the business's mail routing. */
export async function receiveEmailOverHttp(
  app: AppContext,
  tenant: Tenant,
  channelId: string,
  req: Request,
  res: Response,
): Promise<{ status: 200 | 201; body: Message }> {
  const channel = await findChannel(app.db, tenant, channelId);
  if (!channel) throw notFound("channel", channelId);
  if (channel.type !== "email") {
    throw new ApiError("invalid_state", `Channel '${channelId}' is a ${channel.type} channel, not an email channel.`);
  }
  assertChannelConnected(channel.id, channel.status);
  if (!req.is("message/rfc822")) {
    throw new ApiError("unsupported_media_type", "Send the raw message with Content-Type: message/rfc822.");
  }
  await new Promise<void>((resolve, reject) => readRfc822(req, res, (error) => (error ? reject(error) : resolve())));
  const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  if (raw.length === 0) throw validationError("body", "The message is empty.");
  try {
    // No SMTP session here: no SPF; DKIM and DMARC (or the trusted relay's results) decide.
    const authentication = await authenticateEmail(raw, {}, app.emailAuthentication);
    const outcome = await receiveEmail(app.db, app.publicBaseUrl(), channel, raw, authentication, app.attachmentStore);
    if (!outcome.duplicate) return { status: 201, body: outcome.message };
    const stored = outcome.messageId ? await loadMessageById(app, tenant, outcome.messageId) : undefined;
    if (!stored) throw new ApiError("invalid_state", "This message is being received by another request; retry.");
    return { status: 200, body: stored };
  } catch (error) {
    if (error instanceof InboundEmailError) throw validationError("body", error.message);
    throw error;
  }
}

async function loadMessageById(app: AppContext, tenant: Tenant, id: string): Promise<Message | undefined> {
  const row = await findMessage(app.db, tenant, id);
  if (!row) return undefined;
  const [message] = await loadMessages(app.publicBaseUrl(), app.db, [row]);
  return message;
}
