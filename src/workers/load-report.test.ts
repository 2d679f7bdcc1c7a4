import { describe, expect, test } from "bun:test";
import { parseLoadReport } from "./load-report.ts";

describe("parseLoadReport", () => {
  test("reads the trtllm_ gauges, summing every series of a name", () => {
    const text = [
      "# HELP trtllm_num_requests_running Number of requests currently being processed.",
      "# TYPE trtllm_num_requests_running gauge",
      'trtllm_num_requests_running{model_name="a",engine_type="trtllm"} 3.0',
      'trtllm_num_requests_running{model_name="b",engine_type="trtllm"} 2.0',
      'trtllm_num_requests_waiting{model_name="a"} 7',
      'trtllm_kv_cache_utilization{model_name="a"} 0.25',
      'trtllm_time_to_first_token_seconds_bucket{le="0.1"} 4',
    ].join("\n");
    expect(parseLoadReport(text)).toEqual({ running: 5, waiting: 7, kvUtilization: 0.25 });
  });

  test("reads an older build's unprefixed gauges; a prefixed one wins when both appear", () => {
    expect(parseLoadReport("num_requests_running 1\nnum_requests_waiting 4\n")).toEqual({
      running: 1,
      waiting: 4,
      kvUtilization: undefined,
    });
    expect(parseLoadReport("num_requests_running 1\ntrtllm_num_requests_running 9\nnum_requests_waiting 0\n")).toMatchObject({
      running: 9,
    });
  });

  test("a page without both running and waiting reports nothing, and bad values are skipped", () => {
    expect(parseLoadReport("trtllm_num_requests_running 3\n")).toBeUndefined();
    expect(parseLoadReport("")).toBeUndefined();
    expect(parseLoadReport("<html>not metrics</html>")).toBeUndefined();
    expect(
      parseLoadReport(
        "trtllm_num_requests_running NaN\ntrtllm_num_requests_running -4\ntrtllm_num_requests_running 2\ntrtllm_num_requests_waiting 0",
      ),
    ).toMatchObject({ running: 2 });
    expect(parseLoadReport("trtllm_num_requests_running_total 3\ntrtllm_num_requests_waiting 1")).toBeUndefined();
  });
});
