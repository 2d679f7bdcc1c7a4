/**
 * A mistake on the command line is one line naming every accepted value and where help is;
 * the `listening` line shows at every log level. On the compiled binary.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { BINARY, ensureBinary, spawnBinary, spawnBinaryWithLog, type Child } from "./binary-harness.ts";

const children: Child[] = [];

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
});

function run(args: string[]): { code: number; stderr: string } {
  const result = Bun.spawnSync([BINARY, ...args], { stdout: "pipe", stderr: "pipe" });
  return { code: result.exitCode, stderr: result.stderr.toString() };
}

describe("flag errors and the listening line", () => {
  beforeAll(() => ensureBinary(), 120_000);

  test.each([
    [
      ["-l", "WARN"],
      'disagg-proxy: Invalid value for --log-level: "WARN" (expected one of debug, info, warn, error, warning, verbose, trace, internal_error); see disagg-proxy serve --help',
    ],
    [["serve", "--bogus"], "disagg-proxy: Unknown option '--bogus'; see disagg-proxy serve --help"],
    [
      ["worker", "--role", "both", "--port", "0"],
      'disagg-proxy: Invalid value for --role: "both" (expected one of context, generation, mixed); see disagg-proxy worker --help',
    ],
  ])("%p is refused in one line with every accepted value and the help to read", (args, line) => {
    expect(run(args)).toEqual({ code: 2, stderr: `${line}\n` });
  });

  test.each([["warning"], ["error"]])(
    "-l %s still shows the listening line",
    async (level) => {
      const context = await spawnBinary(["worker", "--role", "context", "--port", "0"], children);
      const generation = await spawnBinary(["worker", "--role", "generation", "--port", "0"], children);
      const { log } = await spawnBinaryWithLog(
        ["serve", "--port", "0", "--host", "127.0.0.1", "--context", context.url, "--generation", generation.url, "-l", level],
        children,
      );
      const lines = await log.until((line) => line.includes('"msg":"listening"'));
      expect(JSON.parse(lines.at(-1)!)).toMatchObject({ level: "notice", msg: "listening" });
      // Nothing at info level came before it.
      expect(lines.filter((line) => line.includes('"level":"info"'))).toEqual([]);
    },
    30_000,
  );
});
