import { describe, expect, test } from "bun:test";
import { parseTrtllmYaml } from "./trtllm-yaml.ts";

describe("upstream keys beyond the worker lists", () => {
  test("boolean switches, the keep-alive timeout and conditional disaggregation are read", () => {
    const yaml = [
      "allow_request_chat_template: true",
      "gen_strip_message_history: true",
      "gen_tokids_ctxbytes: true",
      "server_keep_alive_timeout: 12",
      "internal_request_auth_key: k",
      "conditional_disagg_config: { max_local_prefill_length: 64 }",
    ].join("\n");
    expect(parseTrtllmYaml(yaml, "f").settings).toMatchObject({
      allowRequestChatTemplate: true,
      genStripMessageHistory: true,
      genTokidsCtxbytes: true,
      serverKeepAliveTimeoutS: 12,
      internalAuthKey: "k",
      conditionalDisagg: { maxLocalPrefillLength: 64 },
    });
  });

  test("the sub-agent affinity keys are read: the header name trimmed, the scope context or both", () => {
    const yaml =
      "conversation_affinity_header_for_subagents: ' X-Dynamo-Parent-Session-ID '\nsubagent_affinity_scope: both\ninternal_request_auth_key: k";
    const parsed = parseTrtllmYaml(yaml, "f");
    expect(parsed.settings).toMatchObject({ subagentAffinityHeader: "X-Dynamo-Parent-Session-ID", subagentAffinityScope: "both" });
    expect(parsed.unknown).toEqual([]);
    expect(() => parseTrtllmYaml("subagent_affinity_scope: generation", "f")).toThrow(
      "subagent_affinity_scope must be one of context, both",
    );
  });

  // upstream: test_server_keep_alive_timeout_is_passed_to_uvicorn (default 10, 3600 accepted), read_file id 70156702744.
  test("server_keep_alive_timeout takes any positive number, 3600 and fractions too; nothing else", () => {
    for (const value of [3600, 0.5, 10, 255.5])
      expect(parseTrtllmYaml(`server_keep_alive_timeout: ${value}`, "f").settings.serverKeepAliveTimeoutS).toBe(value);
    for (const value of ["0", "-1", '"10"', "true", ".inf"])
      expect(() => parseTrtllmYaml(`server_keep_alive_timeout: ${value}`, "f")).toThrow(
        "server_keep_alive_timeout must be a number above 0",
      );
  });

  test("bind_host is read beside hostname, and is no unknown key", () => {
    const { settings, unknown } = parseTrtllmYaml("hostname: svc.example\nbind_host: 0.0.0.0", "f");
    expect(settings).toMatchObject({ host: "svc.example", bindHost: "0.0.0.0" });
    expect(unknown).toEqual([]);
  });

  test("allow_request_chat_template must be a real boolean, as upstream requires", () => {
    expect(() => parseTrtllmYaml('allow_request_chat_template: "true"', "f")).toThrow("allow_request_chat_template");
    expect(() => parseTrtllmYaml("allow_request_chat_template: 1", "f")).toThrow("allow_request_chat_template");
  });

  test("an external coordinator's URL is read; num_workers is read as the event loops to run", () => {
    expect(parseTrtllmYaml("disagg_coordinator_url: http://c:1", "f")).toMatchObject({
      warnings: [],
      settings: { disaggCoordinatorUrl: "http://c:1" },
    });
    expect(parseTrtllmYaml("disagg_coordinator_url: null", "f").settings.disaggCoordinatorUrl).toBeUndefined();
    expect(parseTrtllmYaml("num_workers: 4", "f")).toMatchObject({ warnings: [], settings: { numWorkers: 4 } });
    expect(() => parseTrtllmYaml("num_workers: 0", "f")).toThrow("num_workers");
    expect(() => parseTrtllmYaml("num_workers: 65", "f")).toThrow("num_workers");
  });

  test("per-request perf metrics and OTLP keys are read: return_perf_metrics, perf_metrics_output_dir, perf_metrics_max_requests, otlp_config", () => {
    const yaml = [
      "return_perf_metrics: true",
      "perf_metrics_output_dir: /var/lib/perf",
      "perf_metrics_max_requests: 500",
      "otlp_config: { otlp_traces_endpoint: 'http://collector:4318/v1/traces' }",
    ].join("\n");
    const { settings, unknown } = parseTrtllmYaml(yaml, "f");
    expect(settings).toMatchObject({
      returnPerfMetrics: true,
      perfMetricsOutputDir: "/var/lib/perf",
      perfMetricsMaxRequests: 500,
      otlpTracesEndpoint: "http://collector:4318/v1/traces",
    });
    expect(unknown).toEqual([]);
  });

  test("wrongly typed perf and OTLP keys stop start-up naming the key", () => {
    expect(() => parseTrtllmYaml("return_perf_metrics: yes please", "f")).toThrow("return_perf_metrics");
    expect(() => parseTrtllmYaml("perf_metrics_max_requests: -1", "f")).toThrow("perf_metrics_max_requests");
    expect(() => parseTrtllmYaml("otlp_config: http://c:4318", "f")).toThrow("otlp_config");
    expect(() => parseTrtllmYaml("otlp_config: { otlp_traces_endpoint: 'collector:4317' }", "f")).toThrow(
      "otlp_config.otlp_traces_endpoint",
    );
  });
});
