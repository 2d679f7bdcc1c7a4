/**
 * The serving side of trtllm-serve's coordinator protocol (fleet mode): a placement is asked of
 * the coordinator (`POST /select`) and each placed leg is finished there once (`POST /finish`),
 * as upstream's CoordinatorDelegatingRouter does (tensorrt_llm/serve/router.py, id 54957247436;
 * tensorrt_llm/serve/disagg_coordinator.py @ 0186c597). Unlike upstream, an unreachable
 * coordinator is not an outage: the caller places on its own routers, one warning says so, and
 * a probe every `timeoutMs` brings placement back once it answers (docs/cluster.md, "One routing brain").
 */

import type { Role } from "../config/types.ts";
import { readBounded } from "../json/bounded-read.ts";
import { withDeadline } from "../timers.ts";
import { readMsgpack, type MsgpackValue } from "../json/msgpack-read.ts";
import {
  encodeFinishRequest,
  encodeSelectRequest,
  errorTextOf,
  isRefusal,
  MSGPACK_CONTENT_TYPE,
  readClusterInfo,
  readSelectAnswer,
  type ClusterInfo,
  type RoutingKey,
  type WireMap,
} from "./coordinator-wire.ts";

/** A /select or /finish answer is a few hundred bytes; anything past this is not a coordinator's. */
const ANSWER_BYTES = 64 * 1024;
/** Upstream's finish: 3 attempts, 0.1 s then 0.2 s apart, each within min(timeout, 5 s) (router.py). */
const FINISH_ATTEMPTS = 3;
const FINISH_BACKOFF_MS = 100;
const FINISH_TIMEOUT_MS = 5000;
/** Finishes under way at once; beyond it one is dropped and left to the coordinator's 180 s expiry (upstream's queue of 4096). */
export const MAX_PENDING_FINISHES = 4096;

export interface CoordinatorSettings {
  /** `http(s)://host:port` or `unix:/abs/path.sock` (upstream's COORDINATOR_UDS_SCHEME). */
  readonly url: string;
  readonly timeoutMs: number;
}

export interface CoordinatorEvents {
  /** The coordinator stopped answering: placement is local until it answers (said once per outage). */
  readonly onUnreachable: (url: string, error: string) => void;
  readonly onBack: (url: string) => void;
  /** GET /cluster_info answered (at start and when it answers again): how its routers want their keys. */
  readonly onClusterInfo?: (info: ClusterInfo) => void;
  /** A finish could not be delivered (after its attempts, or the pending bound was reached). */
  readonly onFinishLost?: (role: Role, reqId: bigint, error: string) => void;
}

/**
 * A leg the coordinator placed: its finish, sent once whatever the calls. `success` may be read
 * at the end of the turn (a streamed leg says it completed after its request released it).
 */
export interface CoordinatorLease {
  finish(success: boolean | (() => boolean)): void;
}

export type SelectOutcome =
  | { readonly kind: "placed"; readonly server: string; readonly info: WireMap; readonly lease: CoordinatorLease }
  /** The coordinator answered that no worker can take it (its 503, or 429 at a per-worker limit). */
  | { readonly kind: "refused"; readonly status: number; readonly message: string }
  /** Down, slow or broken: place here. */
  | { readonly kind: "unreachable" };

export interface SelectRequest {
  readonly role: Role;
  readonly routingKey: RoutingKey;
  /** The request's disagg_request_id: the key of the coordinator's reservation. */
  readonly reqId: bigint;
  /** `host:port` of the paired leg's worker (the coordinator never pairs a worker with itself). */
  readonly excludeServer: string | undefined;
}

export class CoordinatorClient {
  readonly #settings: CoordinatorSettings;
  readonly #events: CoordinatorEvents;
  readonly #base: string;
  readonly #unix: string | undefined;
  #reachable = true;
  #probe: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  #pendingFinishes = 0;
  /** Finishes under way by role and req_id: a leg placed again (a retry) waits for its last one, or the coordinator would release the new placement with it. */
  readonly #finishing = new Map<string, Promise<void>>();

