import type { Role } from "../config/types.ts";
import type { JsonObject } from "../json/json.ts";
import type { RequestContext } from "../request/context.ts";
import { NO_ROUTING } from "../routing/routing-request.ts";
import { JSON_CODEC } from "../workers/body-codec.ts";
import type { RawAnswer } from "../workers/client.ts";

/** A worker's answer to a one-shot call, as it came (any status). */
export type WorkerReply = RawAnswer;
import { runOneShotLeg } from "./leg-runner.ts";
import type { PipelineDeps } from "./types.ts";

/** A call one worker answers alone (GET /v1/models, POST /v1/messages/count_tokens). */
export interface OneShotCall {
  readonly role: Role;
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly body?: JsonObject;
}

/**
 * A one-shot worker call, placed and reserved like a leg (the routers pick the worker, the
 * per-worker limit holds, the request log names it), never retried: its answer, any status,
 * goes back as it came.
 */
export async function callOneWorker(deps: PipelineDeps, ctx: RequestContext, call: OneShotCall): Promise<WorkerReply> {
  const body = call.body ?? {};
  // Its model (count_tokens names one) keeps it on the workers serving that model.
  const routing = typeof body["model"] === "string" ? { ...NO_ROUTING, model: body["model"] } : NO_ROUTING;
  deps.placement.refuseWhenSaturated(routing);
  const { origin, result } = await runOneShotLeg(
    deps,
    ctx,
    {
      role: call.role,
      path: call.path,
      workers: { exclude: undefined, leastLoaded: true },
      routing,
      signal: ctx.signal,
      retryable: () => false,
      headers: JSON_CODEC.headers,
      id: ctx.disaggRequestId,
      freshIdOnRetry: false,
      body: { of: () => body, codec: JSON_CODEC },
      affinity: undefined,
    },
    call.method,
  );
  ctx.legServed(call.role, origin);
  return result;
}
