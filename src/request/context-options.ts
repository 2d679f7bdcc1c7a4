import type { ProxyError } from "../errors.ts";
import type { RequestPerf } from "../observability/request-perf.ts";
import type { RequestSpans } from "../observability/request-spans.ts";
import type { TraceContext } from "../observability/trace-context.ts";
import type { TraceHandle } from "../observability/request-trace.ts";
import type { ClientFacts } from "./client-address.ts";
import type { RequestHooks, RequestSummary } from "./reports.ts";

/** Told of a request's end (with its error; undefined on success), as an object: a closure held per request costs more. */
export interface EndListener {
  atRequestEnd(error: ProxyError | undefined): void;
}

/** What a request's context (`Ctx`) is made with (request/requests.ts makes it; tests make their own). */
export interface RequestContextOptions<Ctx> {
  readonly disaggRequestId: bigint;
  readonly route: string;
  readonly stream: boolean;
  readonly schedule: string;
  /** Told of the end with the context itself: one function can serve every request (a closure per request lived as long as it). */
  readonly onEnd: (summary: RequestSummary, ctx: Ctx) => void;
  readonly trace: TraceContext;
  readonly hooks?: RequestHooks;
  readonly now?: () => number;
  /** Per-request perf metrics, when they are collected for this request. */
  readonly perf?: RequestPerf | undefined;
  /** The request's spans (default: leg span ids only, nothing exported). */
  readonly spans?: RequestSpans;
  /** Its request trace (TRTLLM_REQUEST_TRACE_DIR), when one is written. */
  readonly traced?: TraceHandle | undefined;
  /** Frees its admission slot (--max-inflight): at its end, or once the attempts it left running end (keepAdmission). */
  readonly releaseAdmission?: (() => void) | undefined;
  readonly client?: ClientFacts | undefined;
}
