import { describe, expect, test } from "bun:test";
import { LeaseTable, type Lease } from "./leases.ts";

describe("LeaseTable", () => {
  test("a lease nobody takes expires once, and is gone from the table before the callback runs", async () => {
    const expired: Lease<string>[] = [];
    let table: LeaseTable<string> | undefined;
    const gone = new Promise<number>((resolve) => {
      table = new LeaseTable<string>({ timeoutMs: 20, maxLeases: 10 }, (lease) => {
        expired.push(lease);
        resolve(table?.size ?? -1);
      });
    });
    table?.hold({ role: "generation", reqId: 1n, held: "a" });
    expect(await gone).toBe(0);
    expect(expired.map((lease) => lease.held)).toEqual(["a"]);
    expect(table?.take("generation", 1n)).toBeUndefined();
  });

  test("a taken lease never expires, and the requests count follows a request's legs", async () => {
    const expired: string[] = [];
    const table = new LeaseTable<string>({ timeoutMs: 10, maxLeases: 10 }, (lease) => expired.push(lease.held));
    table.hold({ role: "context", reqId: 7n, held: "ctx" });
    table.hold({ role: "generation", reqId: 7n, held: "gen" });
    expect([table.size, table.requests, table.holds(7n)]).toEqual([2, 1, true]);
    expect(table.take("context", 7n)?.held).toBe("ctx");
    expect([table.size, table.requests, table.holds(7n)]).toEqual([1, 1, true]);
    expect(table.take("generation", 7n)?.held).toBe("gen");
    expect([table.size, table.requests, table.holds(7n)]).toEqual([0, 0, false]);
    // A later lease expiring shows the taken ones' timers were stopped: only it is reported.
    const later = new Promise<void>((resolve) => {
      const check = new LeaseTable<string>({ timeoutMs: 30, maxLeases: 1 }, () => resolve());
      check.hold({ role: "context", reqId: 8n, held: "later" });
    });
    await later;
    expect(expired).toEqual([]);
  });

  test("it is full at maxLeases, and takeAll empties it with no expiry after", () => {
    const table = new LeaseTable<number>({ timeoutMs: 60_000, maxLeases: 2 }, () => {
      throw new Error("no lease may expire");
    });
    table.hold({ role: "context", reqId: 1n, held: 1 });
    expect(table.full).toBe(false);
    table.hold({ role: "generation", reqId: 2n, held: 2 });
    expect(table.full).toBe(true);
    expect(table.takeAll().map((lease) => lease.held)).toEqual([1, 2]);
    expect([table.size, table.requests, table.full]).toEqual([0, 0, false]);
  });
});
