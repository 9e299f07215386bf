import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

/**
 * Addresses a webhook may never reach in production: loopback, private, link-local
 * (cloud metadata at 169.254.169.254 included), carrier-grade NAT, unspecified,
 * multicast and reserved ranges, in IPv4 and IPv6 (IPv4-mapped included).
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
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
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
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return forbidden.check(mapped, "ipv4");
  return forbidden.check(address, "ipv6");
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
  if (blocked) throw new ForbiddenAddressError(`${hostname} resolves to a non-public address (${blocked.address})`);
}
