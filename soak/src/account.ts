import type { MetaSimulator, SmtpSink } from "@parley/channels/testing";
import type postgres from "postgres";
import type { WebhookReceiver } from "./receiver.js";
import type { Crash } from "./recorder.js";
import type { InboundRecord, SendRecord } from "./traffic.js";

/** The final state each route's messages must reach (the sandbox delivers at zero delay). */
const FINAL: Record<SendRecord["route"], string[]> = {
  sandbox: ["delivered", "read"],
  whatsapp: ["sent", "delivered", "read"],
  email: ["sent"],
};

/** Failures are listed with their ids, at most this many of each kind. */
const LISTED = 50;

export interface Account {
  /** True when nothing was lost, stored twice or answered inconsistently. */
  ok: boolean;
  failures: string[];
  sends: {
    answered: number;
    unanswered: number;
    /** Answered 201, yet no message (or another status than final) in the database. */
    lost: string[];
    /** Answered 201 and stored more than once. */
    stored_twice: string[];
    not_final: string[];
    failed: string[];
    /** Keys that answered two different messages. */
    idempotency_conflicts: string[];
    /** Keys never answered 201 whose message was stored anyway (the client gave up; counted, not lost). */
    unanswered_but_stored: number;
  };
  providers: {
    meta: ProviderCount;
    smtp: ProviderCount;
    duplicates_per_crash: { at_s: number; kind: string; duplicates: number }[];
    duplicates_outside_crashes: number;
  };
  events: {
    recorded: number;
    received: number;
    missing: string[];
    duplicate_deliveries: number;
    bad_signatures: { eventId: string; reason: string }[];
  };
  inbound: {
    meta: InboundCount;
    smtp: InboundCount;
  };
}

interface ProviderCount {
  expected: number;
  received_once: number;
  duplicated: number;
  extra_copies: number;
  missing: string[];
}

interface InboundCount {
  posted: number;
  acknowledged: number;
  stored_once: number;
  missing: string[];
  stored_twice: string[];
}

export interface AccountInputs {
  sql: postgres.Sql;
  organizationId: string;
  endpointsCreatedAt: Date;
  sends: Map<string, SendRecord>;
  inbound: InboundRecord[];
  /** What the Graph API simulator received. */
  meta: Pick<MetaSimulator, "requests">;
  /** What the SMTP relay received. */
  sink: Pick<SmtpSink, "messages">;
  receiver: Pick<WebhookReceiver, "arrivals" | "badSignatures">;
  crashes: Crash[];
}

const KEY_PATTERN = /soak-\d+-[0-9a-f]{12}/;

/** The exact account of the run: what the clients were told, against what PostgreSQL, the providers and the receiver hold. */
export async function takeAccount(inputs: AccountInputs): Promise<Account> {
  const stored = await storedSends(inputs.sql, inputs.organizationId);
  const sends = accountSends(inputs.sends, stored);
  const providers = accountProviders(inputs, stored);
  const events = await accountEvents(inputs);
  const inbound = await accountInbound(inputs);
  const failures = [
    ...listed("sends answered 201 but not stored", sends.lost),
    ...listed("sends stored more than once", sends.stored_twice),
    ...listed("sends that never reached their final state", sends.not_final),
    ...listed("idempotency keys that answered two different messages", sends.idempotency_conflicts),
    ...listed("WhatsApp sends Meta never received", providers.meta.missing),
    ...listed("email sends the relay never received", providers.smtp.missing),
    ...listed("events recorded but never delivered to the receiver", events.missing),
    ...listed(
      "webhook deliveries whose signature did not verify",
      events.bad_signatures.map((bad) => `${bad.eventId} (${bad.reason})`),
    ),
    ...listed("inbound WhatsApp messages accepted but not stored", inbound.meta.missing),
    ...listed("inbound WhatsApp messages stored twice", inbound.meta.stored_twice),
    ...listed("inbound emails accepted but not stored", inbound.smtp.missing),
    ...listed("inbound emails stored twice", inbound.smtp.stored_twice),
  ];
  return { ok: failures.length === 0, failures, sends, providers, events, inbound };
}

function listed(what: string, ids: string[]): string[] {
  if (ids.length === 0) return [];
  const shown = ids.slice(0, LISTED).join(", ");
  return [`${ids.length} ${what}: ${shown}${ids.length > LISTED ? ", ..." : ""}`];
}

interface StoredSend {
  id: string;
  status: string | null;
  error_code: string | null;
}

/** The soak's outbound messages in PostgreSQL, by the key their text carries. */
async function storedSends(sql: postgres.Sql, organizationId: string): Promise<Map<string, StoredSend[]>> {
  const rows = await sql<(StoredSend & { text: string })[]>`
    select id, status, error_code, text from messages
    where organization_id = ${organizationId} and direction = 'outbound' and text like 'Soak soak-%'`;
  const byKey = new Map<string, StoredSend[]>();
  for (const row of rows) {
    const key = KEY_PATTERN.exec(row.text)?.[0];
    if (!key) continue;
    byKey.set(key, [...(byKey.get(key) ?? []), row]);
  }
  return byKey;
}

