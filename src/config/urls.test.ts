import { describe, expect, test } from "bun:test";
import { discoveredOrigin, etcdEndpoint, normaliseUrl, normaliseUrlList } from "./urls.ts";

describe("normaliseUrl", () => {
  test("host:port gets an http scheme", () => {
    expect(normaliseUrl("localhost:8001")).toBe("http://localhost:8001");
    expect(normaliseUrl(" 10.0.0.5:8001 ")).toBe("http://10.0.0.5:8001");
  });

  test("http(s) URLs keep their scheme and lose the trailing slash", () => {
    expect(normaliseUrl("http://LocalHost:8001/")).toBe("http://localhost:8001");
    expect(normaliseUrl("https://gen.example:9443")).toBe("https://gen.example:9443");
  });

  test("the port is always spelled out, so implied and explicit defaults compare equal", () => {
    expect(normaliseUrl("http://worker")).toBe("http://worker:80");
    expect(normaliseUrl("https://worker:443/")).toBe("https://worker:443");
    expect(normaliseUrl("worker:80")).toBe("http://worker:80");
  });

  test("IPv6 literals work in both spellings", () => {
    expect(normaliseUrl("[::1]:8001")).toBe("http://[::1]:8001");
    expect(normaliseUrl("http://[::1]:8001")).toBe("http://[::1]:8001");
  });

  test("text that is not a worker address is refused", () => {
    for (const bad of ["localhost", "", "http://h:8001/v1", "ftp://h:21", "h:0", "http://u:p@h:1", "h:port", "http://h:1?x=1"]) {
      expect(normaliseUrl(bad)).toBeUndefined();
    }
  });
});

function fail(raw: string): Error {
  return new Error(`bad ${raw}`);
}

describe("normaliseUrlList", () => {
  test("repeated values and comma lists are flattened in order, duplicates dropped", () => {
    const urls = normaliseUrlList(["a:1,b:2", "http://a:1/", "c:3,", " b:2 "], fail);
    expect(urls).toEqual(["http://a:1", "http://b:2", "http://c:3"]);
  });

  test("the first bad item is reported through the caller's error", () => {
    expect(() => normaliseUrlList(["a:1,oops"], fail)).toThrow("bad oops");
  });
});

describe("etcd addresses", () => {
  test("etcd://, http:// and host:port become http endpoints, comma lists kept", () => {
    expect(etcdEndpoint("etcd://Etcd1:2379")).toBe("http://etcd1:2379");
    expect(etcdEndpoint("etcd://a:2379,etcd://b:2379")).toBe("http://a:2379,http://b:2379");
    expect(etcdEndpoint("localhost:2379")).toBe("http://localhost:2379");
    expect(etcdEndpoint("etcd://etcd")).toBe("http://etcd:2379");
    expect(etcdEndpoint("nohost")).toBeUndefined();
    expect(etcdEndpoint("etcd://h:1/path")).toBeUndefined();
    expect(etcdEndpoint("")).toBeUndefined();
  });

  test("a discovered worker's origin is spelled as a static worker's; a URL without a scheme is none", () => {
    for (const url of [
      "http://GPU1:8001",
      "http://gpu1:8001/",
      "https://g",
      "http://[::1]:9",
      "http://h:80",
      "http://h/path",
      "ftp://h:1",
      "http://u:p@h:1",
      "http://h:0",
    ]) {
      expect(discoveredOrigin(url)).toBe(normaliseUrl(url));
    }
    expect(discoveredOrigin("h:1")).toBeUndefined();
  });
});
