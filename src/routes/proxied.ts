import { asProxyError, ProxyError } from "../errors.ts";
import type { JsonObject } from "../json.ts";
import { takeAffinity } from "../pipeline/affinity.ts";
import { runPipeline } from "../pipeline/orchestrate.ts";
import type { PipelineOutcome } from "../pipeline/types.ts";
import { ENGINE_REQUEST_ID_HEADER, type ApiKind } from "../pipeline/types.ts";
import { withPerfMetricsEvent } from "../streaming/perf-metrics-stage.ts";
import type { RequestContext } from "../request/context.ts";
import type { App } from "../server/app.ts";
import type { DialectStream } from "../streaming/dialect.ts";
import { respondWithStream } from "../streaming/early-stream.ts";
import { routingRequestOf } from "../routing/routing-request.ts";
import { conversationIdOf, withConversationId } from "./conversation.ts";

/** How one proxied route speaks: its dialect for streams and for failures. */
export interface RouteDialect {
  /**
   * The per-request stream state, built from the request as the workers will see it.
   * `opensEarly` false: the response may not open before the pipeline answers (its opening
   * cannot be built from the request alone).
   */
  readonly openStream: (body: JsonObject, maxEventBytes: number) => { readonly stream: DialectStream; readonly opensEarly: boolean };
  readonly errorResponse: (error: ProxyError, headers: Headers) => Response;
  /** Renders a finished (non-streamed) answer; defaults to the worker's JSON. */
  readonly renderJson?: (body: JsonObject) => JsonObject;
}

export interface ProxiedCall {
  readonly app: App;
  readonly request: Request;
  /** Lifts the server's idle timeout: the body is in, and the workers may be silent for long. */
  readonly keepOpen: () => void;
  readonly route: string;
  readonly api: ApiKind;
  readonly body: JsonObject;
  readonly dialect: RouteDialect;
  /** Runs once the request has its id, before any worker sees it (e.g. Responses naming). */
  readonly prepare?: (ctx: RequestContext, body: JsonObject) => void;
}

/**
 * The shared path of every disaggregated route after validation: one request context,
 * the pipeline, and the answer — JSON, or the early-stream mechanism.
 */
export async function proxyThroughPipeline(call: ProxiedCall): Promise<Response> {
  const { app, request } = call;
  const { body, affinity } = takeAffinity(withConversationId(call.body, request.headers), app.config.internalAuthKey);
  call.keepOpen();
  const stream = body["stream"] === true;
  const ctx = await app.startRequest(call.route, stream, request);
  const clientGone = (): void => ctx.end(499, new ProxyError("CLIENT_GONE", 499, "Client disconnected"));
  if (request.signal.aborted) clientGone();
  else request.signal.addEventListener("abort", clientGone, { once: true });
  call.prepare?.(ctx, body);
  const routing = routingRequestOf(call.api, body, conversationIdOf(body, request.headers));
  const outcome = runPipeline(app, ctx, { api: call.api, body, stream, routing, affinity });
  return stream ? streamAnswer(call, ctx, body, outcome) : jsonAnswer(call, ctx, outcome);
}

function streamAnswer(call: ProxiedCall, ctx: RequestContext, body: JsonObject, outcome: Promise<PipelineOutcome>): Promise<Response> {
  const { app, dialect } = call;
  const maxEventBytes = app.config.maxSseEventBytes;
  const opened = dialect.openStream(body, maxEventBytes);
  return respondWithStream({
    ctx,
    outcome,
    dialect: ctx.perf === undefined ? opened.stream : withPerfMetricsEvent(opened.stream, ctx.perf, maxEventBytes),
    timings: opened.opensEarly ? app.timings : { ...app.timings, startWaitMs: Number.POSITIVE_INFINITY },
    headers: () => streamHeaders(engineHeaders(ctx)),
    errorResponse: (error) => dialect.errorResponse(error, engineHeaders(ctx)),
  });
}

async function jsonAnswer(call: ProxiedCall, ctx: RequestContext, outcome: Promise<PipelineOutcome>): Promise<Response> {
  const { dialect } = call;
  try {
    const result = await outcome;
    if (result.kind !== "json") throw new ProxyError("INTERNAL", 500, "Internal server error");
    const text = JSON.stringify(dialect.renderJson ? dialect.renderJson(result.body) : result.body);
    ctx.bytesOut = text.length;
    ctx.markFirstByte();
    ctx.perf?.markFirstToken();
    ctx.perf?.markDone();
    ctx.end(200);
    const headers = engineHeaders(ctx);
    headers.set("content-type", "application/json");
    if (ctx.perf?.exposed === true) for (const [name, value] of Object.entries(ctx.perf.clientHeaders())) headers.set(name, value);
    return new Response(text, { status: 200, headers });
  } catch (thrown) {
    const error = asProxyError(thrown);
    ctx.end(error.status, error);
    return dialect.errorResponse(error, engineHeaders(ctx));
  }
}

function engineHeaders(ctx: RequestContext): Headers {
  return new Headers({ [ENGINE_REQUEST_ID_HEADER]: ctx.engineRequestName ?? ctx.engineRequestId.toString() });
}

function streamHeaders(headers: Headers): Headers {
  headers.set("content-type", "text/event-stream; charset=utf-8");
  headers.set("cache-control", "no-cache");
  headers.set("x-accel-buffering", "no");
  return headers;
}
