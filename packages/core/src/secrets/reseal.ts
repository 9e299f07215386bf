import { type Queryable, StartupError } from "@parley/db";
import { sql } from "drizzle-orm";
import { type SecretBox, sealedKeyId } from "./secret-box.js";

/**
 * Every column holding values the SecretBox sealed, with its table's primary key: the
 * start's check and `admin reseal-secrets` go through each. A new sealed column is one
 * more line here.
 */
export const SEALED_COLUMNS = [{ table: "channels", column: "secret_settings", key: "id" }] as const;

/** Values re-sealed per statement: one batch is one read and one write, each a short statement. */
export const RESEAL_BATCH_SIZE = 200;

/** How many sealed values each key id holds, per column (one grouped scan each). */
async function sealedKeyCounts(db: Queryable): Promise<{ keyId: string; count: number }[]> {
  const counts: { keyId: string; count: number }[] = [];
  for (const column of SEALED_COLUMNS) {
    const rows = await db.execute<{ key_id: string; count: number }>(sql`
      select split_part(${sql.identifier(column.column)}, '.', 2) as key_id, count(*)::int as count
      from ${sql.identifier(column.table)} where ${sql.identifier(column.column)} is not null group by 1`);
    for (const row of rows) counts.push({ keyId: row.key_id, count: Number(row.count) });
  }
  return counts;
}

function keysSaid(box: SecretBox): string {
  const [current, previous] = box.keyIds;
  return `PARLEY_SECRETS_KEY is key ${current} and PARLEY_SECRETS_KEY_PREVIOUS is ${previous ? `key ${previous}` : "not set"}`;
}

/**
 * Refuses a start that could not open some sealed value: a key dropped before `admin
 * reseal-secrets` ran, or the wrong key. One line, with the key ids (never the keys) and
 * the fix; the processes still running with both keys keep working meanwhile.
 */
export async function assertSealedSecretsOpen(db: Queryable, box: SecretBox): Promise<void> {
  const unknown = (await sealedKeyCounts(db)).filter(({ keyId }) => !box.keyIds.includes(keyId));
  if (unknown.length === 0) return;
  const count = unknown.reduce((sum, entry) => sum + entry.count, 0);
  const ids = [...new Set(unknown.map((entry) => entry.keyId))].join(", ");
  throw new StartupError(
    `${count} sealed channel secret${count === 1 ? " was" : "s were"} sealed with key ${ids}, but ${keysSaid(box)}: ` +
      `set PARLEY_SECRETS_KEY_PREVIOUS to the key that sealed them, then run \`pnpm admin reseal-secrets\` (docs/operations.md, "Rotating the secrets key").`,
  );
}

export interface ResealReport {
  /** The key everything is now sealed with. */
  key_id: string;
  /** Values re-sealed by this run. */
  resealed: number;
  /** Values already sealed with the current key, left as they were. */
  already_current: number;
  /** Values neither configured key opens (by key id), left as they were. */
  unopenable: number;
  unopenable_key_ids: string[];
  batches: number;
}

/**
 * Re-seals every sealed value under the current key, in batches of `batchSize`, so that the
 * previous key can be dropped. Idempotent: a value already under the current key is not
 * touched. Safe beside running processes: a batch's write only replaces a value still
 * equal to what was read (a concurrent change wins), and processes holding both keys open
 * the old and the new form alike.
 */
export async function resealSecrets(
  db: Queryable,
  box: SecretBox,
  options: { batchSize?: number } = {},
): Promise<ResealReport> {
  const batchSize = options.batchSize ?? RESEAL_BATCH_SIZE;
  const report: ResealReport = {
    key_id: box.keyId,
    resealed: 0,
    already_current: 0,
    unopenable: 0,
    unopenable_key_ids: [],
    batches: 0,
  };
  const unopenableIds = new Set<string>();
  const current = `v1.${box.keyId}.%`;
  for (const column of SEALED_COLUMNS) {
    const table = sql.identifier(column.table);
    const value = sql.identifier(column.column);
    const key = sql.identifier(column.key);
    const [counted] = await db.execute<{ count: number }>(sql`
      select count(*)::int as count from ${table} where ${value} like ${current}`);
    report.already_current += Number(counted?.count ?? 0);
    let after = "";
    for (;;) {
      const rows = await db.execute<{ key: string; sealed: string }>(sql`
        select ${key} as key, ${value} as sealed from ${table}
        where ${value} is not null and ${value} not like ${current} and ${key} > ${after}
        order by ${key} limit ${batchSize}`);
      if (rows.length === 0) break;
      after = rows[rows.length - 1]?.key ?? after;
      const changes: { key: string; old: string; new: string }[] = [];
      for (const row of rows) {
        try {
          changes.push({ key: row.key, old: row.sealed, new: box.seal(box.open(row.sealed)) });
        } catch {
          report.unopenable += 1;
          unopenableIds.add(sealedKeyId(row.sealed) ?? "none");
        }
      }
      if (changes.length > 0) {
        const updated = await db.execute<{ key: string }>(sql`
          update ${table} set ${value} = v.new
          from jsonb_to_recordset(${JSON.stringify(changes)}::jsonb) as v(key text, old text, new text)
          where ${table}.${key} = v.key and ${table}.${value} = v.old
          returning ${table}.${key} as key`);
        report.resealed += updated.length;
      }
      report.batches += 1;
    }
  }
  report.unopenable_key_ids = [...unopenableIds].sort();
  return report;
}
