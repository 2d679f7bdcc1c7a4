import { afterAll, beforeAll } from "bun:test";
import { ProxyProcess } from "../../bench/upgrade/proxy-process.ts";
import { startEmulatedWorker, type EmulatorOptions } from "../../src/emulator/index.ts";
import type { EmulatedWorker } from "../../src/emulator/types.ts";
import { scratch, type Scratch } from "../support/scratch.ts";
import { BINARY, ensureBinary } from "./binary-harness.ts";

export interface BinaryProcesses {
  readonly temp: Scratch;
  /** `disagg-proxy serve --host 127.0.0.1 <args>` from the compiled binary, its log lines in `logFile`. */
  readonly serve: (args: readonly string[], logFile: string, env?: Record<string, string | undefined>) => ProxyProcess;
  /** An emulated worker on port 0, in this test process. */
  readonly worker: (options: EmulatorOptions) => EmulatedWorker;
  /** An emulated context and generation worker on port 0. */
  readonly workers: () => { context: EmulatedWorker; generation: EmulatedWorker };
}

/** What one test file starts (serve processes, workers, scratch directories), the binary built before and all stopped after it. */
export function binaryProcesses(): BinaryProcesses {
  const temp = scratch();
  const processes: ProxyProcess[] = [];
  const workers: EmulatedWorker[] = [];
  beforeAll(() => ensureBinary(), 200_000);
  afterAll(async () => {
    for (const proxy of processes) if (proxy.child.exitCode === null) proxy.child.kill("SIGKILL");
    await Promise.all(workers.map((worker) => worker.stop()));
    temp.removeAll();
  });
  const worker = (options: EmulatorOptions): EmulatedWorker => {
    const started = startEmulatedWorker(options);
    workers.push(started);
    return started;
  };
  return {
    temp,
    serve(args, logFile, env) {
      const proxy = new ProxyProcess([BINARY], ["serve", "--host", "127.0.0.1", ...args], logFile, env);
      processes.push(proxy);
      return proxy;
    },
    worker,
    workers: () => ({ context: worker({ role: "context" }), generation: worker({ role: "generation" }) }),
  };
}
