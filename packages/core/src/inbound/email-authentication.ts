import type { EmailAuthentication } from "@parley/schema";

/** mailauth's resolver: `dns.promises.resolve`'s signature (tests pass a fake one; no network). */
export type DnsResolver = (name: string, rrtype: string) => Promise<unknown>;

export interface EmailAuthenticationOptions {
  /**
   * The authserv-id of a relay in front of Parley (`INBOUND_EMAIL_TRUSTED_AUTHSERV_ID`): its
   * `Authentication-Results` header is taken as the verdict and Parley checks nothing itself.
   */
  trustedAuthservId?: string | undefined;
  resolver?: DnsResolver | undefined;
}

/** What the sending server said in the SMTP session; absent over HTTP (no SPF then). */
export interface SmtpEnvelope {
  ip?: string | undefined;
  helo?: string | undefined;
  mailFrom?: string | undefined;
}

/** Past this many bytes of header section the relay's results are not looked for. */
const MAX_HEADER_BYTES = 256 * 1024;

/**
 * Each DKIM signature costs a DNS query: a mail carrying more than this many (or a header
 * section above `MAX_HEADER_BYTES`) is not checked (unverified, `dkim: "policy"`), so that
 * one message cannot make Parley run hundreds.
 * Real mail carries one to three (the author's domain, an ESP, a mailing list).
 */
export const MAX_DKIM_SIGNATURES = 8;

/** The checks of one message, DNS included, end within this; past it the mail is unverified (`temperror`). */
const AUTHENTICATION_TIMEOUT_MS = 20_000;

/**
 * Who sent an inbound mail, as far as SPF, DKIM and DMARC tell: `verified` when DMARC
 * passes, that is when SPF or DKIM passes for a domain aligned with the `From:` address.
 * Anything else (no DMARC record, a failure, a DNS error) is unverified.
 */
export async function authenticateEmail(
  raw: Buffer,
  envelope: SmtpEnvelope,
  options: EmailAuthenticationOptions,
): Promise<EmailAuthentication> {
  if (options.trustedAuthservId) return relayVerdict(raw, options.trustedAuthservId);
  const lines = headerLines(raw);
  const signatures = lines?.filter((line) => /^dkim-signature\s*:/i.test(line)).length ?? 0;
  if (!lines || signatures > MAX_DKIM_SIGNATURES) {
    return { verified: false, dmarc: "none", spf: "none", dkim: "policy", evaluated_by: "parley" };
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("authentication timed out")), AUTHENTICATION_TIMEOUT_MS);
    });
    // Loaded on the first mail, not at start: mailauth's module graph costs every process
    // (API, worker, admin command) about a quarter of a second to import.
    const { authenticate } = await import("mailauth");
    const checks = authenticate(raw, {
      ...(envelope.ip ? { ip: envelope.ip, helo: envelope.helo ?? envelope.ip, sender: envelope.mailFrom ?? "" } : {}),
      mta: "parley",
      disableArc: true,
      disableBimi: true,
      ...(options.resolver ? { resolver: options.resolver as never } : {}),
    });
    const result = await Promise.race([checks, timeout]);
    const dkim = result.dkim.results.map((entry) => entry.status.result);
    const dmarc = result.dmarc ? result.dmarc.status.result : "none";
    return {
      verified: dmarc === "pass",
      dmarc,
      spf: envelope.ip && result.spf ? result.spf.status.result : "none",
      dkim: dkim.includes("pass") ? "pass" : (dkim[0] ?? "none"),
      evaluated_by: "parley",
    };
  } catch {
    return { verified: false, dmarc: "temperror", spf: "none", dkim: "none", evaluated_by: "parley" };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The verdict of the relay's `Authentication-Results` (RFC 8601): the topmost header whose
 * authserv-id is the trusted one (a relay adds its own above the others, and removes any
 * forged one with its id). Without one the mail is unverified.
 */
function relayVerdict(raw: Buffer, authservId: string): EmailAuthentication {
  const results = authenticationResults(raw).find((header) => header.authservId === authservId.toLowerCase());
  const method = (name: string) => results?.methods.get(name) ?? "none";
  return {
    verified: method("dmarc") === "pass",
    dmarc: method("dmarc"),
    spf: method("spf"),
    dkim: method("dkim"),
    evaluated_by: authservId,
  };
}

/** The header section's fields, unfolded, one a line; null when it runs past `MAX_HEADER_BYTES`. */
function headerLines(raw: Buffer): string[] | null {
  const head = raw.subarray(0, MAX_HEADER_BYTES).toString("latin1");
  const end = head.search(/\r?\n\r?\n/);
  if (end === -1 && raw.length > MAX_HEADER_BYTES) return null;
  return (end === -1 ? head : head.slice(0, end)).replace(/\r?\n[ \t]+/g, " ").split(/\r?\n/);
}

function authenticationResults(raw: Buffer): { authservId: string; methods: Map<string, string> }[] {
  return (headerLines(raw) ?? [])
    .filter((line) => /^authentication-results\s*:/i.test(line))
    .map((line) => {
      // Comments in parentheses carry no result; the first token is the authserv-id.
      const value = line.slice(line.indexOf(":") + 1).replace(/\([^()]*\)/g, " ");
      const [id = "", ...parts] = value.split(";");
      const methods = new Map<string, string>();
      for (const part of parts) {
        const match = part.trim().match(/^([a-z0-9-]+)\s*=\s*([a-z]+)/i);
        // The first result of a method counts (a DKIM header per signature: any pass passes).
        if (match?.[1] && match[2]) {
          const name = match[1].toLowerCase();
          const result = match[2].toLowerCase();
          if (!methods.has(name) || result === "pass") methods.set(name, result);
        }
      }
      return { authservId: id.trim().split(/\s+/)[0]?.toLowerCase() ?? "", methods };
    });
}
