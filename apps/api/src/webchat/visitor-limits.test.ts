import { describe, expect, it } from "vitest";
import { addressKey } from "./visitor-limits.js";

describe("the address a web chat visitor is counted by", () => {
  it("is an IPv4 address itself, also when IPv4-mapped", () => {
    expect(addressKey("203.0.113.7")).toBe("203.0.113.7");
    expect(addressKey("::ffff:203.0.113.7")).toBe("203.0.113.7");
  });

  it("is the /64 of an IPv6 address, however it is spelled", () => {
    const key = "2001:db8:0:1::/64";
    for (const address of ["2001:db8:0:1::1", "2001:0db8:0000:0001:ffff:ffff:ffff:ffff", "2001:DB8:0:1:a::b"]) {
      expect(addressKey(address)).toBe(key);
    }
    expect(addressKey("2001:db8:0:2::1")).not.toBe(key);
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
  });
});
