import type { AddressInfo } from "node:net";
import { authenticateEmail, type EmailAuthenticationOptions, InboundEmailError, receiveEmail } from "@parley/core";
import { channels } from "@parley/db";
import { and, eq, sql } from "drizzle-orm";
import { SMTPServer, type SMTPServerSession } from "smtp-server";
import type { WorkerContext } from "../context.js";
import { readMessage } from "./message-spool.js";
import { scavengeEvery } from "./young-garbage.js";

/** Like the HTTP route: a message above this is refused before it is stored. */
const MAX_MESSAGE_BYTES = 25 * 1024 * 1024;

/** DATA read, by all connections together, between two collections of the young generation. */
const SCAVENGE_INTERVAL_BYTES = 4 * 1024 * 1024;

export interface InboundSmtpOptions {
  port: number;
  host?: string;
  /** Connections open at once, all senders together (`SMTP_INBOUND_MAX_CLIENTS`); past it, 421. */
  maxClients?: number;
  /** Connections open at once from one IP address (`SMTP_INBOUND_MAX_CLIENTS_PER_IP`); past it, 421. */
  maxClientsPerAddress?: number;
  /** A connection silent this long is closed (`SMTP_INBOUND_SOCKET_TIMEOUT_MS`). */
  socketTimeoutMs?: number;
  /** How senders are authenticated: a trusted relay (`INBOUND_EMAIL_TRUSTED_AUTHSERV_ID`), a DNS resolver for tests. */
  emailAuthentication?: EmailAuthenticationOptions;
}

export const INBOUND_SMTP_DEFAULTS = { maxClients: 100, maxClientsPerAddress: 10, socketTimeoutMs: 60_000 };

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

/**
 * Inbound email over SMTP (`SMTP_INBOUND_PORT`): accepts mail for the addresses of
 * connected email channels only, and answers 250 after the message is committed, so a
 * sending server keeps (and retries) whatever Parley did not store.
 */
export async function startInboundSmtp(
  context: WorkerContext,
  options: InboundSmtpOptions,
): Promise<{ port: number; close(): Promise<void> }> {
  const limits = { ...INBOUND_SMTP_DEFAULTS, ...options };
  const recipients = new Map<string, ChannelRow[]>();
  const channelsOf = (session: SMTPServerSession) => recipients.get(session.id) ?? [];
  // Open connections per remote address, and the sessions counted in them (each once).
  const perAddress = new Map<string, number>();
  const counted = new Map<string, string>();
  const onBytes = scavengeEvery(SCAVENGE_INTERVAL_BYTES);
  const server = new SMTPServer({
    name: "parley",
    banner: "Parley inbound mail",
    authOptional: true,
    disabledCommands: ["AUTH", "STARTTLS"],
    size: MAX_MESSAGE_BYTES,
    maxClients: limits.maxClients,
    socketTimeout: limits.socketTimeoutMs,
    // A PTR lookup per connection is a DNS query any sender can make Parley run; nothing reads it.
    disableReverseLookup: true,
    logger: false,
    onConnect(session, callback) {
      const address = session.remoteAddress;
      const open = perAddress.get(address) ?? 0;
      if (open >= limits.maxClientsPerAddress) {
        context.logger.warn(
          { remoteAddress: address, open },
          "inbound SMTP connection refused: too many from one address",
        );
        context.metrics?.inboundEmail("too_many_connections");
        return callback(smtpError(421, "Too many connections from your address, try again later"));
      }
      perAddress.set(address, open + 1);
      counted.set(session.id, address);
      callback();
    },
    onMailFrom(_address, session, callback) {
      // A transaction starts with MAIL FROM: recipients of one abandoned before DATA (RSET,
      // a new MAIL FROM) must not receive the next message of the session.
      recipients.delete(session.id);
      callback();
    },
    onRcptTo(address, session, callback) {
      emailChannelFor(context, address.address).then(
        (channel) => {
          if (!channel) {
            context.metrics?.inboundEmail("unknown_recipient");
            return callback(smtpError(550, `No mailbox here for ${address.address}`));
          }
          if (channel.status === "disconnected") {
            // Acknowledged and dropped: a disconnected channel receives nothing (docs/channels/README.md).
            context.logger.info({ channelId: channel.id }, "inbound email for a disconnected channel ignored");
            return callback();
          }
          const known = channelsOf(session);
          if (!known.some((row) => row.id === channel.id)) recipients.set(session.id, [...known, channel]);
          callback();
        },
        (error: unknown) => {
          // The database is away (a restart): 451, so the sending server tries again later. A
          // 550, smtp-server's default for an error without a code, bounces the mail for good.
          context.logger.error({ err: error }, "inbound email recipient could not be looked up");
          callback(smtpError(451, "Temporary failure looking up the mailbox; try again later"));
        },
      );
    },
    onData(stream, session, callback) {
      const targets = channelsOf(session);
      recipients.delete(session.id);
      readMessage(stream, { limit: MAX_MESSAGE_BYTES, onBytes })
        .then(async (raw) => {
          if (!raw) throw smtpError(552, "Message exceeds the size limit");
          // SPF checks the connecting address and MAIL FROM; DKIM and DMARC the message.
          const envelope = {
            ip: session.remoteAddress,
            helo: session.hostNameAppearsAs,
            mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined,
          };
          const authentication = await authenticateEmail(raw, envelope, options.emailAuthentication ?? {});
          let duplicate = targets.length > 0;
          for (const channel of targets) {
            const outcome = await receiveEmail(
              context.db,
              context.publicBaseUrl,
              channel,
              raw,
              authentication,
              context.keys.attachmentStore,
            );
            duplicate &&= outcome.duplicate;
          }
          context.metrics?.inboundEmail(duplicate ? "duplicate" : "accepted");
          callback();
        })
        .catch((error: Error & { responseCode?: number }) => {
          if (error.responseCode === 552) context.metrics?.inboundEmail("too_large");
          if (error.responseCode) return callback(error);
          if (error instanceof InboundEmailError) {
            context.metrics?.inboundEmail("invalid");
            return callback(smtpError(550, error.message));
          }
          context.metrics?.inboundEmail("temporary_failure");
          context.logger.error({ err: error }, "inbound email could not be stored");
          callback(smtpError(451, "Temporary failure storing the message; try again later"));
        });
    },
    onClose(session) {
      recipients.delete(session.id);
      const address = counted.get(session.id);
      if (address === undefined) return;
      counted.delete(session.id);
      const open = (perAddress.get(address) ?? 1) - 1;
      if (open > 0) perAddress.set(address, open);
      else perAddress.delete(address);
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host ?? "0.0.0.0", () => {
      server.off("error", reject);
      resolve();
    });
  });
  // smtp-server reports a sender's socket error inside a transaction (a reset connection) as
  // an 'error' of the server: without a listener the worker process would die of it.
  server.on("error", (error: Error) => {
    context.logger.info({ err: error }, "an inbound SMTP connection failed mid-transaction");
  });
  const port = (server.server.address() as AddressInfo).port;
  return { port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
