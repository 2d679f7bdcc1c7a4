import { asProxyError, clientGone, ProxyError } from "../errors.ts";
import { endingOf, internalFailure, RequestWatch } from "./request-watch.ts";
import type { JsonObject } from "../json/json.ts";
import type { JsonSource, ParsedBody } from "../json/json-source.ts";
import { affinityOf, parentSessionOf, withoutClientAffinity } from "../pipeline/affinity.ts";
import { ENGINE_REQUEST_ID_HEADER, type ApiKind, type PipelineOutcome } from "../pipeline/types.ts";
import type { RequestContext } from "../request/context.ts";
import { routingRequestOf } from "../routing/routing-request.ts";
import { streamOf } from "../bytes.ts";
import type { DialectStream } from "../streaming/dialect.ts";
import { respondWithStream } from "../streaming/respond-with-stream.ts";
import { withPerfMetricsEvent } from "../streaming/perf-metrics-stage.ts";
import type { Answer, Ending } from "../streaming/stream-request.ts";
import { conversationIdOf, namedConversationOf, withConversationId, withSubagentConversationId } from "./conversation.ts";
import { clientSubagentOf } from "./subagents.ts";
import type { TraceInput } from "../request/requests.ts";
import type { Connection, IdleBound, RouteDeps } from "./deps.ts";
import { readClientJson } from "./client-body.ts";
import { checkNumericBounds } from "./numeric-bounds.ts";

/** How one proxied route speaks: its dialect for streams and for failures. */
export interface RouteDialect {
  /**
   * The per-request stream state, built from the request as the workers will see it.
   * `opensEarly` false: the response may not open before the pipeline answers (its opening
   * cannot be built from the request alone).
   */
  readonly openStream: (body: JsonObject, maxEventBytes: number) => { readonly stream: DialectStream; readonly opensEarly: boolean };
  /**
   * A streamed request the context phase finished: the worker stream it would have had,
   * from its final answer and the worker-bound body.
   */
  readonly replay: (answer: JsonObject, body: JsonObject) => Uint8Array[];
  readonly errorResponse: (error: ProxyError, headers: Headers) => Response;
  /** Renders a finished (non-streamed) answer; defaults to the worker's JSON. */
  readonly renderJson?: (body: JsonObject) => JsonObject;
}

export interface ProxiedCall {
  readonly deps: RouteDeps;
  readonly request: Request;
  /** Its connection, whose idle timeout is lifted: the body is in, and the workers may be silent for long. */
  readonly connection: Connection;
  readonly route: string;
  readonly api: ApiKind;
  readonly body: JsonObject;
  /** The client's body bytes and layout, when `body` is (built from) what they parsed to. */
  readonly source?: JsonSource | undefined;
  readonly dialect: RouteDialect;
  /** Runs once the request has its id, before any worker sees it (e.g. Responses naming). */
  readonly prepare?: (ctx: RequestContext, body: JsonObject) => void;
}

/**
 * The shared path of every disaggregated route after validation: one request context,
 * the pipeline, and the answer — JSON, or the early-stream mechanism.
 */
export async function proxyThroughPipeline(call: ProxiedCall): Promise<Response> {
  const { deps, request, dialect } = call;
  // Checked in line, not through refusalTraced: two closures fewer per request.
  try {
    checkNumericBounds(call.body);
  } catch (error) {
    traceRefusal(deps, call.route, request.headers, error, () => traceInputOf(call, call.body));
    throw error;
  }
  // A gateway's header (conversation_affinity_header_for_subagents) first, else what the client itself marks.
  const configured = parentSessionOf(request.headers, deps.settings.subagentAffinityHeader);
  const native = configured === undefined ? clientSubagentOf(call.body, request.headers) : undefined;
  const parent = configured ?? native?.parent;
  const named = withConversationId(withoutClientAffinity(withoutProxyFields(call.body)), request.headers, native?.conversationId);
  const body = parent === undefined ? named : withSubagentConversationId(named);
  const affinity = parent === undefined ? undefined : affinityOf(parent, body);
  // Gone while its body was read (e.g. the runtime closed a pipelining connection): no work starts.
  if (request.signal.aborted) throw clientGone();
  const idle = call.connection.keepOpen();
  const stream = body["stream"] === true;
  const starting = deps.startRequest(call.route, stream, request, () => traceInputOf(call, body));
  const ctx = starting instanceof Promise ? await starting : starting;
  // The idle bound goes back while the answer is still being written (later has no effect):
  // before an error or JSON answer is returned, as a stream closes.
  const renderError = (error: ProxyError): Response => {
    idle.restore();
    const response = dialect.errorResponse(error, engineHeaders(ctx));
    ctx.traced?.capture.answered(response);
    return response;
  };
  return withinRequest(ctx, request, renderError, async () => {
    call.prepare?.(ctx, body);
    // The body names whatever conversation its headers or fields named (withConversationId): not looked for twice.
    const routing = routingRequestOf(call.api, body, namedConversationOf(body), parent);
    const outcome = deps.runPipeline(ctx, { api: call.api, body, source: call.source, stream, routing, affinity });
    if (stream) return streamAnswer(call, ctx, body, outcome, renderError, idle);
    const answer = jsonAnswer(dialect, ctx, await outcome);
    idle.restore();
    return answer;
  });
}

