import { postgresClientOf } from "@parley/db";
import { TYPING_SECONDS } from "@parley/schema";
import type { Response } from "express";
import type { Logger } from "pino";
import type { AppContext } from "../context.js";
import { ApiError } from "../http/api-error.js";
import { visitorMessage } from "./visitor-message.js";

/** How often the one poller of this process looks for replies; a stream costs it nothing more. */
export const STREAM_POLL_MS = 500;
/** A session's streams: a new one closes the oldest beyond this (a tab reloaded, a second tab). */
export const STREAMS_PER_SESSION = 2;
const KEEP_ALIVE_MS = 15_000;
/** Replies read per conversation per poll; a longer backlog follows at the next polls. */
const BATCH = 50;
/** A start before any reply: every reply is after it. */
const ORIGIN = { createdAt: new Date(0), id: "" };

interface Cursor {
  createdAt: Date;
  id: string;
}

export interface StreamCaps {
  perAddress: number;
  perProcess: number;
}

interface ReplyRow {
  conversation_id: string;
  id: string;
  direction: "inbound" | "outbound";
  type: "text" | "image" | "video" | "audio" | "document" | "template";
  text: string | null;
  status: "queued" | "sent" | "delivered" | "read" | "failed" | null;
  created_at: Date;
}

interface SessionRow {
  id: string;
  conversation_id: string | null;
  agent_typing_until: string | null;
  agent_name: string | null;
}

class Stream {
  conversationId: string | null;
  /** The assigned agent's name, as of the last poll: shown on the replies and the typing dots. */
  agentName: string | null = null;
  /** What the page was last told: typing dots shown or not. */
  typing = false;
  constructor(
    readonly sessionId: string,
    readonly address: string,
    conversationId: string | null,
    public cursor: Cursor,
    readonly res: Response,
  ) {
    this.conversationId = conversationId;
  }

  send(rows: ReplyRow[]) {
    for (const row of rows) {
      if (!after(row, this.cursor)) continue;
      const message = visitorMessage({ ...row, createdAt: row.created_at }, this.agentName);
      this.res.write(`id: ${message.id}\nevent: message\ndata: ${JSON.stringify(message)}\n\n`);
      this.cursor = { createdAt: row.created_at, id: row.id };
    }
  }

  /**
   * Typing dots while a signal is fresh and no reply came after it (the reply it announced
   * has arrived: the dots go without waiting for the signal to expire).
   */
  showTyping(until: Date | null, now: number) {
    const since = until ? until.getTime() - TYPING_SECONDS * 1000 : 0;
    const typing = until !== null && until.getTime() > now && since > this.cursor.createdAt.getTime();
    if (typing === this.typing) return;
    this.typing = typing;
    this.res.write(`event: typing\ndata: ${JSON.stringify({ typing, agent_name: this.agentName })}\n\n`);
  }
}

function after(row: { created_at: Date; id: string }, cursor: Cursor): boolean {
  const time = row.created_at.getTime() - cursor.createdAt.getTime();
  return time > 0 || (time === 0 && row.id > cursor.id);
}

/**
 * Every web chat event stream of this process, and the one poller behind them. Each poll
 * is at most two statements, whatever the number of streams: the streams' sessions (their
 * conversation once started, the assigned agent's name, an agent typing until when), and
 * the new replies of every watched conversation (a lateral read per conversation, through
 * its index). The streams of a conversation share its read and
 * each writes what is past its own cursor. Works across any number of API processes:
 * nothing is shared but the database.
 *
 * Bounded: at most `STREAMS_PER_SESSION` per session (a new one closes the oldest), and
 * `perAddress` and `perProcess` in all (beyond, 429 `rate_limited`).
 */
export class ReplyHub {
  private readonly streams = new Set<Stream>();
  private readonly perAddress = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private lastKeepAlive = Date.now();
  private busy = false;

  constructor(
    private readonly app: Pick<AppContext, "db">,
    private readonly logger: Logger,
    private readonly caps: StreamCaps,
  ) {}

  /** Checks the caps before any byte is sent: a refusal is a plain 429. */
  admit(sessionId: string, address: string): void {
    // A session at its own cap trades its oldest stream for the new one: no net stream.
    const oldest = this.ofSession(sessionId)[0];
    const replacing = this.ofSession(sessionId).length >= STREAMS_PER_SESSION ? oldest : undefined;
    if (this.streams.size - (replacing ? 1 : 0) >= this.caps.perProcess) {
      throw new ApiError("rate_limited", "Too many open web chat streams on this server; retry later.", {
        headers: { "Retry-After": "30" },
      });
    }
    const freed = replacing?.address === address ? 1 : 0;
    if ((this.perAddress.get(address) ?? 0) - freed >= this.caps.perAddress) {
      throw new ApiError(
        "rate_limited",
        `At most ${this.caps.perAddress} open web chat streams per address; close one first.`,
        { headers: { "Retry-After": "30" } },
      );
    }
  }

