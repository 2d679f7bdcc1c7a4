import { describe, expect, test } from "bun:test";
import { ensureHttpCapacity } from "./http-capacity.ts";

describe("ensureHttpCapacity", () => {
  test("keeps an operator's own values and does not re-execute", () => {
    const calls: string[][] = [];
    const state = ensureHttpCapacity({ BUN_CONFIG_MAX_HTTP_REQUESTS: "1000", MIMALLOC_PURGE_DELAY: "100" }, (_path, args) => {
      calls.push(args);
      throw new Error("must not run");
    });
    expect(state).toEqual({ ready: true });
    expect(calls).toHaveLength(0);
  });

  test("re-executes with the variable set to the runtime's largest value when it is missing", () => {
    const seen: Record<string, string | undefined>[] = [];
    ensureHttpCapacity({ PATH: "/bin" }, (_path, _args, env) => {
      seen.push(env);
      throw new Error("stop here");
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.["BUN_CONFIG_MAX_HTTP_REQUESTS"]).toBe("65535");
    // The allocator's purge delay is the runtime's own: not set.
    expect(seen[0]?.["MIMALLOC_PURGE_DELAY"]).toBeUndefined();
    expect(seen[0]?.["PATH"]).toBe("/bin");
  });

  test("an operator's cap alone needs no re-execution", () => {
    const state = ensureHttpCapacity({ BUN_CONFIG_MAX_HTTP_REQUESTS: "1000" }, () => {
      throw new Error("must not run");
    });
    expect(state).toEqual({ ready: true });
  });

  test("carries on at the lower cap, naming the cause, when the re-execution fails", () => {
    const state = ensureHttpCapacity({}, () => {
      throw new Error("ENOEXEC: exec format error");
    });
    expect(state.ready).toBe(false);
    expect(state.ready ? "" : state.reason).toContain("ENOEXEC");
  });
});
