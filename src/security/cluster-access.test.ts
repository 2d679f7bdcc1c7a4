import { describe, expect, test } from "bun:test";
import { addressBytes } from "./networks.ts";
import { ClusterAccess } from "./cluster-access.ts";

describe("cluster storage access", () => {
  test("addresses parse as IPv4, IPv6 and IPv4-mapped IPv6", () => {
    expect([...(addressBytes("10.1.2.3") ?? [])]).toEqual([10, 1, 2, 3]);
    expect([...(addressBytes("::ffff:10.1.2.3") ?? [])]).toEqual([10, 1, 2, 3]);
    expect([...(addressBytes("::ffff:a01:203") ?? [])]).toEqual([10, 1, 2, 3]);
    expect(addressBytes("::1")?.length).toBe(16);
    expect(addressBytes("fd00::1:2")?.[0]).toBe(0xfd);
    expect(addressBytes("[::1]")?.[15]).toBe(1);
    expect(addressBytes("example.com")).toBeUndefined();
    expect(addressBytes("1.2.3.256")).toBeUndefined();
    expect(addressBytes("1::2::3")).toBeUndefined();
  });

  test("without a key only loopback and the named networks may use it", () => {
    const access = new ClusterAccess({ allowFrom: ["10.0.0.0/8", "fd00::/8"], key: undefined });
    for (const ok of ["127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1", "10.200.1.1", "::ffff:10.0.0.7", "fd12::5"]) {
      expect(access.check(ok, null)).toEqual({ allowed: true });
    }
    for (const refused of ["192.168.1.1", "11.0.0.1", "fe80::1", undefined]) {
      expect(access.check(refused, null).allowed).toBe(false);
    }
    expect(new ClusterAccess({ allowFrom: [], key: undefined }).check("10.0.0.1", null).allowed).toBe(false);
  });

  test("with a key the Bearer token is required, from any address unless networks are named", () => {
    const access = new ClusterAccess({ allowFrom: [], key: "s3cret" });
    expect(access.check("192.168.1.1", "Bearer s3cret")).toEqual({ allowed: true });
    expect(access.check("127.0.0.1", null)).toEqual({ allowed: false, reason: "no Bearer token" });
    expect(access.check("127.0.0.1", "Bearer wrong")).toEqual({ allowed: false, reason: "Invalid API key" });
    const bounded = new ClusterAccess({ allowFrom: ["10.0.0.0/8"], key: "s3cret" });
    expect(bounded.check("192.168.1.1", "Bearer s3cret").allowed).toBe(false);
    expect(bounded.check("10.1.1.1", "Bearer s3cret").allowed).toBe(true);
  });

  test("a refused address is logged at most once a minute, whatever the rate of its requests", () => {
    const access = new ClusterAccess({ allowFrom: [], key: undefined });
    expect(access.shouldLogRefusal("192.0.2.9", 0)).toBe(true);
    expect(access.shouldLogRefusal("192.0.2.9", 59_999)).toBe(false);
    expect(access.shouldLogRefusal("192.0.2.10", 1)).toBe(true);
    expect(access.shouldLogRefusal("192.0.2.9", 60_000)).toBe(true);
  });

  test("the rule in force is described for the start-up log", () => {
    expect(new ClusterAccess({ allowFrom: ["10.0.0.0/8"], key: undefined }).describe()).toBe(
      "registrations accepted from loopback, 10.0.0.0/8 only (no cluster key)",
    );
    expect(new ClusterAccess({ allowFrom: [], key: "k" }).describe()).toBe(
      "registrations need the cluster key as a Bearer token, from any address",
    );
  });
});
