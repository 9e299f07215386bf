import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import type { Queryable } from "@parley/db";
import { loadInstanceSecret } from "../instance-secrets.js";

/**
 * Encrypts provider secrets at rest (AES-256-GCM). The sealed form names the key it was
 * sealed with (`v1.<key id>.<iv>.<tag>.<ciphertext>`; every value ever sealed has this
 * form), so that during a rotation a value is opened with the key that sealed it, and a
 * value of an unknown key is reported as such instead of yielding garbage.
 */
export interface SecretBox {
  /** The key new values are sealed with (`PARLEY_SECRETS_KEY`). */
  readonly keyId: string;
  /** Every key this box opens: the current one, then the previous one when configured. */
  readonly keyIds: readonly string[];
  seal(value: Record<string, unknown>): string;
  open(sealed: string): Record<string, unknown>;
}

export class SecretKeyMismatchError extends Error {
  override name = "SecretKeyMismatchError";
}

export function secretKeyIdOf(key: Buffer): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 8);
}

/** The key id a sealed value names, without opening it; undefined when it is not a sealed value. */
export function sealedKeyId(sealed: string): string | undefined {
  const [version, keyId] = sealed.split(".", 2);
  return version === "v1" && keyId ? keyId : undefined;
}

/**
 * Seals with `key`; opens what `key` or `previous` sealed (a rotation: `PARLEY_SECRETS_KEY`
 * holds the new key, `PARLEY_SECRETS_KEY_PREVIOUS` the old one until `admin reseal-secrets`
 * has re-sealed everything).
 */
export function createSecretBox(key: Buffer, previous?: Buffer): SecretBox {
  if (key.length !== 32 || (previous && previous.length !== 32)) throw new Error("The secrets key must be 32 bytes");
  const keyId = secretKeyIdOf(key);
  const keys = new Map<string, Buffer>([[keyId, key]]);
  if (previous && !keys.has(secretKeyIdOf(previous))) keys.set(secretKeyIdOf(previous), previous);
  const previousId = [...keys.keys()][1];
  return {
    keyId,
    keyIds: [...keys.keys()],
    seal(value) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const ciphertext = Buffer.concat([cipher.update(JSON.stringify(value), "utf8"), cipher.final()]);
      const parts = [iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString("base64url"));
      return ["v1", keyId, ...parts].join(".");
    },
    open(sealed) {
      const [version, sealedId, iv, tag, ciphertext] = sealed.split(".");
      if (version !== "v1" || !sealedId || !iv || !tag || ciphertext === undefined) {
        throw new Error("Not a sealed secret");
      }
      const sealingKey = keys.get(sealedId);
      if (!sealingKey) {
        throw new SecretKeyMismatchError(
          `Sealed with key ${sealedId}, but PARLEY_SECRETS_KEY is key ${keyId} and PARLEY_SECRETS_KEY_PREVIOUS is ${previousId ? `key ${previousId}` : "not set"}`,
        );
      }
      const decipher = createDecipheriv("aes-256-gcm", sealingKey, Buffer.from(iv, "base64url"));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      const plain = Buffer.concat([decipher.update(Buffer.from(ciphertext, "base64url")), decipher.final()]);
      return JSON.parse(plain.toString("utf8")) as Record<string, unknown>;
    },
  };
}

/** `PARLEY_SECRETS_KEY` (or `_PREVIOUS`): 32 bytes, as 64 hex characters or base64 (base64url too). */
export function parseSecretsKey(text: string, variable = "PARLEY_SECRETS_KEY"): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-f]{64}$/i.test(trimmed) ? Buffer.from(trimmed, "hex") : Buffer.from(trimmed, "base64");
  if (key.length !== 32) throw new Error(`${variable} must be 32 bytes: 64 hex characters or base64`);
  return key;
}

export interface SecretsEnv {
  PARLEY_SECRETS_KEY?: string | undefined;
  PARLEY_SECRETS_KEY_PREVIOUS?: string | undefined;
  NODE_ENV?: string | undefined;
}

/**
 * The key from `PARLEY_SECRETS_KEY` (and the previous one from `PARLEY_SECRETS_KEY_PREVIOUS`
 * during a rotation). Without it, outside production, a development key kept in the
 * database (so `pnpm start`, `pnpm admin` and every worker agree with no set-up);
 * production refuses to start without the variable, since a key stored next to the data it
 * protects protects nothing.
 */
export async function loadSecretBox(db: Queryable, env: SecretsEnv): Promise<SecretBox> {
  const previous = env.PARLEY_SECRETS_KEY_PREVIOUS
    ? parseSecretsKey(env.PARLEY_SECRETS_KEY_PREVIOUS, "PARLEY_SECRETS_KEY_PREVIOUS")
    : undefined;
  if (env.PARLEY_SECRETS_KEY) return createSecretBox(parseSecretsKey(env.PARLEY_SECRETS_KEY), previous);
  if (env.NODE_ENV === "production") throw new Error("PARLEY_SECRETS_KEY is required in production");
  const developmentKey = await loadInstanceSecret(db, "development_secrets_key");
  return createSecretBox(Buffer.from(developmentKey, "base64url"), previous);
}
