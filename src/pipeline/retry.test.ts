import { describe, expect, test } from "bun:test";
import { ProxyError } from "../errors.ts";
import { contextLegRetryable, generationLegRetryable, nextAttempt, provesKvPulled, type AttemptState } from "./retry.ts";

const lostUnread = new ProxyError("WORKER_UNREACHABLE", 502, "reset", { unread: true });
const starting = new ProxyError("WORKER_HTTP_ERROR", 503, "starting", { starting: true });
const refused = new ProxyError("WORKER_UNREACHABLE", 502, "refused", { neverSent: true });
const serverError = new ProxyError("WORKER_HTTP_ERROR", 500, "boom");
const timeout = new ProxyError("WORKER_TIMEOUT", 504, "slow");
const badRequest = new ProxyError("WORKER_HTTP_ERROR", 400, "Extra inputs are not permitted");

/** A context leg's first attempt, not stopped, with retries left. */
const first: AttemptState = {
  role: "context",
  attempt: 0,
  freeRetries: 0,
  maxRetries: 2,
  aborted: false,
  pinned: false,
  wholeAnswer: true,
  resend: false,
  rejectedField: undefined,
  retryable: contextLegRetryable,
  retryOpensStream: false,
};

describe("nextAttempt: what follows a failed attempt", () => {
  test("a request a reused connection lost unread is resent, even with no retry left", () => {
    expect(nextAttempt(lostUnread, { ...first, attempt: 2 })).toEqual({ kind: "resend" });
  });

  test("a worker that is starting is left for another, but a pinned leg fails so its request restarts", () => {
    expect(nextAttempt(starting, first)).toEqual({ kind: "elsewhere", gone: false });
    expect(nextAttempt(starting, { ...first, pinned: true })).toEqual({ kind: "fail", saysNothing: false, starting: true });
  });

  test("a rejected optional field is dropped and the same worker asked again", () => {
    const state = { ...first, rejectedField: "ctx_usage" as const };
    expect(nextAttempt(badRequest, state)).toEqual({ kind: "without field", field: "ctx_usage" });
  });

  test("a stopped leg fails at once and says nothing of its worker, whatever the error", () => {
    for (const error of [lostUnread, starting, serverError, badRequest]) {
      const state = { ...first, aborted: true, rejectedField: "ctx_usage" as const };
      expect(nextAttempt(error, state)).toEqual({ kind: "fail", saysNothing: true, starting: false });
    }
  });

  test("a retryable failure is retried within --max-retries, free retries not counted", () => {
    expect(nextAttempt(serverError, first)).toEqual({ kind: "retry", saysNothing: false });
    expect(nextAttempt(serverError, { ...first, attempt: 2 })).toEqual({ kind: "fail", saysNothing: false, starting: false });
    expect(nextAttempt(serverError, { ...first, attempt: 2, freeRetries: 1 })).toEqual({ kind: "retry", saysNothing: false });
  });

  test("a generation leg is retried only when its request never reached the worker", () => {
    const generation = { ...first, role: "generation" as const, retryable: generationLegRetryable };
    expect(nextAttempt(refused, generation)).toEqual({ kind: "elsewhere", gone: true });
    expect(nextAttempt(serverError, generation)).toEqual({ kind: "fail", saysNothing: false, starting: false });
  });

  test("a refused connection, or a fresh connection reset before any answer, leaves its worker at once for another, even with no retry left", () => {
    const reset = new ProxyError("WORKER_UNREACHABLE", 502, "reset");
    expect(nextAttempt(refused, { ...first, attempt: 2 })).toEqual({ kind: "elsewhere", gone: true });
    expect(nextAttempt(reset, { ...first, resend: true })).toEqual({ kind: "elsewhere", gone: true });
    // Reset on a connection that was not fresh: an ordinary retry; a pinned leg stays on its worker.
    expect(nextAttempt(reset, first)).toEqual({ kind: "retry", saysNothing: false });
    expect(nextAttempt(refused, { ...first, pinned: true })).toEqual({ kind: "retry", saysNothing: false });
    // A generation resend refused: its first copy may have been read, so the ordinary rules decide.
    const generation = { ...first, role: "generation" as const, retryable: generationLegRetryable, maxRetries: 0 };
    expect(nextAttempt(refused, { ...generation, resend: true })).toEqual({ kind: "fail", saysNothing: false, starting: false });
  });

  test("a whole generation answer cut by its timeout, and a resend's 5xx on a generation leg, count against no worker", () => {
    const generation = { ...first, role: "generation" as const, retryable: generationLegRetryable };
    expect(nextAttempt(timeout, generation)).toEqual({ kind: "fail", saysNothing: true, starting: false });
    expect(nextAttempt(timeout, { ...generation, wholeAnswer: false })).toEqual({ kind: "fail", saysNothing: false, starting: false });
    expect(nextAttempt(serverError, { ...generation, resend: true })).toEqual({ kind: "fail", saysNothing: true, starting: false });
    expect(nextAttempt(serverError, { ...first, resend: true })).toEqual({ kind: "retry", saysNothing: false });
  });
});

describe("provesKvPulled", () => {
  test("only a worker's KV transfer error proves the generation request pulled its hand-off", () => {
    const transfer = new ProxyError(
      "WORKER_HTTP_ERROR",
      500,
      "KV cache transfer failed for ctx_request_id 7: the context worker holds no KV for it (404)",
    );
    expect(provesKvPulled(transfer)).toBe(true);
    expect(provesKvPulled(new ProxyError("WORKER_HTTP_ERROR", 500, "Emulated rejection with status 500"))).toBe(false);
    for (const error of [serverError, timeout, refused, lostUnread, starting]) expect(provesKvPulled(error)).toBe(false);
    // A client's own words carry no weight: only a worker's answer proves anything.
    expect(provesKvPulled(new ProxyError("BAD_REQUEST", 400, "KV transfer"))).toBe(false);
  });
});

describe("an overload past the stream-start wait", () => {
  test("an overloaded context leg is not retried when the retry would begin after the stream opened; other failures still are", () => {
    const overloaded = new ProxyError("WORKER_HTTP_ERROR", 503, "busy");
    const late = { ...first, retryOpensStream: true };
    expect(nextAttempt(overloaded, late)).toEqual({ kind: "fail", saysNothing: false, starting: false });
    expect(nextAttempt(new ProxyError("WORKER_HTTP_ERROR", 429, "slow down"), late).kind).toBe("fail");
    expect(nextAttempt(overloaded, first).kind).toBe("retry");
    expect(nextAttempt(serverError, late).kind).toBe("retry");
    // A starting worker is no overload: the leg moves on at once.
    expect(nextAttempt(starting, late).kind).toBe("elsewhere");
  });
});
