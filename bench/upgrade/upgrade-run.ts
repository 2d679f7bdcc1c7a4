/**
 * Upgrades in a row under load (README "Upgrading"): a proxy on a fixed port in front of an
 * emulated context and generation worker; four paced client loops (new and kept-alive
 * connections, streamed and not); before each upgrade a long stream is opened on the running
 * process, then a new process is started with --take-over and the run waits until it has
 * taken the port. At the end: every request's outcome (refused, reset, failed), each long
 * stream compared byte for byte with what the generation worker sent, and per upgrade how
 * soon after the old process stopped listening the new one answered a new connection.
 */

import { join } from "node:path";
import { startEmulatedWorker } from "../../src/emulator/index.ts";
import type { EmulatedWorker } from "../../src/emulator/types.ts";
import { chatBody, runClientLoops, type LoopResults } from "./client-loops.ts";
import { ProxyProcess, type LogRecord } from "./proxy-process.ts";
import { getRequest, postRequest, RawHttpConnection } from "./raw-client.ts";

export interface UpgradeRunOptions {
  readonly upgrades: number;
  /** How long each stream opened before an upgrade lasts. */
  readonly streamSeconds: number;
  /** Pause after one take-over before the next stream and upgrade. */
  readonly gapMs: number;
  /** Requests a second per client loop (four loops). */
  readonly ratePerLoop: number;
  /** Unpaced loops of new connections besides (0: none), to show what net.ipv4.tcp_migrate_req changes. */
  readonly burst?: number;
  /** How a proxy is started: the binary, or the runtime and src/main.ts. */
  readonly command: readonly string[];
  /** Proxy logs (one file per process) and the control socket's directory. */
  readonly workDir: string;
  readonly progress?: (line: string) => void;
}

export interface UpgradeFigures {
  readonly fromPid: number;
  readonly toPid: number;
  /** From starting the new process to its "took over the port". */
  readonly takeOverMs: number;
  /** Requests in flight on the old process when it stopped listening (the long stream among them). */
  readonly inFlightAtStop: number;
  /** From the old process's "stopped listening" to the first answer of the new one to a connection opened after it. */
  readonly answeredAfterStopMs: number | undefined;
}

export interface LongStream {
  readonly upgrade: number;
  readonly bytes: number;
  readonly seconds: number;
  /** Undefined when the client got exactly the bytes the generation worker sent, ending with [DONE]. */
  readonly problem: string | undefined;
}

export interface UpgradeReport {
  readonly seconds: number;
  readonly requests: number;
  readonly requestsPerSecond: number;
  readonly loops: LoopResults;
  readonly upgrades: readonly UpgradeFigures[];
  readonly longStreams: readonly LongStream[];
  /** Exit codes of the replaced processes (0: drained and exited on their own). */
  readonly oldExitCodes: readonly (number | null)[];
}

const TOKEN_MS = 20;
const TAKE_OVER_TIMEOUT_MS = 60_000;
const STREAM_LEAD_MS = 300;

export async function runUpgrades(options: UpgradeRunOptions): Promise<UpgradeReport> {
  const say = options.progress ?? (() => {});
  const context = startEmulatedWorker({ role: "context" });
  const generation = startEmulatedWorker({ role: "generation", recordReplies: true });
  const host = "127.0.0.1";
  const port = freePort();
  const args = (index: number): string[] => [
    "serve",
    "--host",
    host,
    "--port",
    String(port),
    "--context",
    context.url,
    "--generation",
    generation.url,
    "--runtime-dir",
    options.workDir,
    "--drain-timeout",
    String(options.streamSeconds + 30),
    "--server-start-timeout",
    "30",
    ...(index > 0 ? ["--take-over"] : []),
  ];
  const spawn = (index: number): ProxyProcess =>
    new ProxyProcess(options.command, args(index), join(options.workDir, `proxy-${index}.log`));
  const processes = [spawn(0)];
  const stopLoops = new AbortController();
  try {
    await processes[0]?.waitFor((record) => record["msg"] === "all workers are ready", TAKE_OVER_TIMEOUT_MS, "readiness");
    const started = performance.now();
    const loops = runClientLoops(host, port, options.ratePerLoop, stopLoops.signal, options.burst ?? 0);
    const streams: Promise<LongStream>[] = [];
    const upgrades: UpgradeFigures[] = [];
    for (let index = 1; index <= options.upgrades; index += 1) {
      const old = processes.at(-1);
      if (old === undefined) throw new Error("no running proxy");
      streams.push(longStream(host, port, options.streamSeconds, index, generation));
      // The stream reaches the old process before the new one starts (inFlightAtStop shows it did).
      await Bun.sleep(STREAM_LEAD_MS);
      const next = spawn(index);
      processes.push(next);
      const figures = await oneUpgrade(host, port, old, next);
      upgrades.push(figures);
      say(
        `upgrade ${index}: pid ${figures.fromPid} → ${figures.toPid} in ${figures.takeOverMs} ms; answered ${figures.answeredAfterStopMs} ms after the old stopped listening; ${figures.inFlightAtStop} in flight on the old`,
      );
      await Bun.sleep(options.gapMs);
    }
    const longStreams = await Promise.all(streams);
    stopLoops.abort();
    const results = await loops;
    const seconds = (performance.now() - started) / 1000;
    const oldExitCodes = await Promise.all(processes.slice(0, -1).map(async (process) => await process.child.exited));
    const requests = Object.values(results.byKind).reduce((sum, tally) => sum + tally.ok + tally.refused + tally.reset + tally.failed, 0);
    return { seconds, requests, requestsPerSecond: requests / seconds, loops: results, upgrades, longStreams, oldExitCodes };
  } finally {
    stopLoops.abort();
    for (const process of processes) if (process.child.exitCode === null) process.child.kill("SIGTERM");
    await Promise.all(processes.map((process) => process.child.exited));
    await Promise.all([context.stop(), generation.stop()]);
  }
}

