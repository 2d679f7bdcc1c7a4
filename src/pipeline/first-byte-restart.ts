/**
 * Restart before the first byte, for both schedule styles: a generation leg that failed before
 * any of its bytes reached the client (retry.ts restartsBeforeFirstByte) runs once more, on a
 * fresh context and generation pair under a new disagg_request_id, the failed generation worker
 * avoided. The client's own ids (Responses, Anthropic) live in its body, sent unchanged, so
 * they do not change. Never after the first bytes: from then on a failure is reported in-band.
 */
import { asProxyError, ProxyError } from "../errors.ts";
import type { RequestContext } from "../request/context.ts";
import { streamOf } from "../bytes.ts";
import { withDeadline } from "../timers.ts";
import type { runGenerationLeg } from "./legs.ts";
import { outcomeOf } from "./outcome.ts";
import { restartsBeforeFirstByte } from "./retry.ts";
import type { PipelineDeps, PipelineOutcome } from "./types.ts";

/** One run of a pipeline under `id`; `avoid`: the generation worker a first run failed on. */
export type PipelineRun = (id: bigint, avoid: string | undefined) => Promise<PipelineOutcome>;

/** Runs `run` under the request's id, and once more under a new one if it failed before the first byte. */
export async function restartingOnce(deps: PipelineDeps, ctx: RequestContext, run: PipelineRun): Promise<PipelineOutcome> {
  try {
    return await run(ctx.disaggRequestId, undefined);
  } catch (thrown) {
    if (!(thrown instanceof EarlyGenerationFailure)) throw thrown;
    const id = deps.ids.next();
    deps.logger.info("generation failed before any byte reached the client: once more on a fresh context and generation pair", {
      disagg_request_id: ctx.disaggRequestId,
      failed_id: thrown.id,
      restart_id: id,
      worker: thrown.worker,
      code: thrown.error.code,
      error: thrown.error.message,
    });
    ctx.retried();
    try {
      return await run(id, thrown.worker);
    } catch (again) {
      throw again instanceof EarlyGenerationFailure ? again.error : again;
    }
  }
}

/** A generation leg that failed before any of its bytes reached the client, and may run again. */
class EarlyGenerationFailure extends Error {
  readonly error: ProxyError;
  readonly worker: string | undefined;
  readonly id: bigint;

  constructor(error: ProxyError, worker: string | undefined, id: bigint) {
    super(error.message, { cause: error });
    this.error = error;
    this.worker = worker;
    this.id = id;
  }
}

/** A generation leg's failure as thrown: marked for the one restart when it happened before any byte reached the client. */
export function restartable(ctx: RequestContext, thrown: unknown, worker: string | undefined, id: bigint): unknown {
  const error = asProxyError(thrown);
  return !ctx.signal.aborted && restartsBeforeFirstByte(error) ? new EarlyGenerationFailure(error, worker, id) : thrown;
}

/**
 * A streamed generation's first bytes, read here so a worker that breaks or stalls before them
 * costs the client nothing but time (the request runs once more). The relay is handed the
 * read already made. Bounded by --first-token-timeout-ms from `startedAt` (the leg's start),
 * else by the request timeout.
 */
export async function withFirstBytes(
  deps: PipelineDeps,
  ctx: RequestContext,
  result: Awaited<ReturnType<typeof runGenerationLeg>>,
  id: bigint,
  startedAt: number,
): Promise<PipelineOutcome> {
  if (result.kind === "json") return outcomeOf(result);
  const body = result.response.body ?? streamOf([]);
  const reader = body.getReader();
  const firstTokenMs = deps.config.firstTokenTimeoutMs;
  const boundMs = firstTokenMs > 0 ? Math.max(1, firstTokenMs - (performance.now() - startedAt)) : deps.config.requestTimeoutMs;
  let failure: ProxyError;
  try {
    const read = await withDeadline(reader.read(), boundMs);
    if (read !== "late" && !read.done) return { kind: "stream", body, first: { reader, read } };
    failure =
      read === "late"
        ? new ProxyError("WORKER_TIMEOUT", 504, `The generation worker sent nothing within ${firstTokenMs > 0 ? firstTokenMs : boundMs} ms`)
        : new ProxyError("WORKER_STREAM_BROKEN", 502, "The generation worker's stream ended before its first byte");
  } catch (cause) {
    failure = ctx.signal.aborted
      ? asProxyError(ctx.signal.reason)
      : new ProxyError("WORKER_STREAM_BROKEN", 502, "The generation worker's stream broke before its first byte", { cause });
  }
  void reader.cancel(failure).catch(() => {});
  result.endEarly?.(failure);
  throw restartable(ctx, failure, result.origin, id);
}