/** The client's JSON body; one that is not a JSON object is recorded in the request trace as it came. */
export function readModelBody(deps: RouteDeps, route: string, request: Request): Promise<ParsedBody> {
  return readClientJson(request, deps.bodyLimits, (bytes, error) =>
    deps.traceRefused?.(route, request.headers, { body: bytes, conversationId: undefined, unparsed: true }, error),
  );
}

/**
 * A route's checks of a body it read, before admission: a refusal (its 4xx) is recorded in the
 * request trace with the body, then thrown on to be answered and logged as before.
 */
export function checkedBody<T>(deps: RouteDeps, route: string, request: Request, read: ParsedBody, checks: () => T): T {
  return refusalTraced(
    deps,
    route,
    request.headers,
    () => ({ body: read.source.bytes, conversationId: conversationIdOf(read.body, request.headers) }),
    checks,
  );
}

/** Runs `checks`; a refusal (a 4xx) is recorded in the request trace with what `traced` gives, then thrown on. */
function refusalTraced<T>(deps: RouteDeps, route: string, headers: Headers, traced: () => TraceInput, checks: () => T): T {
  try {
    return checks();
  } catch (error) {
    traceRefusal(deps, route, headers, error, traced);
    throw error;
  }
}

/** A refusal (a 4xx) is recorded in the request trace with what `traced` gives. */
function traceRefusal(deps: RouteDeps, route: string, headers: Headers, error: unknown, traced: () => TraceInput): void {
  if (error instanceof ProxyError && error.status < 500) deps.traceRefused?.(route, headers, traced(), error);
}

/**
 * Everything after startRequest runs here, and the request ends here, once, whatever happens:
 * an answer, a failure, the client leaving (its legs are aborted and the answer fails), or a
 * throw anywhere in `run` or in rendering its failure.
 */
export async function withinRequest(
  ctx: RequestContext,
  client: Request,
  renderError: (error: ProxyError) => Response,
  run: () => Promise<Answer>,
): Promise<Response> {
  // Set by the answer or the failure; unset only if rendering the failure threw.
  let ended: Answer["ended"] | undefined;
  const watch = new RequestWatch(ctx, client.signal);
  try {
    const answer = await run();
    ended = answer.ended;
    return answer.response;
  } catch (thrown) {
    const error = asProxyError(thrown);
    ended = Promise.resolve(endingOf(error));
    return renderError(error);
  } finally {
    watch.endWhen(ended ?? Promise.resolve(internalFailure()));
  }
}

function streamAnswer(
  call: ProxiedCall,
  ctx: RequestContext,
  body: JsonObject,
  outcome: Promise<PipelineOutcome>,
  renderError: (error: ProxyError) => Response,
  idle: IdleBound,
): Promise<Answer> {
  const { deps, dialect } = call;
  const maxEventBytes = deps.settings.maxSseEventBytes;
  const opened = dialect.openStream(body, maxEventBytes);
  const upstream = outcome.then((result) => {
    if (result.kind === "stream") return result.first !== undefined ? result.first : result.body;
    if (result.kind === "finished") return streamOf(dialect.replay(result.body, body));
    throw new ProxyError("INTERNAL", 500, "Internal server error");
  });
  return respondWithStream({
    ctx,
    upstream,
    dialect: ctx.perf === undefined ? opened.stream : withPerfMetricsEvent(opened.stream, ctx.perf, maxEventBytes),
    timings: opened.opensEarly ? deps.timings : { ...deps.timings, startWaitMs: Number.POSITIVE_INFINITY },
    headers: STREAM_HEADERS,
    errorResponse: renderError,
    idle,
  });
}

