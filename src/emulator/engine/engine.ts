/**
 * The emulated engine's clock: when each output token appears, and where the timing faults
 * (silence, in-band error, connection cut) strike. It knows nothing of HTTP or of API shapes.
 *
 * Timing: the first token appears when the prefill ends (immediately in the generation phase,
 * whose first token the context phase already produced); each later token tokenMs after the
 * previous one. At each token boundary i (i tokens emitted so far) the faults are checked in
 * this order: cut, error event, silence.
 */

import type { OutputToken } from "./output-plan.ts";
import { pause } from "../../timers.ts";

export type EngineEvent =
  | { readonly kind: "token"; readonly token: OutputToken; readonly index: number }
  /** The stream has been silent for the keepalive interval. */
  | { readonly kind: "keepalive" }
  /** The in-band error fault: the engine stops after this event. */
  | { readonly kind: "error"; readonly message: string };

/** Thrown by the engine when the connection must close abruptly (the cut fault). */
export class ConnectionCut extends Error {
  override readonly name = "ConnectionCut";
}

export interface EngineRun {
  readonly prefillMs: number;
  readonly tokenMs: number;
  readonly tokens: readonly OutputToken[];
  readonly cutAfterTokens: number | undefined;
  readonly errorEventAfterTokens: number | undefined;
  readonly silence: { readonly ms: number; readonly afterTokens: number } | undefined;
  /** Emit a keepalive after every silence this long (Responses streams); undefined for none. */
  readonly keepaliveMs: number | undefined;
}

export async function* runEngine(run: EngineRun, signal: AbortSignal): AsyncGenerator<EngineEvent, void> {
  const clock = { lastEventAt: performance.now() };
  yield* wait(run, clock, run.prefillMs, signal);
  for (let index = 0; index <= run.tokens.length; index++) {
    if (index === run.cutAfterTokens) throw new ConnectionCut(`Emulated connection cut after ${index} tokens`);
    if (index === run.errorEventAfterTokens) {
      yield { kind: "error", message: `Emulated engine error after ${index} tokens` };
      return;
    }
    const token = run.tokens[index];
    if (token === undefined) return;
    if (index === run.silence?.afterTokens) yield* wait(run, clock, run.silence.ms, signal);
    if (index > 0) yield* wait(run, clock, run.tokenMs, signal);
    clock.lastEventAt = performance.now();
    yield { kind: "token", token, index };
  }
}

/** Sleeps ms, breaking the silence with keepalives when the run asks for them. */
async function* wait(run: EngineRun, clock: { lastEventAt: number }, ms: number, signal: AbortSignal): AsyncGenerator<EngineEvent, void> {
  const until = performance.now() + ms;
  for (;;) {
    const nextKeepalive = run.keepaliveMs === undefined ? Infinity : clock.lastEventAt + run.keepaliveMs;
    if (nextKeepalive >= until) {
      // oxlint-disable-next-line no-await-in-loop -- the waits are sequential by nature
      await pause(until - performance.now(), signal);
      return;
    }
    // oxlint-disable-next-line no-await-in-loop -- the waits are sequential by nature
    await pause(nextKeepalive - performance.now(), signal);
    clock.lastEventAt = performance.now();
    yield { kind: "keepalive" };
  }
}
