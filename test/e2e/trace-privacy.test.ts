/**
 * TRTLLM_REQUEST_TRACE_DIR on the compiled binary holds every prompt and answer, so it is
 * private by construction (docs/security.md): 0700 directories and 0600 files under umask 022; a
 * trace directory another user owns is refused with upstream's "Disabling request trace output"
 * line; a linked hour directory is never followed.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, readdirSync, statSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { ProxyProcess, type LogRecord } from "../../bench/upgrade/proxy-process.ts";
import { startEmulatedWorker } from "../../src/emulator/index.ts";
import type { EmulatedWorker } from "../../src/emulator/types.ts";
import { scratch } from "../support/scratch.ts";
import { eventually } from "../support/wait.ts";
import { BINARY, ensureBinary } from "./binary-harness.ts";

const temp = scratch();
const processes: ProxyProcess[] = [];
const workers: EmulatedWorker[] = [];
let workerArgs: string[] = [];

beforeAll(async () => {
  const context = startEmulatedWorker({ role: "context" });
  const generation = startEmulatedWorker({ role: "generation" });
  workers.push(context, generation);
  workerArgs = ["--context", context.url, "--generation", generation.url];
  await ensureBinary();
}, 200_000);
afterAll(async () => {
  for (const proxy of processes) if (proxy.child.exitCode === null) proxy.child.kill("SIGKILL");
  // Their last lines go to log files under temp: removed before, they threw between tests.
  await Promise.all([...processes.map((proxy) => proxy.drained), ...workers.map((worker) => worker.stop())]);
  temp.removeAll();
});

const mode = (path: string): number => statSync(path).mode & 0o777;

/** The binary under umask 022 (a shell's, a container's), tracing to `dir`; resolves with its URL once ready. */
async function tracingProxy(dir: string): Promise<{ proxy: ProxyProcess; url: string }> {
  const command = ["sh", "-c", 'umask 022 && exec "$0" "$@"', BINARY];
  const args = ["serve", "--host", "127.0.0.1", "--port", "0", ...workerArgs];
  const proxy = new ProxyProcess(command, args, join(temp.dir("trace-log-"), "proxy.log"), {
    ...process.env,
    TRTLLM_REQUEST_TRACE_DIR: dir,
  });
  processes.push(proxy);
  const listening = await proxy.waitFor((record: LogRecord) => record["msg"] === "listening", 30_000, "listening");
  const url = String(listening["url"]);
  await eventually(async () => (await fetch(`${url}/health`)).status === 200, 30_000, "workers ready");
  return { proxy, url };
}

async function chat(url: string): Promise<void> {
  const body = { model: "emulated-model", messages: [{ role: "user", content: "a private prompt" }], max_tokens: 2 };
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  await response.text();
}

/** The hour directories a line written now goes to (this hour, and the next should it turn meanwhile). */
function hoursAround(): string[] {
  const now = Date.now();
  return [now, now + 3_600_000].map((ms) => new Date(ms).toISOString().slice(0, 13));
}

describe("the request trace is private by construction (compiled binary)", () => {
  test("under umask 022 the trace directory and its hour directories are 0700 and both trace files 0600", async () => {
    const dir = join(temp.dir("trace-modes-"), "traces");
    const { url } = await tracingProxy(dir);
    await chat(url);
    let files: string[] = [];
    await eventually(
      () => {
        files = readdirSync(dir).flatMap((hour) => readdirSync(join(dir, hour)).map((name) => join(dir, hour, name)));
        return files.some((file) => file.includes("responses-"));
      },
      10_000,
      "both trace files",
    );
    expect(mode(dir)).toBe(0o700);
    expect(readdirSync(dir).map((hour) => mode(join(dir, hour)))).toEqual(readdirSync(dir).map(() => 0o700));
    expect(files.map(mode)).toEqual(files.map(() => 0o600));
  }, 60_000);

  test("a trace directory another user owns, a link planted in it as the hour directory, is refused with 'Disabling request trace output'; nothing reaches the link", async () => {
    const dir = temp.dir("trace-foreign-");
    const elsewhere = temp.dir("trace-elsewhere-");
    for (const hour of hoursAround()) symlinkSync(elsewhere, join(dir, hour));
    chownSync(dir, 65534, 65534);
    const { proxy, url } = await tracingProxy(dir);
    const refusal = proxy.records.find((record) => String(record["msg"]).startsWith("Disabling request trace output: "));
    expect(String(refusal?.["msg"])).toContain(`request trace directory ${dir} (mode 700, owner uid 65534) belongs to another user`);
    expect(proxy.records.some((record) => String(record["msg"]).startsWith("Recording request traces"))).toBe(false);
    await chat(url);
    expect(readdirSync(elsewhere)).toEqual([]);
  }, 60_000);

  test("a trace directory whose parent others may write (no sticky bit) is refused: swapped for a link after start, nothing would check it", async () => {
    const parent = temp.dir("trace-open-parent-");
    chmodSync(parent, 0o777);
    const dir = join(parent, "traces");
    const { proxy, url } = await tracingProxy(dir);
    const refusal = proxy.records.find((record) => String(record["msg"]).startsWith("Disabling request trace output: "));
    expect(String(refusal?.["msg"])).toContain(
      `the directory above it ${parent} (mode 777, owner uid ${process.getuid?.() ?? 0}) may be written by other users`,
    );
    await chat(url);
    expect(readdirSync(parent)).toEqual(["traces"]);
    expect(readdirSync(dir)).toEqual([]);
  }, 60_000);

  test("in this user's trace directory, a linked hour directory is not followed: its lines are dropped with a warning naming the link", async () => {
    const dir = temp.dir("trace-linked-");
    const elsewhere = temp.dir("trace-elsewhere-");
    for (const hour of hoursAround()) symlinkSync(elsewhere, join(dir, hour));
    const { proxy, url } = await tracingProxy(dir);
    await chat(url);
    const warning = await proxy.waitFor(
      (record) => record["msg"] === "request trace lines not written",
      10_000,
      "the dropped lines' warning",
    );
    expect(JSON.stringify(warning)).toContain("is a link, not a directory");
    expect(readdirSync(elsewhere)).toEqual([]);
  }, 60_000);
});
