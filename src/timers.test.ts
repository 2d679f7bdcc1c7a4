import { describe, expect, test } from "bun:test";
import { delay, pause, settleWithin, withDeadline } from "./timers.ts";

function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => "resolved",
    (reason: unknown) => reason,
  );
}

describe("timers", () => {
  test("pause rejects with the signal's reason when aborted, before or during the wait", async () => {
    const before = new AbortController();
    before.abort(new Error("gone"));
    expect(await rejection(pause(10, before.signal))).toEqual(new Error("gone"));
    const during = new AbortController();
    const waiting = pause(60_000, during.signal);
    during.abort(new Error("later"));
    expect(await rejection(waiting)).toEqual(new Error("later"));
  });

  test("pause of 0 resolves without a timer; delay resolves when aborted", async () => {
    await pause(0, new AbortController().signal);
    const controller = new AbortController();
    const waiting = delay(60_000, controller.signal);
    controller.abort();
    expect(await waiting).toBeUndefined();
  });

  test("withDeadline says late when the promise outlives it, and passes a value or a rejection through", async () => {
    expect(await withDeadline(new Promise(() => {}), 1)).toBe("late");
    expect(await withDeadline(Promise.resolve(7), 60_000)).toBe(7);
    expect(await rejection(withDeadline(Promise.reject(new Error("no")), 60_000))).toEqual(new Error("no"));
  });

  test("settleWithin reports fulfilled, rejected or still pending", async () => {
    expect(await settleWithin(Promise.resolve(), 60_000)).toBe("fulfilled");
    expect(await settleWithin(Promise.reject(new Error("x")), 60_000)).toBe("rejected");
    expect(await settleWithin(new Promise(() => {}), 1)).toBe("pending");
    expect(await settleWithin(Promise.resolve(), Number.POSITIVE_INFINITY)).toBe("fulfilled");
  });

  test("settleWithin on a given timer source says pending when its timer fires, and cancels it when the promise settles first", async () => {
    const fires: (() => void)[] = [];
    let cancelled = 0;
    const timers = {
      setTimer(_ms: number, fire: () => void): () => void {
        fires.push(fire);
        return () => {
          cancelled++;
        };
      },
    };
    expect(await settleWithin(Promise.resolve(), 60_000, timers)).toBe("fulfilled");
    expect(cancelled).toBe(1);
    const pending = settleWithin(new Promise(() => {}), 60_000, timers);
    fires[1]?.();
    expect(await pending).toBe("pending");
  });
});
