import { monotonicFactory } from "ulid";

const nextUlid = monotonicFactory();

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
} as const;

export type IdKind = keyof typeof idPrefixes;

/** `<prefix>_` + a ULID: 26 upper-case Crockford base-32 characters, time-ordered. */
export function newId(kind: IdKind): string {
  return `${idPrefixes[kind]}_${nextUlid()}`;
}
