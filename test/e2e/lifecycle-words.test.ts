/**
 * Each way a worker leaves rotation and comes back has its own words in the log, the key file
 * is named with its key count at start and reload, and a drain ends with "drained, exiting".
 * On the compiled binary, workers included.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { scratch } from "../support/scratch.ts";
import { ensureBinary, spawnBinary, spawnBinaryWithLog, type Child, type LogLines } from "./binary-harness.ts";

const children: Child[] = [];
const temp = scratch();

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
  temp.removeAll();
});

const chat = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hello" }], max_tokens: 2 });

/** The next line with this message, as a record. */
async function next(log: LogLines, msg: string): Promise<Record<string, unknown>> {
  const lines = await log.until((line) => line.includes(`"msg":"${msg}"`));
  const last = lines.at(-1);
  if (last === undefined || !last.includes(`"msg":"${msg}"`)) throw new Error(`no "${msg}" line: ${lines.join("\n")}`);
  return JSON.parse(last) as Record<string, unknown>;
}

const FAST_CHECKS = ["--health-check-interval-ms", "100", "--health-check-failures", "2"];

function serveArgs(context: string, generation: string[]): string[] {
  return ["serve", "--port", "0", "--host", "127.0.0.1", "--context", context, ...generation.flatMap((url) => ["--generation", url])];
}

async function killed(worker: { child: Child }): Promise<void> {
  worker.child.kill("SIGKILL");
  await worker.child.exited;
}

describe("lifecycle lines", () => {
  beforeAll(() => ensureBinary(), 120_000);

  test("health-check removal, outlier ejection, return, ready-but-still-ejected, the key file, and the drain's end each have their words", async () => {
    const context = await spawnBinary(["worker", "--role", "context", "--port", "0"], children);
    const healthy = await spawnBinary(["worker", "--role", "generation", "--port", "0"], children);
    const failing = await spawnBinary(["worker", "--role", "generation", "--port", "0", "--reject-status", "500"], children);
    const dir = temp.dir("lifecycle-");
    const keys = join(dir, "api-keys");
    writeFileSync(keys, "key-one\nkey-two\n");
    const { child, url, log } = await spawnBinaryWithLog(
      [
        serveArgs(context.url, [healthy.url, failing.url]),
        ["--api-key-file", keys, "--outlier-failures", "2", "--max-retries", "0"],
        FAST_CHECKS,
      ].flat(),
      children,
    );
    expect(await next(log, "client keys")).toMatchObject({ file: keys, keys: 2 });
    await next(log, "all workers are ready");

    // Requests that keep failing at one worker: an outlier ejection.
    const headers = { "content-type": "application/json", authorization: "Bearer key-one" };
    for (let i = 0; i < 6; i++) {
      // oxlint-disable-next-line no-await-in-loop -- one at a time, so round robin meets the failing worker
      await (await fetch(`${url}/v1/chat/completions`, { method: "POST", headers, body: chat })).text();
    }
    expect(await next(log, "worker ejected: its requests keep failing")).toMatchObject({ worker: failing.url });

    // It dies (its checks fail), and comes back healthy within its ejection: ready, but still ejected.
    const failingPort = new URL(failing.url).port;
    await killed(failing);
    expect(await next(log, "worker out of rotation: its health checks failed")).toMatchObject({ worker: failing.url });
    await spawnBinary(["worker", "--role", "generation", "--port", failingPort], children);
    expect(await next(log, "worker healthy but still ejected: back in rotation once its ejection ends")).toMatchObject({
      worker: failing.url,
    });

    // A worker removed by its checks and back: "back in rotation".
    const contextPort = new URL(context.url).port;
    await killed(context);
    expect(await next(log, "worker out of rotation: its health checks failed")).toMatchObject({ worker: context.url });
    await spawnBinary(["worker", "--role", "context", "--port", contextPort], children);
    expect(await next(log, "worker back in rotation: its health check passed")).toMatchObject({ worker: context.url });

    writeFileSync(keys, "key-one\nkey-two\nkey-three\n");
    child.kill("SIGHUP");
    expect((await next(log, "reloaded"))["applied"]).toBe(`client keys ${keys} (3 keys)`);

    child.kill("SIGTERM");
    expect(await next(log, "drained, exiting")).toMatchObject({ level: "notice", exit_code: 0 });
    expect(await child.exited).toBe(0);
  }, 60_000);
});