  /** After `admit`, once the headers are sent: a cap reached meanwhile (a race of opens) ends the stream at once. */
  open(sessionId: string, address: string, conversationId: string | null, cursor: Cursor | undefined, res: Response) {
    try {
      this.admit(sessionId, address);
    } catch {
      res.end();
      return;
    }
    // The visitor left while the stream was being set up: its "close" has already fired.
    if (res.closed || res.destroyed || res.socket?.destroyed !== false) return;
    const mine = this.ofSession(sessionId);
    for (const oldest of mine.slice(0, Math.max(0, mine.length - STREAMS_PER_SESSION + 1))) this.end(oldest);
    const stream = new Stream(sessionId, address, conversationId, cursor ?? ORIGIN, res);
    this.streams.add(stream);
    this.perAddress.set(address, (this.perAddress.get(address) ?? 0) + 1);
    res.on("close", () => this.remove(stream));
    this.timer ??= setInterval(() => void this.poll(), STREAM_POLL_MS).unref();
    void this.poll();
  }

  /** A session's streams, oldest first (a Set keeps insertion order). */
  private ofSession(sessionId: string): Stream[] {
    return [...this.streams].filter((stream) => stream.sessionId === sessionId);
  }

  /** The session ended: its streams close. */
  endSession(sessionId: string) {
    for (const stream of this.streams) if (stream.sessionId === sessionId) this.end(stream);
  }

  /** Shutdown: every stream ends, so the server can close. */
  close() {
    for (const stream of this.streams) this.end(stream);
  }

  get size() {
    return this.streams.size;
  }

  private end(stream: Stream) {
    this.remove(stream);
    stream.res.end();
  }

  private remove(stream: Stream) {
    if (!this.streams.delete(stream)) return;
    const left = (this.perAddress.get(stream.address) ?? 1) - 1;
    if (left > 0) this.perAddress.set(stream.address, left);
    else this.perAddress.delete(stream.address);
    if (this.streams.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private async poll() {
    if (this.busy || this.streams.size === 0) return;
    this.busy = true;
    try {
      const sql = postgresClientOf(this.app.db);
      const sessionIds = [...new Set([...this.streams].map((s) => s.sessionId))];
      const sessions = await sql<SessionRow[]>`
        select s.id, s.conversation_id, to_json(s.agent_typing_until) #>> '{}' as agent_typing_until, u.name as agent_name
        from webchat_sessions s
        left join conversations c on c.id = s.conversation_id
        left join users u on u.id = c.assigned_user_id
        where s.id = any(${sessionIds}::text[])`;
      const sessionOf = new Map(sessions.map((row) => [row.id, row]));
      for (const stream of this.streams) {
        const session = sessionOf.get(stream.sessionId);
        stream.conversationId ??= session?.conversation_id ?? null;
        stream.agentName = session?.agent_name ?? null;
      }
      // Per conversation, from the cursor of its stream furthest behind.
      const from = new Map<string, Cursor>();
      for (const stream of this.streams) {
        if (!stream.conversationId) continue;
        const known = from.get(stream.conversationId);
        if (!known || after({ created_at: known.createdAt, id: known.id }, stream.cursor)) {
          from.set(stream.conversationId, stream.cursor);
        }
      }
      if (from.size > 0) {
        // As JSON: one parameter, whatever the number of conversations.
        const watched = JSON.stringify(
          [...from].map(([conversationId, cursor]) => ({
            conversation_id: conversationId,
            after_at: cursor.createdAt.toISOString(),
            after_id: cursor.id,
          })),
        );
        const found = await sql<(Omit<ReplyRow, "created_at"> & { created_at: string })[]>`
          select m.conversation_id, m.id, m.direction, m.type, m.text, m.status, to_json(m.created_at) #>> '{}' as created_at
          from jsonb_to_recordset(${watched}::jsonb) as c(conversation_id text, after_at timestamptz, after_id text)
          cross join lateral (
            select * from messages
            where messages.conversation_id = c.conversation_id and messages.direction = 'outbound'
              and (messages.created_at, messages.id) > (c.after_at, c.after_id)
            order by messages.created_at, messages.id
            limit ${BATCH}
          ) m
          order by m.created_at, m.id`;
        const byConversation = new Map<string, ReplyRow[]>();
        for (const { created_at, ...rest } of found) {
          const row = { ...rest, created_at: new Date(created_at) };
          const list = byConversation.get(row.conversation_id) ?? [];
          list.push(row);
          byConversation.set(row.conversation_id, list);
        }
        for (const stream of this.streams) {
          const replies = stream.conversationId ? byConversation.get(stream.conversationId) : undefined;
          if (replies) stream.send(replies);
        }
      }
      const now = Date.now();
      for (const stream of this.streams) {
        const until = sessionOf.get(stream.sessionId)?.agent_typing_until;
        stream.showTyping(until ? new Date(until) : null, now);
      }
      if (Date.now() - this.lastKeepAlive >= KEEP_ALIVE_MS) {
        this.lastKeepAlive = Date.now();
        for (const stream of this.streams) stream.res.write(": keep-alive\n\n");
      }
    } catch (error) {
      this.logger.warn({ err: error }, "web chat stream poll failed");
    } finally {
      this.busy = false;
    }
  }
}
