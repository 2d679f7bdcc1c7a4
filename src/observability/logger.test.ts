import { describe, expect, test } from "bun:test";
import { createLogger, dropWarned, turnBatched } from "./logger.ts";

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

/** The line a logger writes for one "request" message. */
function lineOf(fields?: Record<string, unknown>, level: "info" | "error" = "info"): string {
  let written = "";
  createLogger("debug", (line) => (written = line))[level]("request", fields);
  return written;
}

describe("createLogger", () => {
  test("a line is its own keys first, then the fields in their order, undefined ones left out", () => {
    const line = lineOf({ route: "/v1/chat/completions", status: 200, error: undefined, ttft_ms: 1.5, stream: false });
    expect(line.endsWith("\n")).toBe(true);
    expect(Object.keys(JSON.parse(line))).toEqual(["ts", "level", "msg", "route", "status", "ttft_ms", "stream"]);
    expect(JSON.parse(line)).toMatchObject({ level: "info", msg: "request", route: "/v1/chat/completions", status: 200, ttft_ms: 1.5 });
  });

  test("a line with no fields, or none defined, is its own keys alone", () => {
    expect(Object.keys(JSON.parse(lineOf()))).toEqual(["ts", "level", "msg"]);
    expect(Object.keys(JSON.parse(lineOf({ error: undefined })))).toEqual(["ts", "level", "msg"]);
  });

  test("ids are written as text and errors described, the stack only on an error line", () => {
    const cause = new Error("inner");
    expect(JSON.parse(lineOf({ id: 12345678901234567890n, error: new Error("outer", { cause }) }))).toMatchObject({
      id: "12345678901234567890",
      error: { name: "Error", message: "outer", cause: { message: "inner" } },
    });
    expect(JSON.parse(lineOf({ error: cause })).error.stack).toBeUndefined();
    expect(JSON.parse(lineOf({ error: cause }, "error")).error.stack).toContain("inner");
  });

  test("a field named as one of the line's own keys replaces its value in place", () => {
    const line = lineOf({ msg: "overridden", route: "/x" });
    expect(Object.keys(JSON.parse(line))).toEqual(["ts", "level", "msg", "route"]);
    expect(JSON.parse(line).msg).toBe("overridden");
  });
});