function accountSends(sends: Map<string, SendRecord>, stored: Map<string, StoredSend[]>): Account["sends"] {
  const result: Account["sends"] = {
    answered: 0,
    unanswered: 0,
    lost: [],
    stored_twice: [],
    not_final: [],
    failed: [],
    idempotency_conflicts: [],
    unanswered_but_stored: 0,
  };
  for (const send of sends.values()) {
    const rows = stored.get(send.key) ?? [];
    if (rows.length > 1) result.stored_twice.push(`${send.key} (${rows.map((row) => row.id).join(", ")})`);
    if (send.answeredIds.size === 0) {
      result.unanswered++;
      if (rows.length > 0) result.unanswered_but_stored++;
      continue;
    }
    result.answered++;
    if (send.answeredIds.size > 1)
      result.idempotency_conflicts.push(`${send.key} (${[...send.answeredIds].join(", ")})`);
    const [answeredId] = send.answeredIds;
    const row = rows.find((candidate) => candidate.id === answeredId);
    if (!row) {
      result.lost.push(`${answeredId} (${send.key})`);
      continue;
    }
    if (row.status === "failed") result.failed.push(`${row.id} (${row.error_code})`);
    else if (!FINAL[send.route].includes(row.status ?? "")) result.not_final.push(`${row.id} (${row.status})`);
  }
  return result;
}

function accountProviders(inputs: AccountInputs, stored: Map<string, StoredSend[]>): Account["providers"] {
  const metaCopies = countByKey(
    inputs.meta.requests
      .filter((request) => request.method === "POST" && /\/messages$/.test(new URL(request.path, "http://x").pathname))
      .map((request) => JSON.stringify(request.body)),
  );
  const smtpCopies = countByKey(inputs.sink.messages.map((message) => message.raw.toString("utf8")));
  const meta = providerCount(inputs.sends, stored, "whatsapp", metaCopies);
  const smtp = providerCount(inputs.sends, stored, "email", smtpCopies);

  // A duplicate is put down to the first crash after its send was made: the one it was in flight at.
  const perCrash = inputs.crashes.map((crash) => ({
    at_s: Math.round(crash.at / 1000),
    kind: crash.kind,
    duplicates: 0,
  }));
  let outside = 0;
  for (const [key, copies] of [...metaCopies, ...smtpCopies]) {
    if (copies < 2) continue;
    const send = inputs.sends.get(key);
    const index = send ? inputs.crashes.findIndex((crash) => crash.at >= send.at) : -1;
    const crash = perCrash[index];
    if (crash && send && (inputs.crashes[index]?.at ?? 0) - send.at < 60_000) crash.duplicates += copies - 1;
    else outside += copies - 1;
  }
  return { meta, smtp, duplicates_per_crash: perCrash, duplicates_outside_crashes: outside };
}

function countByKey(texts: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const text of texts) {
    const key = KEY_PATTERN.exec(text)?.[0];
    if (key) counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

function providerCount(
  sends: Map<string, SendRecord>,
  stored: Map<string, StoredSend[]>,
  route: SendRecord["route"],
  copies: Map<string, number>,
): ProviderCount {
  const count: ProviderCount = { expected: 0, received_once: 0, duplicated: 0, extra_copies: 0, missing: [] };
  for (const send of sends.values()) {
    if (send.route !== route) continue;
    const rows = stored.get(send.key) ?? [];
    // What left for the provider: a stored message that did not fail before reaching it.
    const sent = rows.some((row) => row.status !== null && row.status !== "queued" && row.status !== "failed");
    const received = copies.get(send.key) ?? 0;
    if (!sent) continue;
    count.expected++;
    if (received === 0) count.missing.push(`${rows[0]?.id} (${send.key})`);
    else if (received === 1) count.received_once++;
    else {
      count.duplicated++;
      count.extra_copies += received - 1;
    }
  }
  return count;
}

async function accountEvents(inputs: AccountInputs): Promise<Account["events"]> {
  const rows = await inputs.sql<{ id: string }[]>`
    select id from events
    where organization_id = ${inputs.organizationId} and created_at >= ${inputs.endpointsCreatedAt}`;
  const missing = rows.filter((row) => !inputs.receiver.arrivals.has(row.id)).map((row) => row.id);
  let duplicates = 0;
  for (const count of inputs.receiver.arrivals.values()) duplicates += count - 1;
  return {
    recorded: rows.length,
    received: inputs.receiver.arrivals.size,
    missing,
    duplicate_deliveries: duplicates,
    bad_signatures: inputs.receiver.badSignatures,
  };
}

async function accountInbound(inputs: AccountInputs): Promise<Account["inbound"]> {
  const rows = await inputs.sql<{ provider_message_id: string }[]>`
    select provider_message_id from messages
    where organization_id = ${inputs.organizationId} and direction = 'inbound' and provider_message_id is not null`;
  const storedCount = new Map<string, number>();
  for (const row of rows) {
    const id = row.provider_message_id.replace(/^<|>$/g, "");
    storedCount.set(id, (storedCount.get(id) ?? 0) + 1);
  }
  const count = (via: InboundRecord["via"]): InboundCount => {
    const result: InboundCount = { posted: 0, acknowledged: 0, stored_once: 0, missing: [], stored_twice: [] };
    for (const record of inputs.inbound) {
      if (record.via !== via) continue;
      result.posted++;
      const copies = storedCount.get(record.id) ?? 0;
      if (copies > 1) result.stored_twice.push(record.id);
      if (!record.acknowledged) continue;
      result.acknowledged++;
      if (copies === 0) result.missing.push(record.id);
      if (copies === 1) result.stored_once++;
    }
    return result;
  };
  return { meta: count("meta"), smtp: count("smtp") };
}
