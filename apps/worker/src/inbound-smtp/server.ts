import type { AddressInfo } from "node:net";
import { InboundEmailError, receiveEmail } from "@parley/core";
import { channels } from "@parley/db";
import { and, eq, sql } from "drizzle-orm";
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from "smtp-server";
import type { WorkerContext } from "../context.js";

/** Like the HTTP route: a message above this is refused before it is stored. */
const MAX_MESSAGE_BYTES = 25 * 1024 * 1024;

type ChannelRow = typeof channels.$inferSelect;

/** An SMTP refusal with its reply code (smtp-server reads `responseCode`). */
function smtpError(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code });
}

/**
 * The email channel of this address, lower-cased as PostgreSQL keeps it: `provider_account` is unique
 * per type (`channels_provider_account_key`), so two organizations cannot both claim it.
 */
async function emailChannelFor(context: WorkerContext, address: string): Promise<ChannelRow | undefined> {
  const [row] = await context.db
    .select()
    .from(channels)
    .where(and(eq(channels.type, "email"), eq(channels.providerAccount, sql`lower(${address})`)));
  return row;
}

function readStream(stream: SMTPServerDataStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => resolve(Buffer.concat(chunks)));
    stream.on("error", reject);
  });
}

/**
 * Inbound email over SMTP (`SMTP_INBOUND_PORT`): accepts mail for the addresses of
 * connected email channels only, and answers 250 after the message is committed, so a
 * sending server keeps (and retries) whatever Parley did not store.
 */
export async function startInboundSmtp(
  context: WorkerContext,
  options: { port: number; host?: string },
): Promise<{ port: number; close(): Promise<void> }> {
  const recipients = new Map<string, ChannelRow[]>();
  const channelsOf = (session: SMTPServerSession) => recipients.get(session.id) ?? [];
  const server = new SMTPServer({
    name: "parley",
    banner: "Parley inbound mail",
    authOptional: true,
    disabledCommands: ["AUTH", "STARTTLS"],
    size: MAX_MESSAGE_BYTES,
    logger: false,
    onMailFrom(_address, session, callback) {
      // A transaction starts with MAIL FROM: recipients of one abandoned before DATA (RSET,
      // a new MAIL FROM) must not receive the next message of the session.
      recipients.delete(session.id);
      callback();
    },
    onRcptTo(address, session, callback) {
      emailChannelFor(context, address.address).then((channel) => {
        if (!channel) return callback(smtpError(550, `No mailbox here for ${address.address}`));
        const known = channelsOf(session);
        if (!known.some((row) => row.id === channel.id)) recipients.set(session.id, [...known, channel]);
        callback();
      }, callback);
    },
    onData(stream, session, callback) {
      const targets = channelsOf(session);
      recipients.delete(session.id);
      readStream(stream)
        .then(async (raw) => {
          if (stream.sizeExceeded) throw smtpError(552, "Message exceeds the size limit");
          for (const channel of targets) await receiveEmail(context.db, context.publicBaseUrl, channel, raw);
          callback();
        })
        .catch((error: Error & { responseCode?: number }) => {
          if (error.responseCode) return callback(error);
          if (error instanceof InboundEmailError) return callback(smtpError(550, error.message));
          context.logger.error({ err: error }, "inbound email could not be stored");
          callback(smtpError(451, "Temporary failure storing the message; try again later"));
        });
    },
    onClose(session) {
      recipients.delete(session.id);
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host ?? "0.0.0.0", () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  return { port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
