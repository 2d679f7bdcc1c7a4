import { describe, expect, test } from "bun:test";
import fixture from "../../../test/fixtures/perf-metrics/server-phase.json" with { type: "json" };
import { perfMetricsEvent, serverPhaseHeaders, withinBudget, SERVER_TIMING, START_END_TIME } from "./perf-wire.ts";

const timing = {
  arrival: fixture.timing.arrival_time,
  scheduled: fixture.timing.first_scheduled_time,
  firstToken: fixture.timing.first_token_time,
  lastToken: fixture.timing.last_token_time,
  kvStart: fixture.timing.kv_cache_transfer_start,
  kvEnd: fixture.timing.kv_cache_transfer_end,
};

describe("the emulated worker's perf metrics wire format", () => {
  test("a phase's headers match the fixture byte for byte", () => {
    expect(serverPhaseHeaders(timing, fixture.step_metrics, fixture.ctx_chunk_metrics)).toEqual(fixture.headers);
  });

  test("the trailing event matches the fixture; no lists, no event", () => {
    const event = perfMetricsEvent(serverPhaseHeaders(timing, fixture.step_metrics, fixture.ctx_chunk_metrics));
    expect(new TextDecoder().decode(event)).toBe(fixture.event);
    expect(perfMetricsEvent({})).toBeUndefined();
  });

  test("unknown or negative spans are left out; over 80 KiB only Server-Timing and Start-End stay", () => {
    const partial = serverPhaseHeaders(
      { arrival: 2, scheduled: undefined, firstToken: 1, lastToken: undefined, kvStart: undefined, kvEnd: undefined },
      [],
      [],
    );
    expect(partial).toEqual({ [START_END_TIME]: "server-start;ts=2.000000000" });
    const steps = Array.from({ length: 2000 }, (_, iter) => ({ ...fixture.step_metrics[0]!, iter }));
    const big = serverPhaseHeaders(timing, steps, fixture.ctx_chunk_metrics);
    expect(Object.keys(withinBudget(big))).toEqual([SERVER_TIMING, START_END_TIME]);
    expect(withinBudget(fixture.headers)).toEqual(fixture.headers);
  });
});
