import { randomUUID } from "node:crypto";
import type { Environment } from "@parley/schema";
import type { Logger } from "pino";
import postgres from "postgres";

/**
 * The channel on which a revocation is announced, with the key's id as payload: sent by
 * the revoking statement itself, so it leaves exactly when the revocation commits.
 */
export const API_KEY_REVOKED_CHANNEL = "parley_api_key_revoked";

/** What a request needs of its key: who calls, and what it may do. */
export interface KnownKey {
  id: string;
  organizationId: string;
  environment: Environment;
  scopes: string[];
}

export interface ApiKeyCacheOptions {
  /** `API_KEY_CACHE_TTL_MS`: the longest a key is taken from memory before it is read again. */
  ttlMs: number;
  /** Keys held at most; the oldest goes first. */
  maxEntries?: number;
  now?: () => number;
}

/**
 * The active keys this process has seen, by the hash of the key, so an authenticated
 * request reads nothing: a revocation reaches every process through LISTEN/NOTIFY
 * (`listenForRevocations`), within the notification's delay. Only while that listening
 * connection is up: the cache starts empty, serves nothing before the LISTEN holds, and is
 * emptied whenever the connection drops (a revocation may be missed meanwhile), so a
 * missed notification never leaves a revoked key usable; each entry also expires after
 * `ttlMs`, the bound for a connection that died without a word. Unknown and revoked keys
 * are never held: each such request reads the database, as before.
 */
export class ApiKeyCache {
  private readonly byHash = new Map<string, { key: KnownKey; expiresAt: number }>();
  private readonly hashById = new Map<string, string>();
  private trusted = false;
  /** Counts revocations and drops: a key read before one of them is not held (see `epoch`). */
  private changes = 0;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(private readonly options: ApiKeyCacheOptions) {
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  get(hash: string): KnownKey | undefined {
    if (!this.trusted) return undefined;
    const entry = this.byHash.get(hash);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.delete(hash);
      return undefined;
    }
    return entry.key;
  }

  /**
   * To take before reading a key from the database, and give to `set`: a key read while
   * a revocation arrived may be that revoked key, read just before its revocation
   * committed, and is not held.
   */
  epoch(): number {
    return this.changes;
  }

  set(hash: string, key: KnownKey, epoch: number): void {
    if (!this.trusted || this.options.ttlMs <= 0 || epoch !== this.changes) return;
    if (this.byHash.size >= this.maxEntries) {
      const oldest = this.byHash.keys().next();
      if (!oldest.done) this.delete(oldest.value);
    }
    this.byHash.set(hash, { key, expiresAt: this.now() + this.options.ttlMs });
    this.hashById.set(key.id, hash);
  }

  /** A revocation: the key is read from the database again, and found revoked. */
  revoke(keyId: string): void {
    this.changes++;
    const hash = this.hashById.get(keyId);
    if (hash !== undefined) this.delete(hash);
  }

  /** Whether revocations are heard: the cache serves only then, and starts empty each time. */
  setListening(listening: boolean): void {
    this.trusted = listening;
    this.changes++;
    this.byHash.clear();
    this.hashById.clear();
  }

  get listening(): boolean {
    return this.trusted;
  }

  get size(): number {
    return this.byHash.size;
  }

  private delete(hash: string) {
    const entry = this.byHash.get(hash);
    this.byHash.delete(hash);
    if (entry) this.hashById.delete(entry.key.id);
  }
}

export interface RevocationListener {
  close(): Promise<void>;
}

/** A listener's own check that its notifications arrive: `ping:` and a nonce of its own. */
const PING_PREFIX = "ping:";

/**
 * LISTENs on API_KEY_REVOKED_CHANNEL on a connection of its own and drops each revoked key
 * from `cache`. The cache serves only while notifications are known to arrive: every
 * `pingMs` the listener notifies itself on the channel, and trusts the cache from the
 * first ping it hears; a ping not heard by the next one, or the connection closing,
 * empties the cache and bypasses it (a connection that died silently, or a pooler in
 * transaction mode that does not pass notifications on), and the LISTEN is made again
 * (every `retryMs` until it holds).
 */
export function listenForRevocations(
  url: string,
  cache: ApiKeyCache,
  logger: Logger,
  timing: { retryMs?: number; pingMs?: number } = {},
): RevocationListener {
  const retryMs = timing.retryMs ?? 1_000;
  const pingMs = timing.pingMs ?? 1_000;
  let closing = false;
  let retry: NodeJS.Timeout | undefined;
  let ping: NodeJS.Timeout | undefined;
  let pingSent: string | undefined;
  let pingHeard = false;
  // `onnotify` is the hook postgres.js's own `listen()` uses; `listen()` is not used here
  // because its connection re-listens by itself and tells nobody when it dropped.
  const options = {
    max: 1,
    idle_timeout: 0,
    max_lifetime: null,
    fetch_types: false,
    onnotice: () => {},
    connection: { application_name: "parley-key-revocations" },
    onnotify: (channel: string, payload: string) => {
      if (channel !== API_KEY_REVOKED_CHANNEL) return;
      if (!payload.startsWith(PING_PREFIX)) {
        cache.revoke(payload);
      } else if (payload === pingSent && !pingHeard) {
        pingHeard = true;
        if (!cache.listening) cache.setListening(true);
      }
    },
    onclose: () => {
      stopPinging();
      if (!closing) schedule(0);
    },
  };
  const sql = postgres(url, options);
  const sendPing = () => {
    if (pingSent !== undefined && !pingHeard && cache.listening) {
      logger.warn("API key revocations are not heard; keys are read on every request until they are");
      cache.setListening(false);
    }
    pingSent = `${PING_PREFIX}${randomUUID()}`;
    pingHeard = false;
    sql`select pg_notify(${API_KEY_REVOKED_CHANNEL}, ${pingSent})`.catch(() => {});
  };
  function stopPinging() {
    if (ping) clearInterval(ping);
    ping = undefined;
    pingSent = undefined;
    cache.setListening(false);
  }
  const listen = async () => {
    retry = undefined;
    if (closing) return;
    try {
      await sql.unsafe(`listen ${API_KEY_REVOKED_CHANNEL}`);
      sendPing();
      ping = setInterval(sendPing, pingMs);
      ping.unref();
    } catch (error) {
      logger.warn({ err: error }, "could not listen for API key revocations; keys are read on every request");
      schedule(retryMs);
    }
  };
  function schedule(delayMs: number) {
    if (closing || retry) return;
    retry = setTimeout(() => void listen(), delayMs);
    retry.unref();
  }
  void listen();
  return {
    close: async () => {
      closing = true;
      if (retry) clearTimeout(retry);
      stopPinging();
      await sql.end({ timeout: 2 });
    },
  };
}