/** What the run promises, as a list of what it missed. */
export function problems(report: UpgradeReport): string[] {
  const missed: string[] = [];
  for (const [kind, tally] of Object.entries(report.loops.byKind)) {
    if (tally.refused + tally.reset + tally.failed > 0) missed.push(`${kind}: ${JSON.stringify(tally)}`);
  }
  missed.push(...report.loops.failures);
  for (const stream of report.longStreams)
    if (stream.problem !== undefined) missed.push(`long stream ${stream.upgrade}: ${stream.problem}`);
  for (const upgrade of report.upgrades) {
    if (upgrade.answeredAfterStopMs === undefined || upgrade.answeredAfterStopMs > 1000)
      missed.push(`pid ${upgrade.toPid} answered ${upgrade.answeredAfterStopMs} ms after the old stopped listening`);
  }
  return missed;
}

/** Starts `next` (already spawned with --take-over) and measures the take-over. */
async function oneUpgrade(host: string, port: number, old: ProxyProcess, next: ProxyProcess): Promise<UpgradeFigures> {
  const spawnedAt = performance.now();
  const seen: { at: number; openedAt: number; pid: number }[] = [];
  const polling = new AbortController();
  // A new connection every 20 ms asks the dashboard which process answers it.
  const poller = (async () => {
    while (!polling.signal.aborted) {
      const openedAt = Date.now();
      try {
        const connection = await RawHttpConnection.open(host, port, 2000);
        const answer = await connection.exchange(getRequest(host, port, "/dashboard/data"), 2000);
        connection.close();
        const pid = (JSON.parse(answer.body) as { proxy: { pid: number } }).proxy.pid;
        seen.push({ at: Date.now(), openedAt, pid });
      } catch {
        // The client loops count refusals and resets; this only looks for the new pid.
      }
      await Bun.sleep(20);
    }
  })();
  let stopped: LogRecord;
  try {
    await next.waitFor((record) => record["msg"] === "took over the port", TAKE_OVER_TIMEOUT_MS, "take-over");
    stopped = await old.waitFor((record) => String(record["msg"]).startsWith("stopped listening"), 5000, "stopped listening");
    const stoppedAt = Date.parse(String(stopped["ts"]));
    const deadline = performance.now() + 3000;
    while (!seen.some((s) => s.pid === next.pid && s.openedAt >= stoppedAt) && performance.now() < deadline) await Bun.sleep(20);
  } finally {
    polling.abort();
    await poller;
  }
  const takeOverMs = Math.round(performance.now() - spawnedAt);
  const stoppedAt = Date.parse(String(stopped["ts"]));
  const first = seen.find((s) => s.pid === next.pid && s.openedAt >= stoppedAt);
  return {
    fromPid: old.pid,
    toPid: next.pid,
    takeOverMs,
    inFlightAtStop: Number(stopped["in_flight"] ?? 0),
    answeredAfterStopMs: first === undefined ? undefined : first.at - stoppedAt,
  };
}

/** A stream of `seconds` on a new connection, checked against the generation worker's own bytes. */
async function longStream(host: string, port: number, seconds: number, upgrade: number, generation: EmulatedWorker): Promise<LongStream> {
  const started = performance.now();
  const tokens = Math.round((seconds * 1000) / TOKEN_MS);
  // The emulator's directives: this many tokens, TOKEN_MS apart (the loops' requests take none).
  const body = chatBody(true, tokens, `long stream ${upgrade} [[emu tokens=${tokens} token_ms=${TOKEN_MS}]]`);
  let got = "";
  try {
    const connection = await RawHttpConnection.open(host, port, 5000);
    const answer = await connection.exchange(postRequest(host, port, "/v1/chat/completions", body, false), seconds * 1000 + 60_000);
    connection.close();
    got = answer.body;
    if (answer.status !== 200) return { upgrade, bytes: got.length, seconds: elapsed(started), problem: `status ${answer.status}` };
  } catch (error) {
    return { upgrade, bytes: got.length, seconds: elapsed(started), problem: error instanceof Error ? error.message : String(error) };
  }
  return { upgrade, bytes: got.length, seconds: elapsed(started), problem: compareWithWorker(got, generation) };
}

/** A port nobody listens on now: bound on 0, then let go. */
function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const { port } = listener;
  listener.stop(true);
  return port;
}

function compareWithWorker(got: string, generation: EmulatedWorker): string | undefined {
  const id = /"id":"(chatcmpl-[^"]+)"/.exec(got)?.[1];
  if (id === undefined) return "no chat completion id in the stream";
  const record = generation.requests.find(
    (r) =>
      r.sent.length > 0 &&
      Buffer.from(r.sent[0] ?? new Uint8Array())
        .toString("latin1")
        .includes(id),
  );
  if (record === undefined) return `the generation worker sent no stream with id ${id}`;
  const sent = Buffer.concat(record.sent.map((piece) => Buffer.from(piece))).toString("latin1");
  if (sent !== got)
    return `got ${got.length} bytes, the worker sent ${sent.length}; first difference at byte ${firstDifference(sent, got)}`;
  if (!got.endsWith("data: [DONE]\n\n")) return "ends without [DONE]";
  return undefined;
}

function firstDifference(a: string, b: string): number {
  let index = 0;
  while (index < a.length && index < b.length && a[index] === b[index]) index += 1;
  return index;
}

const elapsed = (since: number): number => Math.round((performance.now() - since) / 100) / 10;
