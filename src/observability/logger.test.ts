import { describe, expect, test } from "bun:test";
import { dropWarned, turnBatched } from "./logger.ts";

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("turnBatched", () => {
  test("lines logged in one turn reach the writer as one write, on the next turn", async () => {
    const writes: string[] = [];
    const batch = turnBatched((text) => writes.push(text));
    batch.sink("a\n");
    batch.sink("b\n");
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toEqual(["a\nb\n"]);
  });

  test("a burst of 64 KiB in one turn is written at once, so what is held stays bounded", () => {
    const writes: string[] = [];
    const batch = turnBatched((text) => writes.push(text));
    const line = `${"x".repeat(1023)}\n`;
    for (let i = 0; i < 64; i++) batch.sink(line);
    expect(writes.map((text) => text.length)).toEqual([64 * 1024]);
  });

  test("flush hands what is held to the writer it is given, and nothing twice", async () => {
    const writes: string[] = [];
    const elsewhere: string[] = [];
    const batch = turnBatched((text) => writes.push(text));
    batch.sink("a\n");
    batch.flush((text) => elsewhere.push(text));
    await nextTurn();
    expect(elsewhere).toEqual(["a\n"]);
    expect(writes).toEqual([]);
  });
});

describe("dropWarned", () => {
  test("a loss is warned at the first record lost and at every 1000th, a batch that crosses one included", () => {
    expect(dropWarned(0, 1)).toBe(true);
    expect(dropWarned(1, 2)).toBe(false);
    expect(dropWarned(999, 1000)).toBe(true);
    expect(dropWarned(1000, 1001)).toBe(false);
    expect(dropWarned(1998, 2030)).toBe(true);
  });
});
