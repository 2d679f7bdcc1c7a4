import { describe, expect, test } from "bun:test";
import { RequestLog, type RecordInit } from "./request-log.ts";

const init: RecordInit = {
  method: "POST",
  path: "/v1/chat/completions",
  headers: {},
  body: undefined,
  phase: "context",
  disaggRequestId: undefined,
};

describe("RequestLog", () => {
  test("keeps every record by default", () => {
    const log = new RequestLog();
    for (let i = 0; i < 50; i++) log.add(init);
    expect(log.records.length).toBe(50);
  });

  test("with maxRecords keeps at most twice the cap and always the newest, with arrival numbers intact", () => {
    const log = new RequestLog(10);
    for (let i = 0; i < 1000; i++) log.add(init);
    expect(log.records.length).toBeGreaterThanOrEqual(10);
    expect(log.records.length).toBeLessThanOrEqual(20);
    expect(log.records.at(-1)?.seq).toBe(999);
    expect(log.records.map((r) => r.seq)).toEqual(log.records.map((_, i) => 1000 - log.records.length + i));
  });

  test("maxRecords 0 keeps almost nothing but still counts running requests", () => {
    const log = new RequestLog(0);
    const records = Array.from({ length: 5 }, () => log.add(init));
    expect(log.records.length).toBeLessThanOrEqual(1);
    expect(log.running()).toBe(5);
    for (const record of records) log.settle(record, "finished");
    expect(log.running()).toBe(0);
  });
});