const encoder = new TextEncoder();

/** A stream's headers, from its request: one function for every stream. */
const STREAM_HEADERS = (ctx: RequestContext): Headers => streamHeaders(engineHeaders(ctx));

function jsonAnswer(dialect: RouteDialect, ctx: RequestContext, result: PipelineOutcome): Answer {
  if (result.kind !== "json") throw new ProxyError("INTERNAL", 500, "Internal server error");
  // A dialect that answers in the worker's own JSON relays the worker's bytes, as the floor does
  // (written again, they would only cost a serialisation and an encoding per request).
  const bytes = dialect.renderJson
    ? renderedJson(ctx, dialect.renderJson, result)
    : (result.bytes ?? encoder.encode(JSON.stringify(result.body)));
  ctx.traced?.capture.answeredBytes(bytes);
  ctx.sent(bytes.byteLength);
  ctx.markAnswered();
  return { response: new Response(bytes, { status: 200, headers: jsonHeaders(ctx) }), ended: ANSWERED };
}

/** How every whole answer ends: one settled promise, shared. */
const ANSWERED: Promise<Ending> = Promise.resolve(Object.freeze({ status: 200, error: undefined }));

/** A JSON answer's headers: a plain record unless the client's perf metrics go with it (whose names may repeat ours). */
function jsonHeaders(ctx: RequestContext): Headers | Record<string, string> {
  if (ctx.perf?.exposed !== true) return { [ENGINE_REQUEST_ID_HEADER]: ctx.replyId, "content-type": "application/json" };
  const headers = engineHeaders(ctx);
  headers.set("content-type", "application/json");
  for (const [name, value] of Object.entries(ctx.perf.clientHeaders())) headers.set(name, value);
  return headers;
}

/** What the request trace records of the request (asked only when a trace is written). */
function traceInputOf(call: ProxiedCall, body: JsonObject): TraceInput {
  return {
    body: call.source?.bytes ?? encoder.encode(JSON.stringify(call.body)),
    conversationId: conversationIdOf(body, call.request.headers),
  };
}

/** The answer in the route's own JSON; one that cannot be converted keeps the worker's for the request trace. */
function renderedJson(
  ctx: RequestContext,
  render: (body: JsonObject) => JsonObject,
  result: { body: JsonObject; bytes?: Uint8Array | undefined },
): Uint8Array {
  try {
    return encoder.encode(JSON.stringify(render(result.body)));
  } catch (error) {
    ctx.traced?.capture.unconverted(result.bytes ?? encoder.encode(JSON.stringify(result.body)));
    throw error;
  }
}

/**
 * Fields only the proxy may set, dropped from the client's body. `prompt_token_ids_b64` is
 * the context answer's token ids relayed to the generation worker, "Not for clients" in
 * trtllm-serve's ChatCompletionRequest (tensorrt_llm/serve/openai_protocol.py): a forged one
 * would make the generation worker decode tokens the context worker never saw.
 * `disaggregated_params` (with its `ctx_usage`, `ctx_info_endpoint`, opaque state) is
 * replaced on every leg; dropping it here keeps every path, including a generation worker
 * serving alone, from ever seeing the client's. Client `prompt_token_ids` and
 * `conversation_params` are accepted by trtllm-serve from clients and pass through.
 */
function withoutProxyFields(body: JsonObject): JsonObject {
  if (body["prompt_token_ids_b64"] === undefined && body["disaggregated_params"] === undefined) return body;
  const { prompt_token_ids_b64: _tokens, disaggregated_params: _params, ...rest } = body;
  return rest;
}

function engineHeaders(ctx: RequestContext): Headers {
  return new Headers({ [ENGINE_REQUEST_ID_HEADER]: ctx.replyId });
}

function streamHeaders(headers: Headers): Headers {
  headers.set("content-type", "text/event-stream; charset=utf-8");
  headers.set("cache-control", "no-cache");
  headers.set("x-accel-buffering", "no");
  return headers;
}
