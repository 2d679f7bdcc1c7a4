/**
 * The `remote_http` router, upstream's RemoteHttpRouter client (tensorrt_llm/serve/router.py,
 * read_file id 56124310390): placement is delegated to a router HTTP server. Each placement
 * POSTs the request body, with `exclude_server` when there is one, to
 * `{remote_url}/get_next_server` within `request_timeout_s` (5 s), and takes `server` from the
 * answer; a `route_hint.dp_rank` goes into the leg's `disaggregated_params.route_hint`, for a
 * worker's attention-DP router. A non-200 answer, an unreachable server or an answer naming no
 * worker of this proxy fails the placement, as upstream's ValueError does; nothing is finished
 * (upstream's finish_request is a no-op). Only the client: the routing service of a fleet of
 * proxies is the coordinator.
 */

import { ProxyError } from "../errors.ts";
import { isJsonObject, type JsonValue } from "../json/json.ts";
import { readJsonBounded, readPrefix } from "../json/bounded-read.ts";
import type { ProxyConfig, Role } from "../config/types.ts";
import type { EventsFetch, RoutingWarning } from "./kv-events.ts";
import type { RouterPick } from "./router-contract.ts";
import { estimatedPromptTokens, type RoutingRequest } from "./routing-request.ts";
import type { WorkerEntry } from "../workers/worker-pool.ts";

/** Upstream's request_timeout_s default. */
export const REMOTE_ROUTER_TIMEOUT_MS = 5000;
/** An answer is `{server, matched_blocks, route_hint}`: far below this. */
const ANSWER_LIMIT_BYTES = 64 * 1024;

export interface RemoteHttpSettings {
  readonly role: Role;
  /** The router server's base URL (`router.remote_url`), without a trailing slash. */
  readonly remoteUrl: string;
  readonly timeoutMs: number;
  readonly fetch: EventsFetch;
  /** Where a failed placement is told with the server's address and answer (the client is told neither). */
  readonly warn: RoutingWarning;
}

/** What a placement tells the router server besides the request. */
export interface PickHints {
  /** The worker it must not choose: the one a retried leg failed on, else the paired leg's. */
  readonly exclude: string | undefined;
  /** The request's: a client gone ends the call. */
  readonly signal: AbortSignal | undefined;
}

export class RemoteHttpRouter {
  readonly #settings: RemoteHttpSettings;

  constructor(settings: RemoteHttpSettings) {
    this.#settings = { ...settings, remoteUrl: settings.remoteUrl.replace(/\/+$/, "") };
  }

  /** The worker the server names among `candidates`, with its route hint; a failure throws a 503 NO_WORKER saying why. */
  async ask(candidates: readonly WorkerEntry[], request: RoutingRequest | undefined, hints: PickHints): Promise<RouterPick> {
    const { remoteUrl, timeoutMs } = this.#settings;
    const payload = { ...request?.body, ...(hints.exclude === undefined ? {} : { exclude_server: serverName(hints.exclude) }) };
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = hints.signal === undefined ? timeout : AbortSignal.any([hints.signal, timeout]);
    let answer: JsonValue;
    try {
      const response = await this.#settings.fetch(`${remoteUrl}/get_next_server`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(payload),
        signal,
      });
      if (response.status !== 200) {
        const detail = new TextDecoder().decode(await readPrefix(response.body, 512));
        throw this.#failure(`it answered ${response.status}`, { status: response.status, detail });
      }
      answer = await readJsonBounded(response, ANSWER_LIMIT_BYTES, (what) => this.#failure("its answer is not JSON", { answer: what }));
    } catch (error) {
      if (error instanceof ProxyError || hints.signal?.aborted === true) throw error;
      const what = timeout.aborted ? `it did not answer within ${timeoutMs} ms` : "it could not be reached";
      throw this.#failure(what, { cause: error instanceof Error ? error.message : String(error) });
    }
    return this.#pickOf(answer, candidates, request);
  }

  /** The worker and route hint the server named; an answer naming no usable worker fails the placement. */
  #pickOf(answer: JsonValue, candidates: readonly WorkerEntry[], request: RoutingRequest | undefined): RouterPick {
    const fields = isJsonObject(answer) ? answer : {};
    const server = fields["server"];
    if (typeof server !== "string") throw this.#failure("its answer names no server", { answer: JSON.stringify(answer).slice(0, 512) });
    const origin = originOf(server);
    const worker = candidates.find((candidate) => candidate.origin === origin);
    if (worker === undefined) {
      const usable = candidates.map((candidate) => candidate.origin);
      throw this.#failure(`it chose a server that is no ${this.#settings.role} worker this leg can use`, { server, usable });
    }
    const routeHint = fields["route_hint"];
    const rank = isJsonObject(routeHint) ? routeHint["dp_rank"] : undefined;
    if (rank !== undefined && rank !== null && !(typeof rank === "number" && Number.isSafeInteger(rank) && rank >= 0))
      throw this.#failure("its route_hint.dp_rank is not a rank", { route_hint: JSON.stringify(routeHint) });
    // The server counts matched blocks (matched_blocks), not tokens: the cached tokens stay unknown (0) here.
    return {
      worker,
      matchedTokens: 0,
      totalTokens: estimatedPromptTokens(request),
      ...(typeof rank === "number" ? { routeHint: { dp_rank: rank } } : {}),
    };
  }

  /** The client hears why in a few words; the log gets the server's address and what it said. */
  #failure(what: string, fields: Record<string, unknown>): ProxyError {
    const { role, remoteUrl } = this.#settings;
    this.#settings.warn(`remote router failed to place a ${role} leg: ${what}`, { router: remoteUrl, role, ...fields });
    return new ProxyError("NO_WORKER", 503, `No ${role} worker is available: the remote router failed (${what})`);
  }
}

/** A router server client for each role whose router is remote_http (it gets neither the workers' API key nor their CA). */
export function remoteRoutersOf(
  config: Pick<ProxyConfig, "contextRouter" | "generationRouter"> & Partial<Pick<ProxyConfig, "routerOptions">>,
  warn: RoutingWarning,
): Partial<Record<Role, RemoteHttpRouter>> {
  const remote: Partial<Record<Role, RemoteHttpRouter>> = {};
  for (const role of ["context", "generation"] as const) {
    const options = config.routerOptions?.[role];
    const type = role === "context" ? config.contextRouter : config.generationRouter;
    if (type !== "remote_http" || options?.remoteUrl === undefined) continue;
    const timeoutMs = options.requestTimeoutMs ?? REMOTE_ROUTER_TIMEOUT_MS;
    remote[role] = new RemoteHttpRouter({ role, remoteUrl: options.remoteUrl, timeoutMs, fetch: (url, init) => fetch(url, init), warn });
  }
  return remote;
}

/** How a worker is named to the router server: `host:port` as trtllm-serve's configs list it, https workers by their origin. */
export function serverName(origin: string): string {
  return origin.startsWith("http://") ? origin.slice("http://".length) : origin;
}

/** The origin of a server the router names, `host:port` or a URL. */
function originOf(server: string): string | undefined {
  try {
    return new URL(/^https?:\/\//i.test(server) ? server : `http://${server}`).origin;
  } catch {
    return undefined;
  }
}
