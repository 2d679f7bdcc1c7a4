/**
 * `num_workers` > 1: the process serves the port from several event loops, one per Bun Worker
 * thread (upstream forks as many processes, commands/serve.py, #15905), each a whole proxy
 * listening with reusePort, the kernel spreading connections over them. They share the load
 * (reservations, per-worker limits, round-robin turns, admission) in one SharedArrayBuffer
 * (`routing/shared-load.ts`), one metrics exposition (every loop's values added up, as
 * prom-client's AggregatorRegistry does between processes), and SIGHUP and SIGTERM, which the
 * main thread receives and passes on. Each loop mints disagg_request_ids with its own process id
 * (the configured one + its index), as upstream's launcher gives each fleet worker its own
 * TRTLLM_DISAGG_WORKER_PROCESS_ID (llmapi/disagg_utils.py worker_local_process_id), so ids stay
 * unique. Each loop checks workers' health itself and logs to the same stdout.
 */

import { randomBytes } from "node:crypto";
import { Worker, type MessagePort } from "node:worker_threads";
import type { ProxyConfig } from "../config/types.ts";
import { turnBatched, type Logger, type Sink, type TurnBatch } from "../observability/logger.ts";
import type { TrafficObserver } from "../observability/traffic-observer.ts";
import { dashboardForwarder, forwardingObserver, privateDashboard, replay, type TrafficEvent } from "./loop-dashboard.ts";
import { renderAll, type LoopMetrics } from "../observability/metrics.ts";
import { SharedLoad } from "../routing/shared-load.ts";
import { withDeadline } from "../timers.ts";
import type { LoopShare } from "../server/loop-share.ts";

/** What an extra loop's Worker is started with (its `workerData`). */
export interface LoopData {
  readonly kind: "disagg-proxy-event-loop";
  readonly index: number;
  /** The main loop's config with the port it bound (port 0 resolved). */
  readonly config: ProxyConfig;
  readonly buffer: SharedArrayBuffer;
  /** The main loop's private dashboard listener, when the dashboard is on. */
  readonly dashboard: { readonly url: string; readonly token: string } | undefined;
}

export function isLoopData(data: unknown): data is LoopData {
  return typeof data === "object" && data !== null && "kind" in data && data.kind === "disagg-proxy-event-loop";
}

/** Messages between the main loop and an extra one. */
export type ToLoop =
  | { readonly kind: "values"; readonly id: number }
  | { readonly kind: "gathered"; readonly id: number; readonly text: string }
  | { readonly kind: "reload"; readonly context: readonly string[]; readonly generation: readonly string[] }
  | { readonly kind: "drain"; readonly timeoutMs: number }
  | { readonly kind: "hand-over"; readonly timeoutMs: number };
export type FromLoop =
  | { readonly kind: "listening" }
  | { readonly kind: "failed"; readonly message: string }
  | { readonly kind: "values"; readonly id: number; readonly metrics: LoopMetrics }
  | { readonly kind: "gather"; readonly id: number }
  | { readonly kind: "traffic"; readonly events: TrafficEvent[] }
  | { readonly kind: "listener-closed" }
  | { readonly kind: "log"; readonly text: string }
  | { readonly kind: "drained" };

/** A loop that does not answer a metrics question in this long is left out of that exposition. */
const ANSWER_MS = 2000;

/** The main thread's side: its own loop's share, and the extra loops once started. */
export class EventLoops {
  readonly share: LoopShare;
  readonly #shared = new SharedLoad();
  readonly #loops: Worker[] = [];
  readonly #pending = new Map<number, (metrics: LoopMetrics) => void>();
  readonly #logger: Logger;
  readonly #stdout: Sink;
  #own: (() => Promise<LoopMetrics>) | undefined;
  #recorder: TrafficObserver | undefined;
  #dashboard: { readonly server: Bun.Server<undefined>; readonly token: string } | undefined;
  #nextId = 0;

  /** `stdout`: where the extra loops' log lines are written, the main loop's own stdout. */
  constructor(logger: Logger, stdout: Sink) {
    this.#logger = logger;
    this.#stdout = stdout;
    this.share = {
      index: 0,
      shared: this.#shared,
      provideMetrics: (values) => {
        this.#own = values;
      },
      metricsText: () => this.#gather(),
      provideDashboard: (recorder, http, watcherOf) => {
        const token = randomBytes(24).toString("hex");
        this.#recorder = recorder;
        this.#dashboard = { server: privateDashboard(http, token, watcherOf), token };
      },
    };
  }

  /**
   * Starts `count` more loops running `entry` (the program's own entry point: it sees its
   * `workerData` and serves as an extra loop); resolves once every one listens.
   */
  async start(entry: string, config: ProxyConfig, count: number): Promise<void> {
    const own = this.#dashboard;
    const dashboard = own === undefined ? undefined : { url: own.server.url.origin, token: own.token };
    const started = Array.from({ length: count }, (_, i) =>
      this.#startOne(entry, { kind: "disagg-proxy-event-loop", index: i + 1, config, buffer: this.#shared.buffer, dashboard }),
    );
    await Promise.all(started);
  }

