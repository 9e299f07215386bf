import { randomBytes } from "node:crypto";
import { monotonicFactory } from "ulid";

// ulid draws each of its 16 random characters with a separate crypto.randomBytes call
// by default; a pool of random bytes refilled 4 KiB at a time gives the same randomness
// at a fraction of the cost. Each byte / 256 maps evenly onto ulid's 32 characters.
const RANDOM_POOL_BYTES = 4096;
let randomPool = randomBytes(RANDOM_POOL_BYTES);
let randomOffset = 0;

function pooledRandom(): number {
  if (randomOffset === randomPool.length) {
    randomPool = randomBytes(RANDOM_POOL_BYTES);
    randomOffset = 0;
  }
  return (randomPool[randomOffset++] as number) / 256;
}

const nextUlid = monotonicFactory(pooledRandom);

/** A bare ULID (26 characters, time-ordered), for ids without a resource prefix. */
export function ulid(): string {
  return nextUlid();
}

export const idPrefixes = {
  organization: "org",
  apiKey: "key",
  user: "usr",
  contact: "cnt",
  tag: "tag",
  customField: "cf",
  event: "evt",
  team: "team",
  conversation: "conv",
  message: "msg",
  attachment: "att",
  channel: "chn",
  webhook: "wh",
  webhookDelivery: "whd",
  note: "note",
  webchatSession: "wcs",
  smsOptOut: "opt",
} as const;

export type IdKind = keyof typeof idPrefixes;

/** `<prefix>_` + a ULID: 26 upper-case Crockford base-32 characters, time-ordered. */
export function newId(kind: IdKind): string {
  return `${idPrefixes[kind]}_${nextUlid()}`;
}
