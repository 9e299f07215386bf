import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

/**
 * Addresses a webhook may never reach in production: loopback, private, link-local
 * (cloud metadata at 169.254.169.254 included), carrier-grade NAT, unspecified,
 * multicast and reserved ranges, in IPv4 and IPv6. IPv6 forms that carry an IPv4
 * address are judged by that IPv4 address (IPv4-mapped `::ffff:0:0/96`, NAT64
 * `64:ff9b::/96`, 6to4 `2002::/16`), or refused whole where the IPv4 address is not
 * a public destination by design (IPv4-compatible `::/96`, IPv4-translated
 * `::ffff:0:0:0/96`, local NAT64 `64:ff9b:1::/48`, Teredo `2001::/32`).
 */
const forbidden = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  forbidden.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  ["::", 96],
  ["::ffff:0:0:0", 96],
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["2001::", 32],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
  ["2001:db8::", 32],
  ["fd00:ec2::", 32],
] as const) {
  forbidden.addSubnet(network, prefix, "ipv6");
}

export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return forbidden.check(address, "ipv4");
  if (family !== 6) return true;
  const groups = ipv6Groups(address);
  if (!groups) return true;
  const embedded = embeddedIpv4(groups);
  if (embedded) return forbidden.check(embedded, "ipv4");
  return forbidden.check(address, "ipv6");
}

/** The IPv4 address an IPv6 address stands for, when it is one of the forms that carry one. */
function embeddedIpv4(groups: number[]): string | undefined {
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = groups;
  const zeroTo = (end: number) => groups.slice(0, end).every((group) => group === 0);
  const ipv4 = (high: number, low: number) => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  // ::ffff:a.b.c.d (IPv4-mapped)
  if (zeroTo(5) && g5 === 0xffff) return ipv4(g6, g7);
  // 64:ff9b::a.b.c.d (NAT64, well-known prefix)
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return ipv4(g6, g7);
  // 2002:aabb:ccdd::/48 (6to4)
  if (g0 === 0x2002) return ipv4(g1 ?? 0, g2 ?? 0);
  return undefined;
}

/** The eight 16-bit groups of an IPv6 address (`::` expanded, a trailing dotted quad included). */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase().replace(/%.*$/, "");
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const parse = (part: string | undefined) => (part ? part.split(":").map((group) => Number.parseInt(group, 16)) : []);
  const head = parse(halves[0]);
  const tail = parse(halves[1]);
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 0) return undefined;
  const groups = [...head, ...new Array<number>(missing).fill(0), ...tail];
  return groups.every((group) => Number.isInteger(group) && group >= 0 && group <= 0xffff) ? groups : undefined;
}

export class ForbiddenAddressError extends Error {
  override name = "ForbiddenAddressError";
}

/** Every address the host resolves to must be public; refuses otherwise. */
export async function assertPublicHost(hostname: string): Promise<void> {
  const host = hostname.replace(/^\[|\]$/g, "");
  const addresses = isIP(host) ? [{ address: host }] : await lookup(host, { all: true, verbatim: true });
  if (addresses.length === 0) throw new ForbiddenAddressError(`${hostname} does not resolve`);
  const blocked = addresses.find(({ address }) => isForbiddenAddress(address));
  if (blocked) {
    // The message reaches the API caller: say that, not what the name resolved to.
    throw new ForbiddenAddressError(
      isIP(host) ? `${hostname} is not a public address` : `${hostname} resolves to a non-public address`,
    );
  }
}
