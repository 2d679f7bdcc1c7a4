import { describe, expect, test } from "bun:test";
import { asProxyError, ProxyError } from "./errors.ts";

describe("ProxyError outcomes", () => {
  test("no worker available is a refusal, not an internal error of the proxy", () => {
    expect(new ProxyError("NO_WORKER", 503, "No context worker is available").outcome).toBe("rejected");
  });

  test("a worker's failure is a worker error and a worker's silence a timeout", () => {
    expect(new ProxyError("WORKER_HTTP_ERROR", 500, "x").outcome).toBe("worker_error");
    expect(new ProxyError("WORKER_TIMEOUT", 504, "x").outcome).toBe("timeout");
  });

  test("anything thrown that is not a ProxyError becomes an opaque internal error keeping its cause", () => {
    const cause = new TypeError("boom");
    const error = asProxyError(cause);
    expect(error.outcome).toBe("internal_error");
    expect(error.status).toBe(500);
    expect(error.message).not.toContain("boom");
    expect(error.cause).toBe(cause);
  });
});
