/**
 * Waiting, bounded: the timer helpers every layer uses (the proxy and the emulator alike).
 * Below everything: imports nothing. Every wait takes an abort signal or a deadline, so none
 * can outlive the request or the process part that started it.
 */

/**
 * Waits `ms`, or rejects with the signal's reason as soon as it aborts (at once if it already
 * has). A wait of 0 or less does not wait for a timer tick: a 0 ms-per-token emulator stays fast.
 */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    if (ms <= 0) {
      resolve();
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Waits `ms`, or resolves at once when the signal aborts: for loops that check the signal themselves. */
export function delay(ms: number, signal: AbortSignal): Promise<void> {
  return pause(ms, signal).catch(() => {});
}

/** The promise's value, or "late" when it has not settled within `ms` (its rejection passes through). */
export function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T | "late"> {
  let timer: Timer | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), Math.max(0, ms));
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Looks every 20 ms until `done()` or `timeoutMs` passed. */
export async function waitUntil(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  const never = new AbortController().signal;
  while (!done() && performance.now() < deadline) {
    await pause(Math.min(20, deadline - performance.now()), never);
  }
}

/** Something that calls `fire` after `ms` and returns its canceller (a shared wheel, a test's clock). */
export interface TimerSource {
  setTimer(ms: number, fire: () => void): () => void;
}

/**
 * How the promise stands after at most `ms` (an infinite `ms` waits for it to settle); on
 * `timers` when given, else on a timer of its own.
 */
export async function settleWithin(
  promise: Promise<unknown>,
  ms: number,
  timers?: TimerSource,
): Promise<"fulfilled" | "rejected" | "pending"> {
  const settled = promise.then(FULFILLED, REJECTED);
  if (!Number.isFinite(ms)) return settled;
  if (timers === undefined) {
    const state = await withDeadline(settled, ms);
    return state === "late" ? "pending" : state;
  }
  // Whichever comes first (each stream's start costs no race and no closures for the states).
  const { promise: first, resolve } = Promise.withResolvers<"fulfilled" | "rejected" | "pending">();
  void settled.then(resolve);
  const cancel = timers.setTimer(Math.max(0, ms), () => resolve("pending"));
  const state = await first;
  cancel();
  return state;
}

const FULFILLED = (): "fulfilled" => "fulfilled";
const REJECTED = (): "rejected" => "rejected";
