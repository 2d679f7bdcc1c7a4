import type { ProxyConfig } from "../config/types.ts";
import { ProxyError } from "../errors.ts";
import { isJsonObject, type JsonObject } from "../json/json.ts";
import { answersStarting, getFromWorker, INFO_ANSWER_BYTES, readJsonAnswer } from "./answers.ts";
import { acceptedVersion } from "./version-text.ts";
import type { Logger } from "../observability/logger.ts";
import { steadySeconds } from "../observability/steady-clock.ts";
import type { WorkerEntry, WorkerPool } from "./worker-pool.ts";
import { workerProtocol } from "./protocol.ts";
import { syncWorkerClock } from "./clock-sync.ts";
import { fetchServedModels } from "./served-models.ts";
import type { WorkerFetch } from "./transport.ts";

type HealthSettings = Pick<ProxyConfig, "healthCheckTimeoutMs" | "healthCheckFailures" | "healthCheckSuccesses"> &
  Partial<Pick<ProxyConfig, "returnPerfMetrics" | "perfMetricsOutputDir" | "perfMetricsMaxRequests" | "workerProtocol">>;

/**
 * Hears every finished check: whether it passed, whether the worker is in rotation after it,
 * and whether it answered that it is still starting.
 */
export type HealthCheckListener = (origin: string, ok: boolean, ready: boolean, starting: boolean) => void;

/** A /health answer: 200, trtllm-serve's start-up 503 (readiness.py), or anything else (no answer included). */
type Probe = "ok" | "starting" | "down";

interface Streak {
  failures: number;
  successes: number;
}

/**
 * Worker health after start-up: each origin's /health is checked; a worker failing
 * `healthCheckFailures` checks in a row leaves rotation, one passing `healthCheckSuccesses`
 * in a row (re)joins it, with its /server_info, /version and /v1/models fetched on the way in
 * (the version decides which optional fields it is sent, workers/protocol.ts; its models which
 * requests it may take, routing/model-choice.ts; and, when per-request
 * perf metrics are on, its steady clock aligned with ours, as trtllm-serve prepares a server).
 */
export class HealthMonitor {
  readonly #pool: WorkerPool;
  readonly #settings: HealthSettings;
  readonly #logger: Logger;
  readonly #streaks = new Map<string, Streak>();
  /** Origins whose check is under way: rounds overlap (a change of the worker list starts one at once, beside the periodic one). */
  readonly #checking = new Set<string>();
  /** Who waits for the end of the next round (the start-up wait). */
  readonly #roundWaiters: (() => void)[] = [];
  /** Listed origins that joined rotation once: a later join is a return. */
  readonly #joinedOnce = new Set<string>();
  readonly #fetch: WorkerFetch;
  readonly #onChecked: HealthCheckListener | undefined;

  constructor(pool: WorkerPool, settings: HealthSettings, logger: Logger, workerFetch: WorkerFetch, onChecked?: HealthCheckListener) {
    this.#fetch = workerFetch;
    this.#onChecked = onChecked;
    this.#pool = pool;
    this.#settings = settings;
    this.#logger = logger;
  }

