import { newId } from "@parley/db";
import type { JobHelpers } from "graphile-worker";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { cleanupExpired } from "./cleanup-expired.js";

let sql: postgres.Sql;

beforeAll(() => {
  sql = postgres(inject("databaseUrl"), { max: 4, onnotice: () => {} });
});

afterAll(async () => {
  await sql.end({ timeout: 5 });
});

/** What the task uses of graphile-worker's helpers: `query` on the real database. */
function helpersOn(db: postgres.Sql): JobHelpers {
  const query = async (text: string, values: unknown[] = []) => {
    const rows = await db.unsafe(text, values as postgres.ParameterOrJSON<never>[]);
    return { rows, rowCount: rows.count };
  };
  return { query } as unknown as JobHelpers;
}

async function runCleanup(eventRetentionDays = 30) {
  await cleanupExpired({ eventRetentionDays })({}, helpersOn(sql));
}

async function createOrganization(): Promise<string> {
  const id = newId("organization");
  await sql`insert into organizations (id, name) values (${id}, 'Clean-up test')`;
  return id;
}

interface AttachmentSpec {
  expiresInMinutes: number;
  retained?: boolean;
  environment?: "live" | "test";
}

/** An attachment row with its bytes, as POST /uploads stores them. */
async function insertAttachment(organizationId: string, spec: AttachmentSpec): Promise<string> {
  const id = newId("attachment");
  await sql`
    insert into attachments (id, organization_id, environment, filename, content_type, size, retained, expires_at)
    values (${id}, ${organizationId}, ${spec.environment ?? "test"}, 'file.pdf', 'application/pdf', 4,
      ${spec.retained ?? false}, now() + make_interval(mins => ${spec.expiresInMinutes}))`;
  await sql`insert into attachment_contents (attachment_id, data) values (${id}, ${Buffer.from("%PDF")})`;
  return id;
}

async function remaining(organizationId: string) {
  const attachments = await sql<{ id: string }[]>`
    select id from attachments where organization_id = ${organizationId} order by id`;
  const contents = await sql<{ id: string }[]>`
    select c.attachment_id as id from attachment_contents c
    join attachments a on a.id = c.attachment_id where a.organization_id = ${organizationId} order by 1`;
  const orphans = await sql<{ count: number }[]>`
    select count(*)::int as count from attachment_contents c
    where not exists (select 1 from attachments a where a.id = c.attachment_id)`;
  return { attachments: attachments.map((row) => row.id), contents: contents.map((row) => row.id), orphans };
}

describe("cleanup_expired: attachments", () => {
  it("deletes expired attachments no message uses, with their bytes", async () => {
    const organizationId = await createOrganization();
    const expired = await insertAttachment(organizationId, { expiresInMinutes: -1 });
    const longExpired = await insertAttachment(organizationId, {
      expiresInMinutes: -60 * 24 * 30,
      environment: "live",
    });

    await runCleanup();

    const left = await remaining(organizationId);
    expect(left.attachments).not.toContain(expired);
    expect(left.attachments).not.toContain(longExpired);
    expect(left.contents).toEqual([]);
    expect(left.orphans).toEqual([{ count: 0 }]);
  });

  it("keeps unexpired attachments and retained ones, expired or not", async () => {
    const organizationId = await createOrganization();
    const fresh = await insertAttachment(organizationId, { expiresInMinutes: 60 });
    const almostExpired = await insertAttachment(organizationId, { expiresInMinutes: 1 });
    const sentAndExpired = await insertAttachment(organizationId, { expiresInMinutes: -60, retained: true });
    const sentAndFresh = await insertAttachment(organizationId, { expiresInMinutes: 60, retained: true });
    await insertAttachment(organizationId, { expiresInMinutes: -1 });

    await runCleanup();

    const kept = [fresh, almostExpired, sentAndExpired, sentAndFresh].sort();
    expect(await remaining(organizationId)).toEqual({ attachments: kept, contents: kept, orphans: [{ count: 0 }] });
  });

  it("is a no-op when run again", async () => {
    const organizationId = await createOrganization();
    const fresh = await insertAttachment(organizationId, { expiresInMinutes: 60 });
    await insertAttachment(organizationId, { expiresInMinutes: -1 });

    await runCleanup();
    await runCleanup();

    expect((await remaining(organizationId)).attachments).toEqual([fresh]);
  });

  it("waits for a send that holds the file, then keeps it once the send has retained it", async () => {
    const organizationId = await createOrganization();
    const attachment = await insertAttachment(organizationId, { expiresInMinutes: -1 });
    let cleanup: Promise<void> | undefined;

    await sql.begin(async (send) => {
      // What POST /messages does: hold the attachment (FOR KEY SHARE), then retain it.
      await send`select id from attachments where id = ${attachment} for key share`;
      cleanup = runCleanup();
      await vi.waitFor(
        async () => {
          const waiting = await sql`
            select 1 from pg_stat_activity
            where wait_event_type = 'Lock' and query like 'delete from attachments%'`;
          expect(waiting.length).toBeGreaterThan(0);
        },
        { timeout: 10_000, interval: 20 },
      );
      await send`update attachments set retained = true where id = ${attachment}`;
    });
    await cleanup;

    expect((await remaining(organizationId)).attachments).toEqual([attachment]);
  });
});

