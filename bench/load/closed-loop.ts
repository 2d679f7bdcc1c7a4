/** Closed-loop load: N users, each sending its next request as soon as its previous answer ended. */

import type { Path } from "./paths.ts";

export interface LoopLimit {
  /** Stop starting requests after this long. */
  readonly seconds: number;
  /** Stop after this many requests in all (whichever limit comes first). */
  readonly requests?: number;
}

export interface LoopResult {
  /** Latency of every successful request, request written → response complete, in µs. */
  readonly latenciesUs: number[];
  /** Request written → first complete SSE frame, µs, for every successful streamed request. */
  readonly firstEventUs: number[];
  readonly ok: number;
  readonly errors: number;
  /** SSE frames received over all successful requests. */
  readonly frames: number;
  readonly seconds: number;
  /** The first few failures, for the report. */
  readonly errorSamples: string[];
}

const MAX_ERROR_SAMPLES = 5;

export async function closedLoop(paths: readonly Path[], limit: LoopLimit): Promise<LoopResult> {
  const result = {
    latenciesUs: [] as number[],
    firstEventUs: [] as number[],
    ok: 0,
    errors: 0,
    frames: 0,
    seconds: 0,
    errorSamples: [] as string[],
  };
  const started = performance.now();
  const deadline = started + limit.seconds * 1000;
  let claimed = 0;
  const claim = (): boolean => {
    if (performance.now() >= deadline) return false;
    if (limit.requests !== undefined && claimed >= limit.requests) return false;
    claimed++;
    return true;
  };
  const user = async (path: Path): Promise<void> => {
    while (claim()) {
      try {
        const answer = await path.call();
        if (answer.status === 200) {
          result.ok++;
          result.frames += answer.frames;
          result.latenciesUs.push((answer.endAt - answer.sentAt) * 1000);
          if (answer.firstFrameAt !== undefined) result.firstEventUs.push((answer.firstFrameAt - answer.sentAt) * 1000);
        } else {
          noteError(result, `HTTP ${answer.status}`);
        }
      } catch (error) {
        noteError(result, error instanceof Error ? error.message : String(error));
      }
    }
  };
  await Promise.all(paths.map(user));
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

function noteError(result: { errors: number; errorSamples: string[] }, message: string): void {
  result.errors++;
  if (result.errorSamples.length < MAX_ERROR_SAMPLES) result.errorSamples.push(message);
}
