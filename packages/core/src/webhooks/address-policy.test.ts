import { describe, expect, it } from "vitest";
import { assertPublicHost, ForbiddenAddressError, isForbiddenAddress } from "./address-policy.js";

/** As a URL's hostname gives them: `new URL("http://[::127.0.0.1]/").hostname` is `[::7f00:1]`. */
function normalized(host: string): string {
  return new URL(`http://${host}/`).hostname.replace(/^\[|\]$/g, "");
}

describe("the webhook address policy", () => {
  it.each([
    ["IPv4-compatible loopback", "[::127.0.0.1]"],
    ["IPv4-compatible private", "[::10.0.0.1]"],
    ["IPv4-mapped loopback", "[::ffff:127.0.0.1]"],
    ["IPv4-mapped metadata", "[::ffff:169.254.169.254]"],
    ["IPv4-translated loopback (::ffff:0:0/96)", "[::ffff:0:127.0.0.1]"],
    ["NAT64 well-known prefix, metadata", "[64:ff9b::a9fe:a9fe]"],
    ["NAT64 well-known prefix, loopback", "[64:ff9b::7f00:1]"],
    ["NAT64 well-known prefix, private dotted", "[64:ff9b::192.168.1.1]"],
    ["NAT64 local-use prefix (64:ff9b:1::/48)", "[64:ff9b:1::8.8.8.8]"],
    ["6to4 of loopback", "[2002:7f00:1::]"],
    ["6to4 of metadata", "[2002:a9fe:a9fe::1]"],
    ["discard-only (100::/64)", "[100::1]"],
    ["site-local (fec0::/10)", "[fec0::1]"],
    ["Teredo (2001::/32)", "[2001:0:4136:e378:8000:63bf:3fff:fdd2]"],
    ["unique local", "[fd00::1]"],
    ["link-local", "[fe80::1]"],
    ["loopback", "[::1]"],
    ["unspecified", "[::]"],
  ])("refuses %s %s, however it is written", (_, host) => {
    const bare = host.replace(/^\[|\]$/g, "");
    expect(isForbiddenAddress(bare)).toBe(true);
    expect(isForbiddenAddress(normalized(host))).toBe(true);
    expect(isForbiddenAddress(bare.toUpperCase())).toBe(true);
  });

  it.each([
    ["a public IPv4 address", "93.184.215.14"],
    ["a public IPv6 address", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
    ["a public IPv4 address through NAT64", "64:ff9b::5db8:d70e"],
    ["a public IPv4 address through 6to4", "2002:5db8:d70e::1"],
    ["a public IPv4-mapped address", "::ffff:93.184.215.14"],
  ])("allows %s", (_, address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });

  it("refuses what is not an address at all", () => {
    expect(isForbiddenAddress("not-an-ip")).toBe(true);
    expect(isForbiddenAddress("")).toBe(true);
  });

  it("does not name what a host name resolved to", async () => {
    const error = await assertPublicHost("localhost").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ForbiddenAddressError);
    const message = (error as Error).message;
    expect(message).toBe("localhost resolves to a non-public address");
    expect(message).not.toMatch(/127\.0\.0\.1|::1/);
  });
});
