import { describe, expect, test } from "bun:test";
import { memoryLogger } from "./observability/logger.ts";
import { logStartupNotes, workerWaitEnded } from "./command-run.ts";

const discovery = { discovery: { kind: "cluster" } } as unknown as Parameters<typeof workerWaitEnded>[1];

describe("the end of the worker wait", () => {
  test("ready workers serve and log nothing", () => {
    const logger = memoryLogger();
    expect(workerWaitEnded(true, { discovery: undefined }, logger)).toBe("serving");
    expect(logger.records).toEqual([]);
  });

  test("with discovery it keeps serving and says once that it waits for more workers", () => {
    const logger = memoryLogger();
    expect(workerWaitEnded(false, discovery, logger)).toBe("serving");
    expect(logger.records.map((record) => [record["level"], record["msg"]])).toEqual([
      ["warn", "not enough workers ready yet; waiting for more to register"],
    ]);
  });

  test("static workers never ready give up with upstream's error line", () => {
    const logger = memoryLogger();
    expect(workerWaitEnded(false, { discovery: undefined }, logger)).toBe("gave-up");
    expect(logger.records.map((record) => [record["level"], record["msg"]])).toEqual([
      ["error", "Timeout waiting for context and generation servers to be ready"],
    ]);
  });
});

test("start-up notes are logged at their level, then the warnings", () => {
  const logger = memoryLogger();
  logStartupNotes(logger, [{ level: "info", text: "read config.yaml" }], ["low capacity"]);
  expect(logger.records.map((record) => [record["level"], record["msg"]])).toEqual([
    ["info", "read config.yaml"],
    ["warn", "low capacity"],
  ]);
});
