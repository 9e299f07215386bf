import http from "node:http";
import net from "node:net";
import { errorCatalogue } from "@parley/schema";
import type { Sql } from "postgres";

/** One request as the fuzzers build it: the path is sent exactly as given, already percent-encoded. */
export interface RawRequest {
  method: string;
  /** Relative to the server root, e.g. `/v1/contacts/cnt_...?limit=2`. */
  path: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: any;
}

/**
 * A keep-alive HTTP client with modest concurrency. `node:http` rather than fetch: fetch
 * normalises paths (`..`, `%2e`) and refuses bodies on GET, and hostile requests need both.
 */
export class RawClient {
  private readonly agent: http.Agent;
  private readonly base: URL;

  constructor(baseUrl: string, maxSockets = 8) {
    this.base = new URL(baseUrl);
    // Idle sockets are dropped before the server's keep-alive timeout (5 s) can race a reuse.
    this.agent = new http.Agent({ keepAlive: true, maxSockets, timeout: 2_000 });
  }

  send(request: RawRequest, timeoutMs = 20_000): Promise<RawResponse> {
    const body = request.body === undefined ? undefined : Buffer.from(request.body);
    const headers: Record<string, string> = { ...request.headers };
    if (body !== undefined && !Object.keys(headers).some((name) => name.toLowerCase() === "transfer-encoding")) {
      headers["content-length"] = String(body.length);
    }
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: this.base.hostname,
          port: this.base.port,
          method: request.method,
          path: request.path,
          headers,
          agent: this.agent,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("error", reject);
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let json: any;
            try {
              json = text ? JSON.parse(text) : undefined;
            } catch {
              json = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
          });
        },
      );
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on("error", reject);
      req.end(body);
    });
  }

  close() {
    this.agent.destroy();
  }
}

/** What is wrong with an error response, or undefined when it is the documented error body. */
export function envelopeProblem(response: RawResponse): string | undefined {
  const body = response.json;
  if (typeof body !== "object" || body === null) return `error body is not JSON: ${response.text.slice(0, 120)}`;
  const keys = Object.keys(body);
  if (keys.length !== 1 || keys[0] !== "error") return `error body has keys ${JSON.stringify(keys)}`;
  const error = body.error;
  if (typeof error !== "object" || error === null) return "error is not an object";
  const code = error.code as string;
  if (!(code in errorCatalogue)) return `unknown error code ${JSON.stringify(code)}`;
  const expected = errorCatalogue[code as keyof typeof errorCatalogue].status;
  if (expected !== response.status) return `code ${code} is documented as ${expected}, answered ${response.status}`;
  if (typeof error.message !== "string" || error.message.length === 0) return "error.message is not a string";
  if (typeof error.request_id !== "string" || error.request_id !== response.headers["x-parley-request-id"]) {
    return "error.request_id differs from X-Parley-Request-Id";
  }
  if (error.param !== undefined && typeof error.param !== "string") return "error.param is not a string";
  const allowed = new Set(["code", "message", "param", "request_id", "details"]);
  const extra = Object.keys(error).filter((key) => !allowed.has(key));
  if (extra.length > 0) return `error has unknown fields ${JSON.stringify(extra)}`;
  if (error.details !== undefined) {
    if (!Array.isArray(error.details)) return "error.details is not an array";
    for (const detail of error.details) {
      if (typeof detail?.param !== "string" || typeof detail?.message !== "string") return "malformed error.details";
    }
  }
  return undefined;
}

/** A short, printable account of a request for failure messages. */
export function describeRequest(request: RawRequest): string {
  const body = request.body === undefined ? "" : Buffer.from(request.body).toString("utf8");
  const shown = body.length > 300 ? `${body.slice(0, 300)}… (${body.length} chars)` : body;
  const headers = Object.entries(request.headers ?? {})
    .filter(([name]) => name.toLowerCase() !== "authorization")
    .map(([name, value]) => `${name}: ${value.length > 80 ? `${value.slice(0, 80)}…` : value}`)
    .join("; ");
  const path = request.path.length > 300 ? `${request.path.slice(0, 300)}…` : request.path;
  return `${request.method} ${path} [${headers}] ${JSON.stringify(shown)}`;
}

/** Tenant tables without an `organization_id` of their own, digested through their parent row. */
const CHILD_TABLES: Record<string, string> = {
  attachment_contents: `select c.ctid, c.xmin from attachment_contents c
    join attachments a on a.id = c.attachment_id where a.organization_id = any($1)`,
  message_outbox: `select o.ctid, o.xmin from message_outbox o
    join messages m on m.id = o.message_id where m.organization_id = any($1)`,
  event_outbox: `select o.ctid, o.xmin from event_outbox o
    join events e on e.id = o.event_id where e.organization_id = any($1)`,
};

