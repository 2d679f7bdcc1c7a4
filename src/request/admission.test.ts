import { describe, expect, test } from "bun:test";
import { SharedLoad } from "../routing/shared-load.ts";
import { Admission, SharedAdmission } from "./admission.ts";

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

  test("a free slot is given at once, and none once the limit is reached", () => {
    const admission = new Admission(1, 1000);
    const release = admission.tryAcquire();
    expect(release).toBeDefined();
    expect(admission.tryAcquire()).toBeUndefined();
    release?.();
    expect(admission.inFlight).toBe(0);
  });

  test("no limit admits everyone", async () => {
    const admission = new Admission(0, 0);
    for (let i = 0; i < 100; i++) await admission.acquire(never);
    expect(admission.inFlight).toBe(100);
  });
});

/** Two event loops' admissions over one shared memory. */
function loops(limit: number, waitMs: number): [SharedAdmission, SharedAdmission] {
  const shared = new SharedLoad();
  return [
    new SharedAdmission(limit, waitMs, shared.admission()),
    new SharedAdmission(limit, waitMs, new SharedLoad(shared.buffer).admission()),
  ];
}

describe("SharedAdmission (num_workers: the event loops' one in-flight count)", () => {
  test("the limit counts every loop's requests: one loop's two slots leave none to the other", async () => {
    const [a, b] = loops(2, 0);
    const first = await a.acquire(never);
    await a.acquire(never);
    expect(b.inFlight).toBe(2);
    expect(
      await b.acquire(never).then(
        () => undefined,
        (error: unknown) => error,
      ),
    ).toMatchObject({ code: "OVERLOADED", status: 429 });
    first();
    first();
    expect(b.inFlight).toBe(1);
    await b.acquire(never);
    expect(a.inFlight).toBe(2);
  });

  test("a request waiting in one loop takes the slot a release frees in another", async () => {
    const [a, b] = loops(1, 2000);
    const release = await a.acquire(never);
    const waiting = b.acquire(never);
    await Bun.sleep(5);
    expect(a.waiting).toBe(1);
    release();
    const second = await waiting;
    expect(a.inFlight).toBe(1);
    expect(a.waiting).toBe(0);
    second();
    expect(b.inFlight).toBe(0);
  });

  test("a waiter whose client leaves stops waiting with a 499, and one past the wait gets its 429", async () => {
    const [a, b] = loops(1, 60);
    await a.acquire(never);
    const client = new AbortController();
    const leaving = b.acquire(client.signal).then(
      () => undefined,
      (error: unknown) => error,
    );
    client.abort();
    expect(await leaving).toMatchObject({ code: "CLIENT_GONE", status: 499 });
    expect(
      await b.acquire(never).then(
        () => undefined,
        (error: unknown) => error,
      ),
    ).toMatchObject({ status: 429 });
    expect(b.waiting).toBe(0);
  });
});
