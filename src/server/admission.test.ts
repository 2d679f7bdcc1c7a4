import { describe, expect, test } from "bun:test";
import { Admission } from "./admission.ts";

const never = new AbortController().signal;

function refusal(admission: Admission): Promise<unknown> {
  return admission.acquire(never).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("Admission", () => {
  test("beyond the limit a request is refused with 429 at once when there is no wait", async () => {
    const admission = new Admission(2, 0);
    await admission.acquire(never);
    await admission.acquire(never);
    expect(await refusal(admission)).toMatchObject({ code: "OVERLOADED", status: 429 });
  });

  test("a waiting request gets the first freed slot, and the count never passes the limit", async () => {
    const admission = new Admission(1, 1000);
    const release = await admission.acquire(never);
    const waiting = admission.acquire(never);
    release();
    release();
    const second = await waiting;
    expect(admission.inFlight).toBe(1);
    second();
    expect(admission.inFlight).toBe(0);
  });

  test("a wait longer than the admission wait ends in a 429", async () => {
    const admission = new Admission(1, 20);
    await admission.acquire(never);
    expect(await refusal(admission)).toMatchObject({ status: 429 });
  });

  test("no limit admits everyone", async () => {
    const admission = new Admission(0, 0);
    for (let i = 0; i < 100; i++) await admission.acquire(never);
    expect(admission.inFlight).toBe(100);
  });
});
