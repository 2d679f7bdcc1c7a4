/**
 * The entry of every model request (completions, chat, responses): record it, give it a
 * lifetime that ends when its client leaves or the worker stops, route it to its phase, and
 * turn a refusal into the worker's error envelope.
 */

import { isJsonObject, type JsonValue } from "../../json/json.ts";
import { metricsRequested } from "../perf/perf-wire.ts";
import { readRequestBody } from "./body-decode.ts";
import { checkInternalAuth } from "./internal-auth.ts";
import { serveContextPhase } from "../engine/context-phase.ts";
import { serveAggregated, serveGenerationPhase } from "../engine/generation-phase.ts";
import { JobTimeline } from "../perf/perf-timeline.ts";
import { admitFields } from "../engine/protocol-generation.ts";
import { disaggRequestIdOf, phaseOf, readModelRequest, type ApiKind, type ModelPhase } from "./model-request.ts";
import type { RecordedRequest, WorkerRole } from "../types.ts";
import type { Job, WorkerContext } from "../worker-context.ts";
import { errorResponse, isAbortError, WorkerError } from "./worker-error.ts";

/** nginx's "client closed request": the client is gone, so nobody reads it. */
const CLIENT_CLOSED = 499;

export async function serveModelRequest(worker: WorkerContext, req: Request, api: ApiKind, stopping: AbortSignal): Promise<Response> {
  const timeline = new JobTimeline(worker.perf, metricsRequested(req.headers));
  const body = await readJsonBody(req);
  const record = worker.log.add({
    method: req.method,
    path: new URL(req.url).pathname,
    headers: Object.fromEntries(req.headers),
    body,
    phase: body === undefined ? "other" : phaseOf(body),
    disaggRequestId: disaggRequestIdOf(body),
  });
  const lifetime = requestLifetime(worker, record, [req.signal, stopping]);
  const finish = (): void => {
    worker.log.settle(record, "finished");
    lifetime.abort(); // releases the listeners; the request is no longer running
  };
  try {
    if (body === undefined) throw new WorkerError(400, "Cannot parse the request body as JSON");
    checkInternalAuth(worker.options.internalAuthKey, worker.options.role, body, req.headers);
    const request = readModelRequest(api, isJsonObject(body) ? admitFields(worker.generation, api, body) : body);
    checkRole(worker.options.role, request.phase);
    timeline.markArrival();
    const job: Job = {
      worker,
      request,
      record,
      signal: lifetime.signal,
      finish,
      cancel: () => lifetime.abort(),
      engineRequestId: request.disaggRequestId ?? worker.nextLocalId(),
      perf: timeline,
    };
    return await servePhase(job);
  } catch (error) {
    if (isAbortError(error)) lifetime.abort();
    else finish();
    if (error instanceof WorkerError) return errorResponse(error);
    if (isAbortError(error)) return new Response(null, { status: CLIENT_CLOSED });
    throw error;
  }
}

/** The body parsed losslessly (JSON, or msgpack under X-TRTLLM-Msgpack: 1), or undefined when unreadable. */
export function readJsonBody(req: Request): Promise<JsonValue | undefined> {
  return readRequestBody(req);
}

/**
 * The request's lifetime ends when its client leaves or the worker stops (aborted, if it was
 * still running), or when it finished; either way its listeners on those signals go with it.
 */
function requestLifetime(worker: WorkerContext, record: RecordedRequest, ends: readonly AbortSignal[]): AbortController {
  const lifetime = new AbortController();
  const abort = (): void => lifetime.abort();
  for (const end of ends) end.addEventListener("abort", abort, { once: true, signal: lifetime.signal });
  lifetime.signal.addEventListener("abort", () => worker.log.settle(record, "aborted"), { once: true });
  if (ends.some((end) => end.aborted)) lifetime.abort();
  return lifetime;
}

const PHASE_HANDLERS: Readonly<Record<ModelPhase, (job: Job) => Promise<Response>>> = {
  context: serveContextPhase,
  generation: serveGenerationPhase,
  aggregated: serveAggregated,
};

function servePhase(job: Job): Promise<Response> {
  return PHASE_HANDLERS[job.request.phase](job);
}

const REFUSED: Readonly<Record<WorkerRole, ModelPhase | undefined>> = {
  context: "generation",
  generation: "context",
  mixed: undefined,
};

function checkRole(role: WorkerRole, phase: ModelPhase): void {
  if (REFUSED[role] !== phase) return;
  const type = phase === "context" ? "context_only" : "generation_only";
  throw new WorkerError(400, `Cannot serve a ${type} request: this worker has the ${role} role`);
}
