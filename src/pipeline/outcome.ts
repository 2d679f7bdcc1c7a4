import type { RequestContext } from "../request/context.ts";
import { readableOf } from "../bytes.ts";
import type { GenerationLegResult } from "./legs.ts";
import { ENGINE_REQUEST_ID_HEADER, type PipelineOutcome } from "./types.ts";

/**
 * The generation leg's answer as the pipeline's outcome. When the generation worker answered
 * alone (no disaggregated id was sent), its own engine request id names the reply.
 */
export function outcomeOf(result: GenerationLegResult, alone?: RequestContext): PipelineOutcome {
  const named = alone === undefined ? undefined : result.headers.get(ENGINE_REQUEST_ID_HEADER);
  if (alone !== undefined && named) alone.namedByWorker(named);
  if (result.kind === "json") return { kind: "json", body: result.body, bytes: result.bytes };
  return { kind: "stream", body: readableOf(result.stream.reader) };
}
