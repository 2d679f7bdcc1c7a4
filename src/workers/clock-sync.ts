/**
 * Steady-clock alignment with a worker (reference §5.4), NTP style: GET /steady_clock_offset
 * answers the worker's receive and transmit times; with our originate and destination times
 * they give the round trip's delay and the clock offset, and POST /steady_clock_offset
 * {"offset": -offset} makes the worker report its perf metrics in our clock. A first probe
 * warms the connection and is discarded; probing stops at the first sample good enough, or
 * after a few; an estimate from a slow round trip (accurate only to ±delay/2) is not applied.
 * Failures are only logged: metrics then stay in the worker's own clock.
 */

import { isJsonObject } from "../json/json.ts";
import { INFO_ANSWER_BYTES, readJsonAnswer } from "./answers.ts";
import type { Logger } from "../observability/logger.ts";
import type { SteadyClock } from "../observability/steady-clock.ts";
import type { WorkerFetch } from "./transport.ts";

/** Our choices (upstream's values were not in the versions read). */
export const CLOCK_SYNC_PROBES = 5;
export const CLOCK_SYNC_GOOD_DELAY_S = 0.005;
export const CLOCK_SYNC_MAX_DELAY_S = 0.05;

export interface ClockSample {
  readonly delay: number;
  readonly offset: number;
}

export interface ClockSyncDeps {
  readonly fetch: WorkerFetch;
  readonly clock: SteadyClock;
  readonly logger: Logger;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
}

/** Returns the applied sample, or undefined when none was applied. */
export async function syncWorkerClock(origin: string, deps: ClockSyncDeps): Promise<ClockSample | undefined> {
  const url = `${origin}/steady_clock_offset`;
  await probe(url, deps).catch(() => undefined);
  let best: ClockSample | undefined;
  for (let i = 0; i < CLOCK_SYNC_PROBES && !deps.signal.aborted; i++) {
    // oxlint-disable-next-line no-await-in-loop -- probes are sequential: each must see an idle connection
    const sample = await probe(url, deps).catch(() => undefined);
    if (sample === undefined) break;
    if (best === undefined || sample.delay < best.delay) best = sample;
    if (sample.delay <= CLOCK_SYNC_GOOD_DELAY_S) break;
  }
  if (best === undefined || best.delay > CLOCK_SYNC_MAX_DELAY_S) {
    deps.logger.warn("steady clock offset not measured: perf metrics timestamps of this worker may be misaligned", {
      worker: origin,
      delay_s: best?.delay,
    });
    return undefined;
  }
  try {
    const response = await deps.fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ offset: -best.offset }),
      signal: AbortSignal.any([deps.signal, AbortSignal.timeout(deps.timeoutMs)]),
    });
    await response.body?.cancel();
    if (!response.ok) throw new Error(`status ${response.status}`);
  } catch (error) {
    deps.logger.warn("steady clock offset not set: perf metrics timestamps of this worker may be misaligned", { worker: origin, error });
    return undefined;
  }
  deps.logger.info("steady clock offset set", { worker: origin, delay_s: best.delay, offset_s: best.offset });
  return best;
}

async function probe(url: string, deps: ClockSyncDeps): Promise<ClockSample | undefined> {
  const originate = deps.clock();
  const response = await deps.fetch(url, { signal: AbortSignal.any([deps.signal, AbortSignal.timeout(deps.timeoutMs)]) });
  const destination = deps.clock();
  if (!response.ok) {
    await response.body?.cancel();
    return undefined;
  }
  const body = await readJsonAnswer(response, INFO_ANSWER_BYTES);
  const receive = isJsonObject(body) ? body["receive_ts"] : undefined;
  const transmit = isJsonObject(body) ? body["transmit_ts"] : undefined;
  if (typeof receive !== "number" || typeof transmit !== "number") return undefined;
  return {
    delay: destination - originate - (transmit - receive),
    offset: (receive - originate + (transmit - destination)) / 2,
  };
}