  constructor(settings: CoordinatorSettings, events: CoordinatorEvents) {
    this.#settings = settings;
    this.#events = events;
    const unix = settings.url.startsWith("unix:") ? settings.url.slice("unix:".length) : undefined;
    this.#unix = unix;
    // Over a Unix socket the host is a placeholder (upstream's coordinator_base_url).
    this.#base = unix === undefined ? settings.url.replace(/\/+$/, "") : "http://localhost";
  }

  get url(): string {
    return this.#settings.url;
  }

  /** Whether placements are asked of the coordinator now (false while it is unreachable). */
  get reachable(): boolean {
    return this.#reachable;
  }

  /** Finishes sent and not yet answered or given up. */
  get pendingFinishes(): number {
    return this.#pendingFinishes;
  }

  /**
   * Asks GET /cluster_info once at start-up, as upstream's client does before it serves: its
   * routers' key settings are taken, and an unreachable coordinator is said at once rather than
   * at the first request (upstream exits; here placement is local until it answers).
   */
  start(): void {
    void this.#syncClusterInfo().then((problem) => {
      if (problem !== undefined) this.#lost(problem);
      return undefined;
    });
  }

  /** undefined when /cluster_info answered and was read, else what went wrong. */
  async #syncClusterInfo(): Promise<string | undefined> {
    const info = await this.clusterInfo();
    if (typeof info !== "string") this.#events.onClusterInfo?.(info);
    return typeof info === "string" ? info : undefined;
  }

  /** GET /cluster_info read, or what went wrong. */
  async clusterInfo(): Promise<ClusterInfo | string> {
    try {
      const response = await this.#call("GET", "/cluster_info", undefined, this.#settings.timeoutMs);
      const answer = await this.#answerOf(response);
      if (response.status !== 200) return `GET /cluster_info answered ${response.status}`;
      const info = answer === undefined ? undefined : readClusterInfo(answer);
      if (info === undefined || isRefusal(info)) return "GET /cluster_info answered no cluster info";
      return info;
    } catch (error) {
      return messageOf(error);
    }
  }

  /** GET /health: undefined when it answers 200, else what went wrong. */
  async #healthy(): Promise<string | undefined> {
    try {
      const response = await this.#call("GET", "/health", undefined, this.#settings.timeoutMs);
      await response.body?.cancel();
      return response.ok ? undefined : `GET /health answered ${response.status}`;
    } catch (error) {
      return messageOf(error);
    }
  }

  close(): void {
    this.#closed = true;
    if (this.#probe !== undefined) clearTimeout(this.#probe);
    this.#probe = undefined;
  }

  /** One placement: the coordinator's pick, its refusal, or "unreachable" (after at most timeoutMs). */
  async select(request: SelectRequest): Promise<SelectOutcome> {
    if (!this.#reachable) return UNREACHABLE;
    const finishing = this.#finishing.get(finishKey(request.role, request.reqId));
    if (finishing !== undefined) await withDeadline(finishing, this.#settings.timeoutMs);
    const body = encodeSelectRequest(request);
    let response: Response;
    try {
      response = await this.#call("POST", "/select", body, this.#settings.timeoutMs);
    } catch (error) {
      // It may have placed it before the wait ran out: its reservation is finished, not left to expire.
      this.#finish(request.role, request.reqId, false);
      this.#lost(messageOf(error));
      return UNREACHABLE;
    }
    const answer = await this.#answerOf(response);
    const placed = response.status === 200 && answer !== undefined ? readSelectAnswer(answer) : undefined;
    if (placed !== undefined && !isRefusal(placed)) {
      return { kind: "placed", server: placed.server, info: placed.info, lease: this.#lease(request.role, request.reqId) };
    }
    // 503: upstream's "No available servers" (its router's ValueError); 429: a per-worker limit.
    if (response.status === 503 || response.status === 429) {
      const message = (answer === undefined ? undefined : errorTextOf(answer)) ?? `coordinator answered ${response.status}`;
      return { kind: "refused", status: response.status, message };
    }
    this.#finish(request.role, request.reqId, false);
    const why = placed === undefined ? "" : `: ${placed.error}`;
    this.#lost(`POST /select answered ${response.status}${answer === undefined ? " (not a coordinator's answer)" : why}`);
    return UNREACHABLE;
  }

  #lease(role: Role, reqId: bigint): CoordinatorLease {
    let finished = false;
    return {
      finish: (success) => {
        if (finished) return;
        finished = true;
        this.#finish(role, reqId, success);
      },
    };
  }

  /** Off the request's path, bounded; a restarted coordinator does not know the id, and answers 200 all the same. */
  #finish(role: Role, reqId: bigint, success: boolean | (() => boolean)): void {
    if (this.#closed) return;
    if (this.#pendingFinishes >= MAX_PENDING_FINISHES) {
      this.#events.onFinishLost?.(role, reqId, `${MAX_PENDING_FINISHES} finishes already pending`);
      return;
    }
    this.#pendingFinishes++;
    const key = finishKey(role, reqId);
    const sending = (async (): Promise<void> => {
      // The end of the turn: how the leg ended is known by then.
      await Promise.resolve();
      await this.#sendFinish(encodeFinishRequest({ role, reqId, success: typeof success === "function" ? success() : success }));
    })().then(
      () => undefined,
      (error: unknown) => this.#events.onFinishLost?.(role, reqId, messageOf(error)),
    );
    this.#finishing.set(key, sending);
    void sending.finally(() => {
      this.#pendingFinishes--;
      if (this.#finishing.get(key) === sending) this.#finishing.delete(key);
    });
  }

  async #sendFinish(body: Uint8Array): Promise<void> {
    const timeout = Math.min(this.#settings.timeoutMs, FINISH_TIMEOUT_MS);
    for (let attempt = 1; ; attempt++) {
      try {
        // oxlint-disable-next-line no-await-in-loop -- attempts are sequential by design
        const response = await this.#call("POST", "/finish", body, timeout);
        await response.body?.cancel();
        if (response.ok) return;
        throw new Error(`POST /finish answered ${response.status}`);
      } catch (error) {
        if (attempt >= FINISH_ATTEMPTS || this.#closed) throw error;
        // oxlint-disable-next-line no-await-in-loop -- the back-off between attempts
        await Bun.sleep(FINISH_BACKOFF_MS * 2 ** (attempt - 1));
      }
    }
  }

  /** The answer decoded, or undefined when it is not MessagePack within ANSWER_BYTES. */
  async #answerOf(response: Response): Promise<MsgpackValue | undefined> {
    try {
      return readMsgpack(await readBounded(response, ANSWER_BYTES, (what) => new Error(`the coordinator's answer ${what}`)));
    } catch {
      return undefined;
    }
  }

  #call(method: "GET" | "POST", path: string, body: Uint8Array | undefined, timeoutMs: number): Promise<Response> {
    return fetch(`${this.#base}${path}`, {
      method,
      ...(body === undefined ? {} : { body, headers: { "content-type": MSGPACK_CONTENT_TYPE } }),
      signal: AbortSignal.timeout(timeoutMs),
      ...(this.#unix === undefined ? {} : { unix: this.#unix }),
    });
  }

  /** Placement turns local; said once, then the probe asks again every timeoutMs. */
  #lost(error: string): void {
    if (!this.#reachable || this.#closed) return;
    this.#reachable = false;
    this.#events.onUnreachable(this.#settings.url, error);
    this.#scheduleProbe();
  }

  #scheduleProbe(): void {
    if (this.#closed) return;
    this.#probe = setTimeout(() => void this.#runProbe(), this.#settings.timeoutMs);
    // A probe never keeps the process alive by itself.
    this.#probe.unref();
  }

  async #runProbe(): Promise<void> {
    this.#probe = undefined;
    const problem = await this.#healthy();
    if (this.#closed) return;
    if (problem !== undefined) {
      this.#scheduleProbe();
      return;
    }
    this.#reachable = true;
    this.#events.onBack(this.#settings.url);
    // A restarted coordinator may key its routers otherwise.
    void this.#syncClusterInfo();
  }
}

const UNREACHABLE: SelectOutcome = Object.freeze({ kind: "unreachable" });

function finishKey(role: Role, reqId: bigint): string {
  return `${role} ${reqId}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