  /** SIGHUP: each extra loop takes the new worker lists and re-reads its TLS files and client keys. */
  reload(context: readonly string[], generation: readonly string[]): void {
    for (const loop of this.#loops) send(loop, { kind: "reload", context, generation });
  }

  /** SIGTERM: every extra loop drains as the main one does; resolves when all have stopped. */
  async drain(timeoutMs: number): Promise<void> {
    await this.#untilAll("drained", { kind: "drain", timeoutMs });
    await this.stop();
  }

  /** An upgrade took the port: every extra loop stops listening, then drains (serve.ts handOver). */
  handOver(timeoutMs: number): { readonly listenerClosed: Promise<void>; readonly finished: Promise<void> } {
    const listenerClosed = this.#untilAll("listener-closed", { kind: "hand-over", timeoutMs });
    const finished = this.#untilAll("drained", undefined).then(() => this.stop());
    return { listenerClosed, finished };
  }

  /** Resolves once every extra loop said `answer` (or exited), after `ask` was sent to each. */
  async #untilAll(answer: "drained" | "listener-closed", ask: ToLoop | undefined): Promise<void> {
    await Promise.all(
      this.#loops.map(
        (loop) =>
          new Promise<void>((resolve) => {
            loop.on("message", (message: FromLoop) => {
              if (message.kind === answer) resolve();
            });
            loop.once("exit", () => resolve());
            if (ask !== undefined) send(loop, ask);
          }),
      ),
    );
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#loops.splice(0).map((loop) => loop.terminate()), this.#dashboard?.server.stop(true)]);
  }

  #startOne(entry: string, data: LoopData): Promise<void> {
    const loop = new Worker(entry, { workerData: data });
    this.#loops.push(loop);
    return new Promise((resolve, reject) => {
      loop.on("message", (message: FromLoop) => {
        if (message.kind === "listening") resolve();
        else if (message.kind === "failed") reject(new Error(`event loop ${data.index}: ${message.message}`));
        else if (message.kind === "values") this.#pending.get(message.id)?.(message.metrics);
        else if (message.kind === "gather") void this.#answerGather(loop, message.id);
        else if (message.kind === "traffic" && this.#recorder !== undefined) replay(message.events, this.#recorder);
        else if (message.kind === "log") this.#stdout(message.text);
      });
      loop.on("error", (error) => {
        this.#logger.error("an event loop failed", { loop: data.index, error });
        reject(error);
      });
      // Stopped by stop() it has left #loops; otherwise its connections are gone and the others serve on.
      loop.once("exit", (code) => {
        const at = this.#loops.indexOf(loop);
        if (at < 0) return;
        this.#loops.splice(at, 1);
        this.#logger.error("an event loop stopped; the others serve on", { loop: data.index, code });
      });
    });
  }

  async #answerGather(loop: Worker, id: number): Promise<void> {
    const text = await this.#gather().catch((error: unknown) => {
      this.#logger.error("gathering the event loops' metrics failed", { error });
      return "";
    });
    send(loop, { kind: "gathered", id, text });
  }

  async #gather(): Promise<string> {
    const own = this.#own === undefined ? [] : [await this.#own()];
    const others = await Promise.all(this.#loops.map((loop) => this.#valuesOf(loop)));
    return renderAll([...own, ...others.filter((values): values is LoopMetrics => values !== undefined)]);
  }

  async #valuesOf(loop: Worker): Promise<LoopMetrics | undefined> {
    const id = this.#nextId++;
    const answered = new Promise<LoopMetrics>((resolve) => this.#pending.set(id, resolve));
    send(loop, { kind: "values", id });
    const metrics = await withDeadline(answered, ANSWER_MS);
    this.#pending.delete(id);
    if (metrics !== "late") return metrics;
    this.#logger.warn("an event loop did not send its metrics in time; left out of this scrape");
    return undefined;
  }
}

/** An extra loop's side of the conversation with the main thread. */
export function extraLoopShare(data: LoopData, port: MessagePort): LoopShare {
  const shared = new SharedLoad(data.buffer);
  const asked = new Map<number, (text: string) => void>();
  let own: (() => Promise<LoopMetrics>) | undefined;
  let nextId = 0;
  port.on("message", (message: ToLoop) => {
    if (message.kind === "values") {
      void (own?.() ?? Promise.resolve([])).then((metrics) => send(port, { kind: "values", id: message.id, metrics }));
    } else if (message.kind === "gathered") {
      asked.get(message.id)?.(message.text);
      asked.delete(message.id);
    }
  });
  const dashboard = data.dashboard;
  return {
    index: data.index,
    shared,
    traffic: dashboard === undefined ? undefined : forwardingObserver((events) => send(port, { kind: "traffic", events })),
    forwardDashboard: dashboard === undefined ? undefined : dashboardForwarder(dashboard.url, dashboard.token),
    provideMetrics(values) {
      own = values;
    },
    metricsText() {
      const id = nextId++;
      return new Promise((resolve) => {
        asked.set(id, resolve);
        send(port, { kind: "gather", id });
      });
    },
  };
}

/** Posts to a loop or to the main thread (a Worker's port takes no origin). */
export function send(target: Worker | MessagePort, message: ToLoop | FromLoop): void {
  // oxlint-disable-next-line unicorn/require-post-message-target-origin -- a worker thread's port, not a window
  target.postMessage(message, []);
}

/**
 * An extra loop's log lines, sent to the main thread once per turn: its stdout is the one
 * writer (a Worker's own stdout writes are asynchronous and were lost when the process exited
 * right after a drain). `flush` sends what is held at once (before the loop says it drained).
 */
export function mainThreadLog(port: MessagePort): TurnBatch {
  return turnBatched((text) => send(port, { kind: "log", text }));
}