/** Counted on every authenticated request, refused ones included: not state a request changes. */
const NOT_DIGESTED = new Set(["rate_limit_windows"]);

/**
 * An order-free sum of hashes of every row version's place and writing transaction
 * (`ctid`, `xmin`): any committed insert, update (even one that rewrites a row unchanged)
 * or delete changes it; a rolled-back write or a `FOR UPDATE` lock does not. Cheaper than
 * hashing the rows' text, and stricter.
 */
const ROW_SUM = (alias: string) =>
  `coalesce(sum(hashtextextended(${alias}.ctid::text || '/' || ${alias}.xmin::text, 0)::numeric), 0)::text`;

let digestQuery: string | undefined;

/**
 * One digest per tenant table over every row version of the given organizations, plus
 * the organizations themselves and the tables hanging off tenant rows.
 */
export async function tenantDigest(sql: Sql, organizationIds: string[]): Promise<Record<string, string>> {
  if (!digestQuery) {
    const tables = await sql<{ table_name: string }[]>`
      select distinct table_name from information_schema.columns
      where table_schema = 'public' and column_name = 'organization_id' order by table_name`;
    const parts = tables
      .map((row) => row.table_name)
      .filter((table) => !NOT_DIGESTED.has(table))
      .map(
        (table) => `select '${table}' as t, count(*)::int as n, ${ROW_SUM("x")} as d
           from ${table} x where organization_id = any($1)`,
      );
    parts.push(
      `select 'organizations' as t, count(*)::int as n, ${ROW_SUM("x")} as d from organizations x where id = any($1)`,
    );
    for (const [table, rows] of Object.entries(CHILD_TABLES)) {
      parts.push(`select '${table}' as t, count(*)::int as n, ${ROW_SUM("s")} as d from (${rows}) s`);
    }
    digestQuery = parts.join("\nunion all\n");
  }
  const rows = await sql.unsafe<{ t: string; n: number; d: string }[]>(digestQuery, [organizationIds], {
    prepare: true,
  });
  return Object.fromEntries(rows.map((row) => [row.t, `${row.n}:${row.d}`]));
}

/** The tables whose digest differs. */
export function digestChanges(before: Record<string, string>, after: Record<string, string>): string[] {
  return Object.keys({ ...before, ...after }).filter((table) => before[table] !== after[table]);
}

/** What the server answers to bytes written on a raw socket, and how the connection ended. */
export interface SocketOutcome {
  /** Everything the server sent. */
  received: string;
  /** The status of the first response line, if one came. */
  status: number | undefined;
  /** Milliseconds from connecting until the server closed the connection (or the test gave up). */
  closedAfterMs: number;
  closedByServer: boolean;
}

/**
 * Writes `chunks` to a fresh TCP connection, `delayMs` apart, and waits for the server to
 * close it (at most `giveUpMs`). For what an HTTP client library would refuse to send.
 */
export function rawExchange(
  port: number,
  chunks: (string | Buffer)[],
  options: { delayMs?: number; giveUpMs?: number; host?: string } = {},
): Promise<SocketOutcome> {
  const { delayMs = 0, giveUpMs = 10_000, host = "127.0.0.1" } = options;
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(port, host);
    const received: Buffer[] = [];
    let finished = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (closedByServer: boolean) => {
      if (finished) return;
      finished = true;
      if (timer) clearTimeout(timer);
      clearTimeout(giveUp);
      socket.destroy();
      const text = Buffer.concat(received).toString("latin1");
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({
        received: text,
        status: match ? Number(match[1]) : undefined,
        closedAfterMs: Date.now() - started,
        closedByServer,
      });
    };
    const giveUp = setTimeout(() => finish(false), giveUpMs);
    socket.on("data", (chunk) => received.push(chunk));
    socket.on("end", () => finish(true));
    socket.on("close", () => finish(true));
    socket.on("error", () => finish(true));
    socket.on("connect", () => {
      let index = 0;
      const writeNext = () => {
        if (finished || index >= chunks.length) return;
        const chunk = chunks[index++] as string | Buffer;
        socket.write(chunk, () => {
          if (delayMs > 0) timer = setTimeout(writeNext, delayMs);
          else writeNext();
        });
      };
      writeNext();
    });
  });
}

/** Runs `tasks` with at most `limit` in flight; results in order. */
export async function inPool<T, R>(items: readonly T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
