import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EmbeddedDatabase, startEmbeddedDatabase } from "./embedded.js";
import { migrationsFolder, runMigrations } from "./migrate.js";

/** Runs against `DATABASE_URL` when set (in a fresh database of its own), otherwise an embedded server. */
describe("migrations", () => {
  let server: EmbeddedDatabase | undefined;
  let dataDir: string | undefined;
  let adminUrl: string;
  const databaseName = `parley_migrations_${process.pid}_${Date.now()}`;

  beforeAll(async () => {
    if (process.env.DATABASE_URL) {
      adminUrl = process.env.DATABASE_URL;
    } else {
      dataDir = await mkdtemp(path.join(tmpdir(), "parley-db-test-"));
      server = await startEmbeddedDatabase(dataDir);
      adminUrl = server.url;
    }
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${databaseName}`);
    await admin.end();
  });

  afterAll(async () => {
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists ${databaseName} with (force)`).catch(() => undefined);
    await admin.end();
    await server?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  function urlOf(database: string) {
    const url = new URL(adminUrl);
    url.pathname = `/${database}`;
    return url.toString();
  }

  it("gives organizations that existed before the channels one sandbox channel of each type", async () => {
    const url = urlOf(databaseName);
    // The state of a database migrated before channels existed: only the first migration.
    const firstOnly = await mkdtemp(path.join(tmpdir(), "parley-first-migration-"));
    await cp(migrationsFolder, firstOnly, { recursive: true });
    const journalPath = path.join(firstOnly, "meta", "_journal.json");
    const journal = JSON.parse(await readFile(journalPath, "utf8"));
    journal.entries = journal.entries.slice(0, 1);
    await writeFile(journalPath, JSON.stringify(journal));
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await migrate(drizzle(sql), { migrationsFolder: firstOnly });
      await sql`insert into organizations (id, name) values ('org_01JZZZZZZZZZZZZZZZZZZZZZZZ', 'Before')`;

      await runMigrations(url);
      await runMigrations(url);

      const channels = await sql<{ type: string; environment: string; provider: string; id: string }[]>`
        select type, environment, provider, id from channels where organization_id = 'org_01JZZZZZZZZZZZZZZZZZZZZZZZ' order by type`;
      expect(channels.map((channel) => channel.type)).toEqual([
        "email",
        "instagram",
        "messenger",
        "sms",
        "webchat",
        "whatsapp",
      ]);
      for (const channel of channels) {
        expect(channel.environment).toBe("test");
        expect(channel.provider).toBe("sandbox");
        expect(channel.id).toMatch(/^chn_[0-9A-HJKMNP-TV-Z]{26}$/);
      }
    } finally {
      await sql.end();
      await rm(firstOnly, { recursive: true, force: true });
    }
  });
});
