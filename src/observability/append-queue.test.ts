import { describe, expect, test } from "bun:test";
import { AppendQueue, type LostReason } from "./append-queue.ts";

function queue(startLater: boolean, appended: [string, string][], lost: [LostReason, number][] = []): AppendQueue<string> {
  return new AppendQueue<string>({
    limit: 8,
    batchSize: 4,
    startLater,
    lines: (batch) => new Map(["a", "b"].map((path) => [path, batch.filter((item) => item.startsWith(path)).map((item) => `${item}\n`)])),
    append: async (path, data) => {
      appended.push([path, data]);
    },
    lost: (reason, count) => lost.push([reason, count]),
  });
}

describe("AppendQueue", () => {
  test("items queued in one turn go out one append per file and batch, files with no line skipped, in order", async () => {
    const appended: [string, string][] = [];
    const lines = queue(true, appended);
    for (const item of ["a1", "b1", "a2", "a3", "a4"]) lines.push(item);
    await lines.flush();
    expect(appended).toEqual([
      ["a", "a1\na2\na3\n"],
      ["b", "b1\n"],
      ["a", "a4\n"],
    ]);
    expect(lines.written).toBe(5);
  });

  test("past its limit an item is reported lost as queue_full; clear hands back what still waits", () => {
    const lost: [LostReason, number][] = [];
    const lines = queue(true, [], lost);
    for (let i = 0; i < 10; i++) lines.push(`a${i}`);
    expect(lost).toEqual([
      ["queue_full", 1],
      ["queue_full", 1],
    ]);
    expect(lines.clear()).toBe(8);
  });
});
