import { describe, expect, test } from "bun:test";
import { crossSiteReason, HostCheck, hostOfHeader, isJsonContentType } from "./browser-guard.ts";

describe("browser guard", () => {
  test("a Host header's name drops its port, brackets, case and trailing dot", () => {
    expect(hostOfHeader("Proxy.Internal.:8000")).toBe("proxy.internal");
    expect(hostOfHeader("[::1]:8000")).toBe("::1");
    expect(hostOfHeader("10.0.0.5")).toBe("10.0.0.5");
  });

  test("IP literals, localhost and the configured names pass; another name does not; no Host passes", () => {
    const hosts = new HostCheck(["0.0.0.0", "gpu-node-01", "proxy.svc.cluster.local"]);
    for (const host of ["10.1.2.3:8000", "[fe80::1]:80", "localhost:1", "GPU-NODE-01:8000", "proxy.svc.cluster.local", null, ""])
      expect([host, hosts.allows(host)]).toEqual([host, true]);
    for (const host of ["attacker.example", "gpu-node-01.attacker.example:8000", "localhost.attacker.example"])
      expect([host, hosts.allows(host)]).toEqual([host, false]);
  });

  test("another origin or a cross-site fetch is named; the proxy's own origin, none and same-origin pass", () => {
    const own = "http://127.0.0.1:8000";
    expect(crossSiteReason(new Headers({ origin: "http://evil.example" }), own)).toBe("Origin http://evil.example is not this proxy's");
    expect(crossSiteReason(new Headers({ origin: "null" }), own)).toBeDefined();
    expect(crossSiteReason(new Headers({ "sec-fetch-site": "same-site" }), own)).toBe("Sec-Fetch-Site same-site");
    expect(crossSiteReason(new Headers({ origin: own, "sec-fetch-site": "same-origin" }), own)).toBeUndefined();
    expect(crossSiteReason(new Headers({ "sec-fetch-site": "none" }), own)).toBeUndefined();
    expect(crossSiteReason(new Headers(), own)).toBeUndefined();
  });

  test("without Fetch Metadata (a browser before 2023), a Referer on another origin is a web page's; one on this proxy's origin is not", () => {
    const own = "http://10.0.0.5:8000";
    expect(crossSiteReason(new Headers({ referer: "http://evil.example/page.html" }), own)).toBe(
      "Referer http://evil.example/page.html is not this proxy's (no Fetch Metadata)",
    );
    expect(crossSiteReason(new Headers({ referer: "not a url" }), own)).toBeDefined();
    expect(crossSiteReason(new Headers({ referer: `${own}/dashboard` }), own)).toBeUndefined();
    // With Fetch Metadata the browser's own label decides.
    expect(crossSiteReason(new Headers({ referer: "http://evil.example/", "sec-fetch-site": "none" }), own)).toBeUndefined();
  });

  test("JSON is application/json or application/*+json, with parameters; nothing else", () => {
    for (const type of ["application/json", "Application/JSON; charset=utf-8", "application/merge-patch+json"])
      expect(isJsonContentType(type)).toBe(true);
    for (const type of [null, "text/plain", "text/json", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded"])
      expect(isJsonContentType(type)).toBe(false);
  });
});
