import { readFileSync, readdirSync } from "node:fs";
import postgres from "postgres";
import { startScratchPostgres, runMigrations } from "./dist/index.js";

const scratch = await startScratchPostgres();
await runMigrations(scratch.url);
const sql = postgres(scratch.url, { max: 10, onnotice: () => {} });
const N = 2000, M = 25;
await sql`insert into organizations (id, name) values ('org_x', 'x')`;
await sql`insert into contacts (id, organization_id, environment) select 'ct_' || n, 'org_x', 'test' from generate_series(1, ${N}) n`;
await sql`insert into conversations (id, organization_id, environment, contact_id) select 'cv_' || n, 'org_x', 'test', 'ct_' || n from generate_series(1, ${N}) n`;
// Interleaved in time as a real inbox: message k of every conversation, then k+1.
await sql`insert into messages (id, organization_id, environment, conversation_id, direction, type, text, metadata, status, created_at, updated_at)
  select 'msg_' || lpad(((k * ${N}) + n)::text, 12, '0'), 'org_x', 'test', 'cv_' || n,
         case when k % 3 = 0 then 'inbound' else 'outbound' end, 'text',
         'Spread message number ' || k || ': the quick brown fox jumps over the lazy dog.', '{}'::jsonb,
         case when k % 3 = 0 then null else 'delivered' end,
         now() - make_interval(secs => 3600 + (${M} - k) * 60) + make_interval(secs => n / 1000.0),
         now() - make_interval(secs => 3600 + (${M} - k) * 60)
  from generate_series(1, ${N}) n cross join generate_series(1, ${M}) k`;
await sql`analyze`;

const pid = (await sql`select pg_backend_pid() as p`)[0].p;
const postmaster = Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")[1]);
function pgTicks() {
  let total = 0;
  for (const child of readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, "utf8").trim().split(/\s+/)) {
    try { const f = readFileSync(`/proc/${child}/stat`, "utf8").split(") ")[1].split(" "); total += Number(f[11]) + Number(f[12]); } catch {}
  }
  return total;
}
const COLS = `id, organization_id, environment, conversation_id, direction, type, text, attachment_id, metadata, status, error_code, error_message, provider_message_id, authentication, sms_segments, sms_encoding, created_at, updated_at`;
const queries = {
  two_step: (c) => sql`select ${sql.unsafe(COLS)}, xmin::text as row_version from messages
     where organization_id = ${"org_x"} and environment = ${"test"} and id = any(array(
       select id from messages where conversation_id = ${c} order by created_at desc, id desc limit (select ${26}::int)))
     order by created_at desc, id desc`,
  one_step: (c) => sql`select ${sql.unsafe(COLS)}, xmin::text as row_version from messages
     where conversation_id = ${c} and organization_id = ${"org_x"} and environment = ${"test"}
     order by created_at desc, id desc limit (select ${26}::int)`,
  one_step_literal: (c) => sql`select ${sql.unsafe(COLS)}, xmin::text as row_version from messages
     where conversation_id = ${c} and organization_id = ${"org_x"} and environment = ${"test"}
     order by created_at desc, id desc limit 26`,
};
async function run(name, total = 20000) {
  const q = queries[name];
  let done = 0; const t0 = performance.now(); const p0 = pgTicks();
  await Promise.all(Array.from({ length: 10 }, async () => { while (done < total) { done++; const rows = await q(`cv_${1 + Math.floor(Math.random() * N)}`); if (rows.length !== 25) throw new Error(`rows ${rows.length}`); } }));
  const ms = performance.now() - t0; const ticks = pgTicks() - p0;
  console.log(name.padEnd(18), `${(total / ms * 1000).toFixed(0)}/s`, `PG CPU ${(ticks * 10 / total * 1000).toFixed(0)} µs/page`);
}
for (const name of Object.keys(queries)) await run(name, 3000);
for (let round = 0; round < 2; round++) for (const name of Object.keys(queries)) await run(name);
const plan = await sql.unsafe(`explain (analyze, buffers) select ${COLS} from messages where organization_id = 'org_x' and environment = 'test' and id = any(array(select id from messages where conversation_id = 'cv_77' order by created_at desc, id desc limit (select 26::int))) order by created_at desc, id desc`);
console.log(plan.map((r) => r["QUERY PLAN"]).join("\n"));
await sql`vacuum messages`;
console.log("after VACUUM (visibility map set):");
for (const name of Object.keys(queries)) await run(name);
await sql.end();
await scratch.destroy();
