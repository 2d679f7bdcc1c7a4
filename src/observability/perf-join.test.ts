import { describe, expect, test } from "bun:test";
import { jsonInteger, type JsonValue } from "../json/json.ts";
import { PerfMetricsJoin } from "./perf-join.ts";

const ID = 4_611_686_018_427_387_905n;

function source(lists: Record<string, JsonValue[][]>) {
  return {
    origins: () => Object.keys(lists),
    fetchRecords: async (origin: string) => lists[origin]?.shift() ?? [],
  };
}

describe("/perf_metrics join", () => {
  test("a request is returned once its generation record arrived, with its context record, then forgotten", async () => {
    const join = new PerfMetricsJoin(
      10,
      source({
        "http://ctx:1": [[{ ctx_request_id: jsonInteger(ID), who: "ctx" }]],
        "http://gen:2": [[], [{ ctx_request_id: jsonInteger(ID), who: "gen" }]],
      }),
    );
    join.add({ contextOrigin: "http://ctx:1", generationOrigin: "http://gen:2", ctxRequestId: ID, arrivalTime: 1, firstTokenTime: 2 });
    expect(await join.collect()).toEqual([]);
    const [entry, ...rest] = await join.collect();
    expect(rest).toEqual([]);
    expect(entry).toMatchObject({
      ctx_server: "ctx:1",
      gen_server: "gen:2",
      disagg_server_arrival_time: 1,
      disagg_server_first_token_time: 2,
    });
    expect(JSON.stringify(entry)).toContain(`"ctx_perf_metrics":{"ctx_request_id":${ID},"who":"ctx"}`);
    expect(await join.collect()).toEqual([]);
  });

  test("keeps at most maxRequests waiting requests, and files at most that many records per worker", async () => {
    const records = [1n, 2n, 3n].map((id) => ({ ctx_request_id: jsonInteger(id) }));
    const join = new PerfMetricsJoin(2, source({ "http://gen:2": [records] }));
    for (const id of [1n, 2n, 3n])
      join.add({ contextOrigin: undefined, generationOrigin: "http://gen:2", ctxRequestId: id, arrivalTime: 0, firstTokenTime: undefined });
    const done = await join.collect();
    // Request 1 was forgotten (oldest), record 3 was dropped (no room): only 2 joins.
    expect(done.map((entry) => JSON.stringify(entry["gen_perf_metrics"]))).toEqual(['{"ctx_request_id":2}']);
    expect(done[0]?.["ctx_perf_metrics"]).toBeNull();
  });
});