  /** One round over every origin, all checked at once. */
  async checkAll(signal: AbortSignal): Promise<void> {
    const origins = this.#pool.origins();
    const listed = new Set(origins);
    // What is kept per origin lasts while it is listed: discovered workers come and go for good.
    for (const origin of this.#streaks.keys()) if (!listed.has(origin)) this.#streaks.delete(origin);
    for (const origin of this.#joinedOnce) if (!listed.has(origin)) this.#joinedOnce.delete(origin);
    await Promise.all(origins.map((origin) => this.#check(origin, signal)));
    for (const resolve of this.#roundWaiters.splice(0)) resolve();
  }

  /** Resolves when the next round ends (a changed worker list starts one: registrations handed over, discovered). */
  nextRound(): Promise<void> {
    return new Promise((resolve) => this.#roundWaiters.push(resolve));
  }

  async #check(origin: string, signal: AbortSignal): Promise<void> {
    // One check of a worker at a time: two would both join it (its /server_info, /version and
    // /v1/models asked twice at once, "worker ready" logged twice, the first model list's
    // failure hidden by the second's answer).
    if (this.#checking.has(origin)) return;
    this.#checking.add(origin);
    try {
      await this.#checkOnce(origin, signal);
    } finally {
      this.#checking.delete(origin);
    }
  }

  async #checkOnce(origin: string, signal: AbortSignal): Promise<void> {
    const answer = await probe(this.#fetch, origin, this.#settings.healthCheckTimeoutMs, signal);
    if (signal.aborted) return;
    const healthy = answer === "ok";
    this.#noteStarting(origin, answer === "starting");
    const streak = this.#streaks.get(origin) ?? { failures: 0, successes: 0 };
    this.#streaks.set(origin, streak);
    streak.failures = healthy ? 0 : streak.failures + 1;
    streak.successes = healthy ? streak.successes + 1 : 0;
    const entries = this.#pool.entriesOf(origin);
    const ready = entries.some((entry) => entry.ready);
    if (ready && streak.failures >= this.#settings.healthCheckFailures) {
      for (const entry of entries) entry.ready = false;
      // A worker that restarted says so: out of rotation until ready, which is no failure.
      if (answer === "starting")
        this.#logger.info("worker restarting: out of rotation until it is ready", { worker: origin, state: "starting" });
      else this.#logger.warn("worker out of rotation: its health checks failed", { worker: origin, failed_checks: streak.failures });
    } else if (!ready && streak.successes >= this.#settings.healthCheckSuccesses) {
      const info = await this.#getJson(origin, "/server_info", signal);
      const reported = this.#versionOf(origin, await this.#getJson(origin, "/version", signal));
      // Learnt afresh on every (re)join too: a worker may come back serving another model.
      const models = await fetchServedModels(this.#fetch, origin, this.#settings.healthCheckTimeoutMs, signal);
      if (models !== undefined) this.#pool.learnModels(origin, models);
      if (perfMetricsOn(this.#settings)) {
        await syncWorkerClock(origin, {
          fetch: this.#fetch,
          clock: steadySeconds,
          logger: this.#logger,
          timeoutMs: this.#settings.healthCheckTimeoutMs,
          signal,
        });
      }
      const joined = this.#pool.entriesOf(origin);
      const override =
        this.#settings.workerProtocol === undefined || this.#settings.workerProtocol === "auto" ? undefined : this.#settings.workerProtocol;
      // Learnt afresh on every (re)join: a worker may come back upgraded or downgraded.
      const advertised = joined.find((entry) => entry.advertisedVersion !== undefined)?.advertisedVersion;
      const protocol = workerProtocol(
        reported ?? (advertised === undefined ? undefined : this.#versionOf(origin, { version: advertised })),
        override,
      );
      for (const entry of joined) {
        entry.serverInfo = info ?? entry.serverInfo;
        entry.protocol = protocol;
        entry.ready = true;
      }
      this.#logger.info(this.#joinedWords(origin, joined), {
        worker: origin,
        roles: entries.map((entry) => entry.role),
        version: protocol.version ?? "unknown",
        accepts: [...protocol.accepts].join(",") || "no optional fields",
        models: joined[0]?.models?.join(",") ?? "unknown",
      });
    } else if (ready && healthy && entries[0]?.models === undefined && this.#pool.servedModels().length > 1) {
      // In a fleet of several models a worker whose model is unknown takes no request: its
      // GET /v1/models failed as it joined, so it is asked again at each passed check.
      const models = await fetchServedModels(this.#fetch, origin, this.#settings.healthCheckTimeoutMs, signal);
      if (models !== undefined) {
        this.#pool.learnModels(origin, models);
        this.#logger.info("worker models learnt", { worker: origin, models: models.join(",") });
      }
    }
    this.#onChecked?.(
      origin,
      healthy,
      this.#pool.entriesOf(origin).some((entry) => entry.ready),
      answer === "starting",
    );
  }

  /**
   * How a passed check's (re)join is said: the first time `worker ready`; then `back in rotation`,
   * or, while its requests' ejection lasts (outlier-detector.ts), that it still takes none.
   */
  #joinedWords(origin: string, entries: readonly WorkerEntry[]): string {
    const first = !this.#joinedOnce.has(origin);
    this.#joinedOnce.add(origin);
    if (entries.some((entry) => entry.outlier?.ejected !== undefined))
      return "worker healthy but still ejected: back in rotation once its ejection ends";
    return first ? "worker ready" : "worker back in rotation: its health check passed";
  }

  /** Marks an origin's entries starting or not; logged once as it starts (upstream's 503s then say nothing new). */
  #noteStarting(origin: string, starting: boolean): void {
    const entries = this.#pool.entriesOf(origin);
    const was = entries.some((entry) => entry.starting === true);
    for (const entry of entries) entry.starting = starting;
    if (starting && !was)
      this.#logger.info("worker starting: it answers 503 until its model is loaded", { worker: origin, state: "starting" });
  }

  /**
   * GET /version answers {"version": "1.3.0rc26"} (tensorrt_llm/serve/openai_server.py);
   * anything else is unknown. A version that is not a short PEP 440 string never reaches the
   * metrics, the log or the dashboard: it is logged by its length and reads "unknown".
   */
  #versionOf(origin: string, answer: JsonObject | undefined): string | undefined {
    const version = answer?.["version"];
    if (version === undefined || version === null) return undefined;
    const accepted = acceptedVersion(version);
    if (accepted === undefined && !(typeof version === "string" && version.trim() === ""))
      this.#logger.warn("worker version ignored: not a PEP 440 version of at most 64 characters", {
        worker: origin,
        type: typeof version,
        length: typeof version === "string" ? version.length : undefined,
      });
    return accepted;
  }

  /** A worker's answer to one of the proxy's own reads, bounded as a model answer is; undefined (and a warning when refused) otherwise. */
  async #getJson(origin: string, path: string, signal: AbortSignal): Promise<JsonObject | undefined> {
    try {
      const response = await getFromWorker(this.#fetch, origin, path, this.#settings.healthCheckTimeoutMs, signal);
      if (response === undefined) return undefined;
      const answer = await readJsonAnswer(response, INFO_ANSWER_BYTES);
      return isJsonObject(answer) ? answer : undefined;
    } catch (error) {
      if (error instanceof ProxyError) this.#logger.warn(`worker ${path} refused`, { worker: origin, error: error.message });
      return undefined;
    }
  }
}

function perfMetricsOn(settings: HealthSettings): boolean {
  return settings.returnPerfMetrics === true || settings.perfMetricsOutputDir !== undefined || (settings.perfMetricsMaxRequests ?? 0) > 0;
}

async function probe(fetch: WorkerFetch, origin: string, timeoutMs: number, signal: AbortSignal): Promise<Probe> {
  try {
    const response = await fetch(`${origin}/health`, { signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) });
    await response.body?.cancel();
    if (response.status === 200) return "ok";
    return answersStarting(response) ? "starting" : "down";
  } catch {
    return "down";
  }
}