describe("cleanup_expired: files of deleted messages", () => {
  it("deletes a retained file a day past expiry once no message uses it", async () => {
    const organizationId = await createOrganization();
    const orphaned = await insertAttachment(organizationId, { expiresInMinutes: -60 * 25, retained: true });
    const recent = await insertAttachment(organizationId, { expiresInMinutes: -60 * 23, retained: true });

    await runCleanup();

    expect((await remaining(organizationId)).attachments).toEqual([recent]);
    expect((await remaining(organizationId)).attachments).not.toContain(orphaned);
  });
});

describe("cleanup_expired: other expiring records", () => {
  it("forgets idempotency keys after 24 hours and keeps younger ones", async () => {
    const organizationId = await createOrganization();
    for (const [key, ageHours] of [
      ["old", 25],
      ["young", 23],
    ] as const) {
      await sql`
        insert into idempotency_keys (organization_id, key, environment, fingerprint, created_at)
        values (${organizationId}, ${key}, 'test', 'f', now() - make_interval(hours => ${ageHours}))`;
    }

    await runCleanup();

    const left = await sql`select key from idempotency_keys where organization_id = ${organizationId}`;
    expect(left.map((row) => row.key)).toEqual(["young"]);
  });

  it("forgets events and webhook delivery records after EVENT_RETENTION_DAYS and keeps younger ones", async () => {
    const organizationId = await createOrganization();
    const endpointId = newId("webhook");
    await sql`
      insert into webhook_endpoints (id, organization_id, environment, url, events, secret)
      values (${endpointId}, ${organizationId}, 'test', 'https://example.com/hook', ${["*"]}, 'whsec_test')`;
    for (const [name, ageDays] of [
      ["old", 8],
      ["young", 6],
    ] as const) {
      const eventId = newId("event");
      await sql`
        insert into events (id, organization_id, environment, type, data, created_at)
        values (${eventId}, ${organizationId}, 'test', 'contact.created', ${sql.json({ name })},
          now() - make_interval(days => ${ageDays}))`;
      await sql`
        insert into webhook_deliveries (id, organization_id, environment, endpoint_id, event_id, event_type,
          attempt, succeeded, duration_ms, created_at)
        values (${newId("webhookDelivery")}, ${organizationId}, 'test', ${endpointId}, ${eventId}, 'contact.created',
          1, true, 5, now() - make_interval(days => ${ageDays}))`;
    }

    await runCleanup(7);

    const events = await sql`select data->>'name' as name from events where organization_id = ${organizationId}`;
    expect(events.map((row) => row.name)).toEqual(["young"]);
    const deliveries =
      await sql`select count(*)::int as count from webhook_deliveries where organization_id = ${organizationId}`;
    expect(deliveries[0]?.count).toBe(1);
  });

  it("forgets rate-limit windows once they are over", async () => {
    const organizationId = await createOrganization();
    await sql`
      insert into rate_limit_windows (organization_id, window_start, count) values
        (${organizationId}, date_trunc('minute', now()) - interval '10 minutes', 5),
        (${organizationId}, date_trunc('minute', now()), 3)`;

    await runCleanup();

    const left = await sql`select count from rate_limit_windows where organization_id = ${organizationId}`;
    expect(left.map((row) => row.count)).toEqual([3]);
  });
});
