/** The emulated trtllm-serve worker: one Bun server, its routes, and everything it remembers. */

import type { Server } from "bun";
import type { JsonValue } from "../json/json.ts";
import { health, countTokens, iterationStats, kvCacheEvents, kvClaim, kvHandoff, models, serverInfo, version } from "./http/info-routes.ts";
import { ConnectionFront } from "./faults/connection-faults.ts";
import { HeldKv } from "./kv/held-kv.ts";
import { KV_CLAIM_PATH } from "./kv/kv-claim.ts";
import { loadGauges, PROMETHEUS_PATH } from "./perf/load-gauges.ts";
import { KV_HANDOFF_PATH } from "./kv/kv-fetch.ts";
import { KvBlockCache } from "./kv/kv-cache.ts";
import { generationOf, type WorkerGeneration } from "./engine/protocol-generation.ts";
import { KvHandoffTable } from "./kv/kv-handoff.ts";
import { WorkerPerfState } from "./perf/perf-state.ts";
import { PREFILL_TALLY_PATH, PrefillTally } from "./perf/prefill-tally.ts";
import { perfMetrics, setSteadyClockOffset, steadyClockProbe } from "./perf/perf-routes.ts";
import type { ApiKind } from "./http/model-request.ts";
import { drainingResponse, ReadinessGate, startingResponse } from "./http/readiness.ts";
import { RequestLog } from "./http/request-log.ts";
import { readJsonBody, serveModelRequest } from "./http/serve-model.ts";
import type { EmulatedWorker, EmulatorOptions, PhaseRole, RecordedRequest, Registrar, WorkerRole } from "./types.ts";
import type { WorkerContext } from "./worker-context.ts";
import { detailResponse, errorEnvelope } from "./http/worker-error.ts";

const MODEL_ROUTES: Readonly<Record<string, ApiKind>> = {
  "/v1/completions": "completions",
  "/v1/chat/completions": "chat",
  "/v1/responses": "responses",
};

/** Model requests running now, for soaks checking that nothing outlives its client. */
const RUNNING_PATH = "/emulator/running";
const GET_ROUTES = new Set([
  "/health",
  "/server_info",
  "/v1/models",
  "/version",
  "/perf_metrics",
  "/metrics",
  PREFILL_TALLY_PATH,
  RUNNING_PATH,
  PROMETHEUS_PATH,
]);
const CLOCK_PATH = "/steady_clock_offset";
const COUNT_TOKENS_PATH = "/v1/messages/count_tokens";
const KV_EVENTS_PATH = "/kv_cache_events";
const DEFAULT_KV_WAIT_MS = 60_000;
/** Bounded for idle keep-alive connections; model routes and the KV poll lift it per request. */
const IDLE_TIMEOUT_S = 30;

export function startEmulatedWorker(options: EmulatorOptions): EmulatedWorker {
  return new EmulatedWorkerServer(options);
}

class EmulatedWorkerServer implements EmulatedWorker, WorkerContext {
  readonly options: EmulatorOptions;
  readonly url: string;
  readonly port: number;
  readonly model: string;
  readonly log: RequestLog;
  readonly handoffs: KvHandoffTable;
  readonly heldKv: HeldKv;
  readonly kvCache: KvBlockCache;
  readonly perf: WorkerPerfState;
  readonly prefill = new PrefillTally();
  readonly generation: WorkerGeneration;
  readonly #server: Server<undefined>;
  /** The TCP front playing connection faults, when any is set. */
  readonly #front: ConnectionFront | undefined;
  readonly #stopping = new AbortController();
  readonly #startedAt = Math.floor(Date.now() / 1000);
  readonly #registrations: readonly ReturnType<Registrar>[];
  readonly #readiness: ReadinessGate;
  /** Refusing new model requests, as upstream's RequestTracker does once its drain began. */
  #draining = false;
  #lastLocalId = 0n;
  #stopped: Promise<void> | undefined;

