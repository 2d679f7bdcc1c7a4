/** A coordinator over emulated workers on port 0, and msgpack calls to it, for test/coordinator*.test.ts. */

import { expect } from "bun:test";
import type { ProxyConfig } from "../../src/config/types.ts";
import { startCoordinator, type RunningCoordinator } from "../../src/coordinator/run.ts";
import type { EmulatedWorker, EmulatorOptions } from "../../src/emulator/index.ts";
import { isMsgpackMap, type MsgpackMap, type MsgpackValue } from "../../src/json/msgpack-read.ts";
import { memoryLogger } from "../../src/observability/logger.ts";
import { configFor, startWorkers } from "./cluster.ts";
import { decodeWire, encodeSelectRequest, type SelectRequest } from "../../src/routing/coordinator-wire.ts";

export interface Setup {
  readonly coordinator: RunningCoordinator;
  readonly url: string;
  readonly contexts: readonly EmulatedWorker[];
  readonly generations: readonly EmulatedWorker[];
  readonly logs: Record<string, unknown>[];
}

/** What a test started, stopped after it (newest first: `unshift` what must stop before the coordinator). */
export const running: (() => Promise<void>)[] = [];

export async function stopStarted(): Promise<void> {
  for (const stop of running.splice(0)) await stop();
}

export async function setup(
  options: {
    socketPath?: string;
    contexts?: number;
    generations?: number;
    config?: Partial<ProxyConfig>;
    reservationTimeoutMs?: number;
    worker?: Partial<EmulatorOptions>;
  } = {},
): Promise<Setup> {
  const contexts = startWorkers("context", options.contexts ?? 1, options.worker);
  const generations = startWorkers("generation", options.generations ?? 2, options.worker);
  const logger = memoryLogger();
  const config = configFor(contexts, generations, {
    serverStartTimeoutMs: 5000,
    generationRouter: "conversation",
    ...options.config,
  });
  const coordinator = startCoordinator(
    config,
    { port: 0, reservationTimeoutMs: options.reservationTimeoutMs ?? 180_000, socketPath: options.socketPath },
    logger,
    "test",
  );
  running.push(async () => {
    await coordinator.stop();
    await Promise.all([...contexts, ...generations].map((worker) => worker.stop()));
  });
  expect(await coordinator.waitForWorkers()).toBe(true);
  return { coordinator, url: coordinator.url.origin, contexts, generations, logs: logger.records };
}

export async function call(
  url: string,
  path: string,
  body?: Uint8Array,
): Promise<{ status: number; type: string | null; body: MsgpackMap }> {
  const response = await fetch(
    url + path,
    body === undefined ? {} : { method: "POST", headers: { "content-type": "application/msgpack" }, body },
  );
  const read = decodeWire(await response.bytes());
  if (!read.ok || !isMsgpackMap(read.value)) throw new Error(`${path}: not a msgpack map (${response.status})`);
  return { status: response.status, type: response.headers.get("content-type"), body: read.value };
}

export function select(url: string, request: SelectRequest): ReturnType<typeof call> {
  return call(url, "/select", encodeSelectRequest(request));
}

export function bytes(...words: string[]): Uint8Array {
  return Uint8Array.from(Buffer.from(words.join("").replaceAll(" ", ""), "hex"));
}

export const nameOf = (worker: EmulatedWorker): string => worker.url.replace("http://", "");
export const text = (value: MsgpackValue | undefined): string => (typeof value === "string" ? value : "");

export function inFlight(info: MsgpackMap, role: "context" | "generation"): Map<string, number> {
  const workers = info["workers"];
  const list = isMsgpackMap(workers) ? workers[role] : undefined;
  const out = new Map<string, number>();
  for (const worker of Array.isArray(list) ? list : [])
    if (isMsgpackMap(worker)) out.set(text(worker["server"]), Number(worker["in_flight"]));
  return out;
}
