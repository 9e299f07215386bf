import type { SecretBox } from "@parley/core";
import type { channels } from "@parley/db";
import type { Logger } from "pino";

/** How long an opened secret is kept: a bound on memory held, not on staleness (see below). */
const TTL_MS = 5 * 60_000;
const MAX_ENTRIES = 10_000;

export interface OpenedSecrets {
  open(sealed: string): Record<string, unknown>;
}

/**
 * Channel secrets once opened, by their sealed text: a webhook reads its channels' rows
 * from the database on every request, so a changed or removed secret is seen at once (the
 * sealed text changes, or the row is gone); only the AES-GCM opening is saved. An entry
 * lives at most five minutes, and at most 10,000 are held (the oldest go first).
 */
export function createOpenedSecrets(box: SecretBox): OpenedSecrets {
  const entries = new Map<string, { value: Record<string, unknown>; expiresAt: number }>();
  return {
    open(sealed) {
      const now = Date.now();
      const hit = entries.get(sealed);
      if (hit && hit.expiresAt > now) return hit.value;
      const value = box.open(sealed);
      entries.delete(sealed);
      if (entries.size >= MAX_ENTRIES) {
        const oldest = entries.keys().next();
        if (!oldest.done) entries.delete(oldest.value);
      }
      entries.set(sealed, { value, expiresAt: now + TTL_MS });
      return value;
    },
  };
}

type ChannelRow = typeof channels.$inferSelect;

/** A channel with its settings, the sealed ones opened. */
export interface OpenedChannel {
  row: ChannelRow;
  settings: Record<string, unknown>;
}

/**
 * Channels with their secrets opened (through the cache), for a webhook that checks a
 * signature with them. A channel whose secrets this key cannot open (sealed under another
 * key) is left out and logged, so it cannot stop the others' webhooks.
 */
export function openChannels(secrets: OpenedSecrets, rows: readonly ChannelRow[], logger: Logger): OpenedChannel[] {
  return rows.flatMap((row) => {
    try {
      const opened = row.secretSettings ? secrets.open(row.secretSettings) : {};
      return [{ row, settings: { ...row.settings, ...opened } }];
    } catch (error) {
      logger.error({ channelId: row.id, reason: (error as Error).message }, "channel secrets cannot be opened");
      return [];
    }
  });
}