  constructor(options: EmulatorOptions) {
    this.options = options;
    this.log = new RequestLog(options.maxRecords);
    this.model = options.model ?? "emulated-model";
    this.generation = generationOf(options.protocolVersion);
    this.#readiness = new ReadinessGate(options.startingMs);
    this.handoffs = new KvHandoffTable(options.kvWaitTimeoutMs ?? DEFAULT_KV_WAIT_MS);
    this.heldKv = new HeldKv(options.kvTransferTimeoutMs);
    this.perf = new WorkerPerfState(options);
    this.kvCache = new KvBlockCache({
      tokensPerBlock: options.tokensPerBlock ?? 32,
      capacityBlocks: options.kvCacheBlocks ?? 8192,
      maxEvents: options.kvEventBuffer ?? 4096,
    });
    const hostname = options.host ?? "127.0.0.1";
    const faults = options.faults ?? {};
    const fronted = faults.keepAliveTimeoutMs !== undefined || faults.resetKeptAlive === true || faults.resetKeptAliveAfterMs !== undefined;
    this.#server = Bun.serve({
      hostname: fronted ? "127.0.0.1" : hostname,
      port: fronted ? 0 : (options.port ?? 0),
      development: false,
      // Said outright: with development off, Bun shares the port (SO_REUSEPORT) unless told not
      // to, so a worker started on a port a proxy serves took half its connections (Bun 1.4.5).
      reusePort: false,
      idleTimeout: IDLE_TIMEOUT_S,
      fetch: (req, server) => this.#route(req, server),
      error: (error) => Response.json(errorEnvelope(500, `Internal error: ${error.message}`), { status: 500 }),
    });
    this.#front = fronted ? new ConnectionFront(hostname, options.port ?? 0, this.#server.port ?? 0, faults) : undefined;
    this.port = this.#front?.port ?? this.#server.port ?? 0;
    this.url = `http://${reachableHost(hostname)}:${this.port}`;
    // As trtllm-serve does, the worker registers the host it was told to listen on, a wildcard
    // included (tensorrt_llm/serve/disagg_auto_scaling.py @ 00184339, WorkerInfo.host).
    this.#registrations = register(options, hostname, this.port);
  }

  get role(): WorkerRole {
    return this.options.role;
  }

  get requests(): readonly RecordedRequest[] {
    return this.log.records;
  }

  nextLocalId(): bigint {
    this.#lastLocalId += 1n;
    return this.#lastLocalId;
  }

  waitFor(predicate: (r: RecordedRequest) => boolean, timeoutMs?: number): Promise<RecordedRequest> {
    return this.log.waitFor(predicate, timeoutMs);
  }

  running(): number {
    return this.log.running();
  }

  peakRunning(): number {
    return this.log.peakRunning();
  }

  heldKvHandoffs(): number {
    return this.heldKv.size;
  }

  connectionFaults(): { readonly opened: number; readonly idleClosed: number; readonly resets: number } {
    return this.#front?.counts ?? { opened: 0, idleClosed: 0, resets: 0 };
  }

  finishStarting(): void {
    this.#readiness.open();
  }

  restartInPlace(): void {
    this.#readiness.shut();
  }

  startDraining(): void {
    this.#draining = true;
  }

  deregister(): Promise<void> {
    return Promise.all(this.#registrations.map((registration) => registration.stop())).then(() => undefined);
  }

  stop(): Promise<void> {
    // Deregistered first (the proxy stops routing here), then in-flight requests end (marked
    // aborted), then the listener and sockets.
    this.#stopped ??= (async () => {
      await Promise.all(this.#registrations.map((registration) => registration.stop()));
      this.#stopping.abort();
      this.#readiness.open();
      this.handoffs.close();
      this.heldKv.close();
      this.log.close();
      this.#front?.stop();
      await this.#server.stop(true);
    })();
    return this.#stopped;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  #route(req: Request, server: Server<undefined>): Response | Promise<Response> {
    // Every route while the model "loads", /health included: nothing is recorded or served.
    if (!this.#readiness.ready) return startingResponse();
    const path = new URL(req.url).pathname;
    const api = MODEL_ROUTES[path];
    if (api === undefined) return this.#serveOther(req, path, server);
    if (req.method !== "POST") return detailResponse(405, "Method Not Allowed");
    if (this.#draining) return drainingResponse();
    // A model request may be silent for as long as its prefill or a fault lasts.
    server.timeout(req, 0);
    return serveModelRequest(this, req, api, this.#stopping.signal);
  }

  /** Non-model requests are recorded too (phase "other"), and settled once answered. */
  async #serveOther(req: Request, path: string, server: Server<undefined>): Promise<Response> {
    const body = req.method === "POST" ? await readJsonBody(req) : undefined;
    const record = this.log.add({
      method: req.method,
      path,
      headers: Object.fromEntries(req.headers),
      body,
      phase: "other",
      disaggRequestId: undefined,
    });
    try {
      return await this.#answerOther(req, path, body, server);
    } finally {
      this.log.settle(record, req.signal.aborted ? "aborted" : "finished");
    }
  }

  #answerOther(req: Request, path: string, body: JsonValue | undefined, server: Server<undefined>): Response | Promise<Response> {
    if (path.startsWith(KV_HANDOFF_PATH)) {
      // The long poll lasts as long as the context phase it waits for.
      server.timeout(req, 0);
      return req.method === "GET" ? kvHandoff(this, req, path) : detailResponse(405, "Method Not Allowed");
    }
    if (path.startsWith(KV_CLAIM_PATH)) {
      return req.method === "POST" ? kvClaim(this, path.slice(KV_CLAIM_PATH.length)) : detailResponse(405, "Method Not Allowed");
    }
    if (path === KV_EVENTS_PATH) {
      return req.method === "POST" ? kvCacheEvents(this) : detailResponse(405, "Method Not Allowed");
    }
    if (path === CLOCK_PATH) {
      if (req.method === "GET") return steadyClockProbe(this, req.signal);
      return req.method === "POST" ? setSteadyClockOffset(this, body) : detailResponse(405, "Method Not Allowed");
    }
    if (path === COUNT_TOKENS_PATH) {
      return req.method === "POST" ? countTokens(body) : detailResponse(405, "Method Not Allowed");
    }
    if (!GET_ROUTES.has(path)) return detailResponse(404, "Not Found");
    if (req.method !== "GET") return detailResponse(405, "Method Not Allowed");
    if (path === "/health") return health();
    if (path === "/server_info") return serverInfo(this);
    if (path === "/v1/models") return models(this, this.#startedAt);
    if (path === "/perf_metrics") return perfMetrics(this);
    if (path === "/metrics") return iterationStats(this);
    if (path === PREFILL_TALLY_PATH) return Response.json(this.prefill.toJson());
    if (path === RUNNING_PATH) return Response.json({ running: this.log.running(), peak: this.log.peakRunning() });
    if (path === PROMETHEUS_PATH) return loadGauges(this);
    return version(this.generation);
  }
}

/** Registers the worker once per role it serves, when a registrar was given. */
function register(options: EmulatorOptions, host: string, port: number): ReturnType<Registrar>[] {
  const registrar = options.register;
  if (registrar === undefined) return [];
  const roles: PhaseRole[] = options.role === "mixed" ? ["context", "generation"] : [options.role];
  return roles.map((role) => registrar({ role, host, port }));
}

/** The host other processes can reach: a wildcard listen address is reported as loopback. */
function reachableHost(hostname: string): string {
  if (hostname === "0.0.0.0" || hostname === "::") return "127.0.0.1";
  return hostname.includes(":") ? `[${hostname}]` : hostname;
}
