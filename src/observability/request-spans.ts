/**
 * One request's spans (otlp_config): a server span `disaggregated_request` for the client's
 * request and a client span per leg attempt. A leg's span id is decided here, before the
 * attempt, so the traceparent the worker receives names exactly the span that is exported.
 */

import type { ProxyError } from "../errors.ts";
import { SPAN_KIND_CLIENT, SPAN_KIND_SERVER, type SpanRecord } from "./otlp-exporter.ts";
import { randomHexBytes, sampled, type RandomHex, type TraceContext } from "./trace-context.ts";
import type { Role } from "../config/types.ts";

export const SERVER_SPAN_NAME = "disaggregated_request";

export interface LegAttempt {
  readonly role: Role;
  readonly origin: string;
  readonly path: string;
  readonly attempt: number;
  /** The disagg_request_id this attempt sent. */
  readonly disaggRequestId: bigint;
}

export interface LegSpan {
  readonly spanId: string;
  /** Ends the span (once): success, or the attempt's failure. */
  end(error?: ProxyError): void;
}

export interface RequestEnd {
  readonly status: number;
  readonly outcome: string;
  readonly error: string | undefined;
  readonly disaggRequestId: bigint;
  /** The served model it was placed on, and the client's name (capped) when that differs. */
  readonly model?: string | undefined;
  readonly requestedModel?: string | undefined;
}

export interface RequestSpans {
  startLeg(leg: LegAttempt): LegSpan;
  end(result: RequestEnd): void;
}

export type SpanSink = (span: SpanRecord) => void;

const epochMs = (): number => performance.timeOrigin + performance.now();

const NO_END = (): void => {};

/**
 * Spans that only give leg attempts their ids (nothing is exported): they hold nothing of a
 * request, so one serves every request that draws its ids from `randomHex`.
 */
export function idOnlySpans(randomHex: RandomHex = randomHexBytes): RequestSpans {
  return { startLeg: () => ({ spanId: randomHex(8), end: NO_END }), end: NO_END };
}

/** Spans of a request; without a sink, or for an unsampled trace, legs only get their span ids. */
export function requestSpans(
  trace: TraceContext,
  route: string,
  sink: SpanSink | undefined,
  randomHex: RandomHex = randomHexBytes,
): RequestSpans {
  if (sink === undefined || !sampled(trace)) return idOnlySpans(randomHex);
  const startMs = epochMs();
  return {
    startLeg(leg) {
      const spanId = randomHex(8);
      const legStart = epochMs();
      let ended = false;
      return {
        spanId,
        end(error) {
          if (ended) return;
          ended = true;
          sink({
            traceId: trace.traceId,
            spanId,
            parentSpanId: trace.serverSpanId,
            name: `POST ${leg.path}`,
            kind: SPAN_KIND_CLIENT,
            startMs: legStart,
            endMs: epochMs(),
            attributes: legAttributes(leg, error),
            error: error?.message,
          });
        },
      };
    },
    end(result) {
      sink({
        traceId: trace.traceId,
        spanId: trace.serverSpanId,
        parentSpanId: trace.clientSpanId,
        name: SERVER_SPAN_NAME,
        kind: SPAN_KIND_SERVER,
        startMs,
        endMs: epochMs(),
        attributes: {
          "http.request.method": "POST",
          "http.route": route,
          "http.response.status_code": result.status,
          "trtllm.disagg_request_id": result.disaggRequestId.toString(),
          "trtllm.outcome": result.outcome,
          ...modelAttributes(result),
        },
        error: result.error,
      });
    },
  };
}

/** OpenTelemetry's GenAI name for the model a request asked for (the client's), and ours for the served model it went to. */
function modelAttributes(result: RequestEnd): Record<string, string> {
  const requested = result.requestedModel ?? result.model;
  return {
    ...(requested === undefined ? {} : { "gen_ai.request.model": requested }),
    ...(result.model === undefined ? {} : { "trtllm.model": result.model }),
  };
}

function legAttributes(leg: LegAttempt, error: ProxyError | undefined): Record<string, string | number> {
  // Origins are normalised `http(s)://host:port` (config/urls.ts): split without a URL parse.
  const hostPort = leg.origin.slice(leg.origin.indexOf("//") + 2);
  const colon = hostPort.lastIndexOf(":");
  const port = colon > hostPort.lastIndexOf("]") ? Number(hostPort.slice(colon + 1)) : leg.origin.startsWith("https:") ? 443 : 80;
  return {
    "http.request.method": "POST",
    "url.full": leg.origin + leg.path,
    "server.address": colon > hostPort.lastIndexOf("]") ? hostPort.slice(0, colon) : hostPort,
    "server.port": port,
    "http.response.status_code": error?.status ?? 200,
    "trtllm.role": leg.role,
    "trtllm.attempt": leg.attempt,
    "trtllm.disagg_request_id": leg.disaggRequestId.toString(),
  };
}
