/**
 * A traced request's terminal line (responses-<pid>.jsonl): its status in upstream's
 * vocabulary (tensorrt_llm/serve/request_trace.py and the server's _trace_failure, read_file
 * ids 70217114160 and 70144234291), and what its client received.
 */

import type { ErrorCode, Outcome } from "../errors.ts";
import { concatBytes } from "../bytes.ts";
import type { TraceHandle } from "./trace-handle.ts";
import { responseLine, sessionKey } from "./trace-records.ts";

/** How the request ended, as its one end reports it. */
export interface TraceEnd {
  readonly httpStatus: number;
  readonly errorCode: ErrorCode | undefined;
  readonly outcome: Outcome;
  readonly message: string | undefined;
  readonly disaggRequestId: bigint;
}

const decoder = new TextDecoder();

export async function responseLineOf(handle: TraceHandle, end: TraceEnd, at: string): Promise<string> {
  const { capture } = handle;
  const status = traceStatusOf(end);
  const answer = capture.answer === undefined ? undefined : await capture.answer.catch(() => undefined);
  const text =
    capture.kind === "sse_text"
      ? decoder.decode(concatBytes(capture.pieces) ?? new Uint8Array())
      : answer === undefined
        ? undefined
        : decoder.decode(answer);
  const unconverted = status === "conversion_error" ? capture.upstream : undefined;
  return responseLine({
    traceId: handle.traceId,
    session: sessionKey(handle.session),
    finishedAt: at,
    status,
    disaggRequestId: end.disaggRequestId,
    httpStatus: status.startsWith("rejected_") || (status === "error" && end.httpStatus !== 200) ? end.httpStatus : undefined,
    termination: terminationOf(end, status),
    kind: capture.kind,
    text,
    omittedBytes: capture.omittedBytes,
    upstream: unconverted === undefined ? undefined : decoder.decode(unconverted),
    responses: handle.route === "/v1/responses",
  });
}

/**
 * Upstream's terminal vocabulary: `completed` (whatever the reply says of the generation: a
 * Responses stream that states a context overflow in full is completed), `rejected_<status>`
 * for an error answer below 500 and `error` from 500 (or a stream broken off), `cancelled` for
 * a request the shutdown aborted, `client_disconnected`, `conversion_error` for a worker answer
 * that could not be converted for an Anthropic client.
 */
export function traceStatusOf(end: Pick<TraceEnd, "httpStatus" | "errorCode">): string {
  const { httpStatus, errorCode } = end;
  if (errorCode === undefined) return "completed";
  if (errorCode === "CLIENT_GONE") return "client_disconnected";
  if (errorCode === "DRAINING") return "cancelled";
  if (errorCode === "CONVERSION_ERROR") return "conversion_error";
  if (httpStatus === 200) return errorCode === "CONTEXT_OVERFLOW" ? "completed" : "error";
  return httpStatus < 500 ? `rejected_${httpStatus}` : "error";
}

/** Why a request failed where its answer does not say: a stream broken off, or a fault of the proxy's own. */
function terminationOf(end: TraceEnd, status: string): { cause: string; detail: string } | undefined {
  if (status !== "error" && status !== "cancelled") return undefined;
  const cause = end.outcome === "internal_error" ? "internal_error" : status === "cancelled" ? "shutdown" : "upstream_error";
  return { cause, detail: end.message ?? "" };
}
