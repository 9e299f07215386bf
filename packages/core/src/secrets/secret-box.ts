import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import type { Queryable } from "@parley/db";
import { loadInstanceSecret } from "../instance-secrets.js";

/**
 * Encrypts provider secrets at rest (AES-256-GCM). The sealed form names the key it was
 * sealed with (`v1.<key id>.<iv>.<tag>.<ciphertext>`), so a wrong key is reported as
 * such instead of yielding garbage.
 */
export interface SecretBox {
  readonly keyId: string;
  seal(value: Record<string, unknown>): string;
  open(sealed: string): Record<string, unknown>;
}

export class SecretKeyMismatchError extends Error {
  override name = "SecretKeyMismatchError";
}

function keyIdOf(key: Buffer): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 8);
}

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error("The secrets key must be 32 bytes");
  const keyId = keyIdOf(key);
  return {
    keyId,
    seal(value) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const ciphertext = Buffer.concat([cipher.update(JSON.stringify(value), "utf8"), cipher.final()]);
      const parts = [iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString("base64url"));
      return ["v1", keyId, ...parts].join(".");
    },
    open(sealed) {
      const [version, sealedKeyId, iv, tag, ciphertext] = sealed.split(".");
      if (version !== "v1" || !iv || !tag || ciphertext === undefined) throw new Error("Not a sealed secret");
      if (sealedKeyId !== keyId) {
        throw new SecretKeyMismatchError(`Sealed with key ${sealedKeyId}, but PARLEY_SECRETS_KEY is key ${keyId}`);
      }
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      const plain = Buffer.concat([decipher.update(Buffer.from(ciphertext, "base64url")), decipher.final()]);
      return JSON.parse(plain.toString("utf8")) as Record<string, unknown>;
    },
  };
}

/** `PARLEY_SECRETS_KEY`: 32 bytes, as 64 hex characters or base64. */
export function parseSecretsKey(text: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-f]{64}$/i.test(trimmed) ? Buffer.from(trimmed, "hex") : Buffer.from(trimmed, "base64");
  if (key.length !== 32) throw new Error("PARLEY_SECRETS_KEY must be 32 bytes: 64 hex characters or base64");
  return key;
}

/**
 * The key from `PARLEY_SECRETS_KEY`. Without it, outside production, a development key
 * kept in the database (so `pnpm start`, `pnpm admin` and every worker agree with no
 * set-up); production refuses to start without the variable, since a key stored next to
 * the data it protects protects nothing.
 */
export async function loadSecretBox(
  db: Queryable,
  env: { PARLEY_SECRETS_KEY?: string | undefined; NODE_ENV?: string | undefined },
): Promise<SecretBox> {
  if (env.PARLEY_SECRETS_KEY) return createSecretBox(parseSecretsKey(env.PARLEY_SECRETS_KEY));
  if (env.NODE_ENV === "production") throw new Error("PARLEY_SECRETS_KEY is required in production");
  const developmentKey = await loadInstanceSecret(db, "development_secrets_key");
  return createSecretBox(Buffer.from(developmentKey, "base64url"));
}
