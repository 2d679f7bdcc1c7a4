/**
 * A child process of the benchmark (emulated worker or proxy) whose first stdout line is its URL.
 *
 * Its stdout and stderr go straight to files under bench/out/logs rather than to pipes: the
 * proxy writes one log line per request, and draining a pipe would cost the load generator
 * CPU in the middle of its measurements. The URL is read back from the file.
 */

import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";

export interface Service {
  readonly name: string;
  readonly pid: number;
  readonly url: string;
  readonly logFile: string;
  /** SIGTERM, then SIGKILL after a grace period; resolves once the process is gone. */
  stop(): Promise<void>;
}

export interface SpawnSpec {
  readonly name: string;
  readonly cmd: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  readonly logDir: string;
  readonly cwd?: string;
}

/** `serve` on loopback port 0 in front of `context` and `generation` (a URL, or a comma-separated list). */
export function serveArgs(context: string, generation: string): string[] {
  return ["serve", "--port", "0", "--host", "127.0.0.1", "--context", context, "--generation", generation];
}

const START_TIMEOUT_MS = 15_000;
const STOP_GRACE_MS = 3_000;

export async function spawnService(spec: SpawnSpec): Promise<Service> {
  mkdirSync(spec.logDir, { recursive: true });
  const logFile = join(spec.logDir, `${spec.name}.log`);
  const errFile = join(spec.logDir, `${spec.name}.err`);
  // Bun opens a BunFile stdout without truncating it: a stale first line would be read as the URL.
  rmSync(logFile, { force: true });
  rmSync(errFile, { force: true });
  const child = Bun.spawn([...spec.cmd], {
    ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
    env: { ...process.env, ...spec.env },
    stdin: "ignore",
    stdout: Bun.file(logFile),
    stderr: Bun.file(errFile),
  });
  const url = await firstLine(logFile, errFile, child);
  return {
    name: spec.name,
    pid: child.pid,
    url,
    logFile,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
      await child.exited;
      clearTimeout(timer);
    },
  };
}

async function firstLine(logFile: string, errFile: string, child: Bun.Subprocess): Promise<string> {
  const deadline = performance.now() + START_TIMEOUT_MS;
  while (performance.now() < deadline) {
    const text = await Bun.file(logFile)
      .text()
      .catch(() => "");
    const newline = text.indexOf("\n");
    if (newline >= 0) return text.slice(0, newline).trim();
    if (child.exitCode !== null) break;
    await Bun.sleep(5);
  }
  child.kill("SIGKILL");
  const stderr = await Bun.file(errFile)
    .text()
    .catch(() => "");
  throw new Error(`${logFile}: no URL on the first stdout line; stderr: ${stderr.slice(0, 2000)}`);
}
