// The baseline of `pnpm bench`: the least a send must do, in the same stack as Parley
// (express 5 + zod + postgres.js) on the same PostgreSQL. `POST /messages` validates a
// body like Parley's, then writes one transaction of three INSERTs of about 500 bytes
// (the message, its event, its outbox row) and answers 201 with the message.
// `GET /conversations/:id/messages?limit=25` reads one page by an index. No auth, no
// idempotency, no rate limit, no logging: that is the point of a floor.
//
// Started by bench/run.mjs: DATABASE_URL=... PORT=... node bench/baseline/server.mjs
// Prints `baseline listening on <port>` once it accepts requests.
import { randomBytes } from "node:crypto";
import express from "express";
import postgres from "postgres";
import { z } from "zod";

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  console.error("DATABASE_URL is required");
  process.exit(1);
}
const port = Number(process.env.PORT ?? 0);

// Parley's API pool: createDatabaseClient() in packages/db/src/client.ts, max 10.
const sql = postgres(databaseUrl, { max: 10, onnotice: () => {} });

await sql.unsafe(`
  create schema if not exists bench_baseline;
  create table if not exists bench_baseline.messages (
    id text primary key,
    conversation_id text not null,
    direction text not null,
    type text not null,
    text text,
    metadata jsonb not null default '{}',
    status text,
    created_at timestamptz(3) not null default now(),
    updated_at timestamptz(3) not null default now()
  );
  create index if not exists messages_conversation_idx
    on bench_baseline.messages (conversation_id, created_at desc, id desc);
  create table if not exists bench_baseline.events (
    id text primary key,
    type text not null,
    data jsonb not null,
    created_at timestamptz(3) not null default now()
  );
  create table if not exists bench_baseline.outbox (
    id bigserial primary key,
    message_id text not null,
    payload jsonb not null,
    created_at timestamptz(3) not null default now()
  );
`);

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** `<prefix>_` + a ULID-shaped id: 10 characters of milliseconds, 16 random. */
function newId(prefix) {
  let time = Date.now();
  let head = "";
  for (let i = 0; i < 10; i++) {
    head = CROCKFORD[time % 32] + head;
    time = Math.floor(time / 32);
  }
  const random = randomBytes(16);
  let tail = "";
  for (let i = 0; i < 16; i++) tail += CROCKFORD[random[i] % 32];
  return `${prefix}_${head}${tail}`;
}

const idPattern = (prefix) => new RegExp(`^${prefix}_[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}$`);

const sendSchema = z
  .object({
    conversation_id: z.string().regex(idPattern("conv")),
    type: z.enum(["text", "image", "video", "audio", "document", "template"]),
    text: z.string().min(1).max(4096).optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
    attachment_id: z.string().regex(idPattern("att")).optional(),
  })
  .strict();

const listSchema = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(25),
});

function serialize(row) {
  return {
    object: "message",
    id: row.id,
    conversation_id: row.conversation_id,
    direction: row.direction,
    type: row.type,
    text: row.text,
    metadata: row.metadata,
    status: row.status,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function validationError(res, error) {
  res.status(422).json({ error: { type: "validation_error", message: z.prettifyError(error) } });
}

const app = express();
app.disable("x-powered-by");
app.set("etag", false);
app.use(express.json({ limit: "1mb", strict: false }));

app.post("/messages", async (req, res, next) => {
  const parsed = sendSchema.safeParse(req.body);
  if (!parsed.success) return validationError(res, parsed.error);
  const input = parsed.data;
  try {
    const message = await sql.begin(async (tx) => {
      const [row] = await tx`
        insert into bench_baseline.messages (id, conversation_id, direction, type, text, metadata, status)
        values (${newId("msg")}, ${input.conversation_id}, 'outbound', ${input.type}, ${input.text ?? null},
                ${tx.json(input.metadata ?? {})}, 'queued')
        returning *`;
      const serialized = serialize(row);
      await tx`
        insert into bench_baseline.events (id, type, data)
        values (${newId("evt")}, 'message.created', ${tx.json({ message: serialized })})`;
      await tx`
        insert into bench_baseline.outbox (message_id, payload)
        values (${row.id}, ${tx.json({ message: serialized })})`;
      return serialized;
    });
    res.status(201).json(message);
  } catch (error) {
    next(error);
  }
});

app.get("/conversations/:id/messages", async (req, res, next) => {
  const parsed = listSchema.safeParse(req.query);
  if (!parsed.success) return validationError(res, parsed.error);
  const { limit } = parsed.data;
  try {
    const rows = await sql`
      select * from bench_baseline.messages
      where conversation_id = ${req.params.id}
      order by created_at desc, id desc
      limit ${limit + 1}`;
    res.json({
      object: "list",
      data: rows.slice(0, limit).map(serialize),
      pagination: { has_more: rows.length > limit, next_cursor: null },
    });
  } catch (error) {
    next(error);
  }
});

app.use((error, _req, res, _next) => {
  console.error(error);
  res.status(500).json({ error: { type: "internal_error" } });
});

const server = app.listen(port, "127.0.0.1", () => {
  console.log(`baseline listening on ${server.address().port}`);
});

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => {
    server.close();
    server.closeAllConnections?.();
    void sql.end({ timeout: 2 }).then(() => process.exit(0));
  });
}
