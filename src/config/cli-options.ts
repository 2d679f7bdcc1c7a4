/**
 * THE option table: parseArgs, the usage text, the typed option values and the README flag
 * table (scripts/flag-table.ts) all come from it, so they cannot drift apart.
 */

import { DEFAULTS } from "./types.ts";

export type Section = "serve" | "worker" | "demo" | "global";

/** How a flag's text becomes a value: `seconds` takes seconds (floats ok) and yields ms. */
export type ValueKind = "string" | "int" | "number" | "seconds" | "enum" | "urls" | "list" | "flag";

export interface OptionSpec {
  readonly section: Section;
  /** Long name, without `--`. */
  readonly name: string;
  readonly short?: string;
  /**
   * Other long names accepted for the same option: trtllm-serve's spellings
   * (`--config_file`, `--log_level`, …; tensorrt_llm/commands/serve.py @ 00209af1, `disaggregated`).
   */
  readonly spellings?: readonly string[];
  /** Property of the parsed values (for serve: the ProxyConfig field it overrides). */
  readonly key: string;
  readonly kind: ValueKind;
  /** Placeholder in the usage text. */
  readonly arg?: string;
  readonly choices?: readonly string[];
  /** Spellings of other tools (trtllm-serve's `-l warning`) accepted for a choice. */
  readonly aliases?: Readonly<Record<string, string>>;
  /** Choices match whatever their case (`-s GENERATION_FIRST`). */
  readonly caseInsensitive?: boolean;
  readonly min?: number;
  readonly max?: number;
  readonly repeatable?: boolean;
  readonly required?: boolean;
  /** Shown in help and README only: serve defaults are applied after the YAML, in load.ts. */
  readonly default?: string;
  readonly description: string;
}

const ROUTERS = ["round_robin", "load_balancing", "conversation", "kv_cache_aware"] as const;

export const OPTIONS = [
  { section: "global", name: "help", short: "h", key: "help", kind: "flag", description: "Print usage (per command: `<command> --help`)" },
  { section: "global", name: "version", key: "version", kind: "flag", description: "Print the version" },

  { section: "serve", name: "config", short: "c", spellings: ["config_file"], key: "configFile", kind: "string", arg: "FILE", description: "TensorRT-LLM disagg_config.yaml; flags override its values" },
  { section: "serve", name: "context", key: "contextServers", kind: "urls", arg: "URL", repeatable: true, description: "Context (prefill) worker: host:port or http(s)://host:port, or a comma list" },
  { section: "serve", name: "generation", key: "generationServers", kind: "urls", arg: "URL", repeatable: true, description: "Generation (decode) worker: host:port or http(s)://host:port, or a comma list" },
  { section: "serve", name: "host", key: "host", kind: "string", arg: "HOST", default: DEFAULTS.host, description: "Address to listen on, and the name --report-addr, /cluster_info and the logs give (YAML hostname)" },
  { section: "serve", name: "bind-host", key: "bindHost", kind: "string", arg: "HOST", default: "--host", description: "Address to listen on when it differs from the advertised --host (YAML bind_host), e.g. 0.0.0.0 under a service name" },
  { section: "serve", name: "port", key: "port", kind: "int", arg: "PORT", min: 0, max: 65_535, default: String(DEFAULTS.port), description: "Port to listen on; 0 picks a free port and prints the URL" },
  { section: "serve", name: "schedule", short: "s", spellings: ["schedule_style"], key: "schedule", kind: "enum", caseInsensitive: true, arg: "STYLE", choices: ["context_first", "generation_first"], default: DEFAULTS.schedule, description: "Which phase is sent first, as schedule_style in the YAML" },
  { section: "serve", name: "context-router", key: "contextRouter", kind: "enum", arg: "ROUTER", choices: ROUTERS, default: DEFAULTS.contextRouter, description: "How a context worker is picked" },
  { section: "serve", name: "generation-router", key: "generationRouter", kind: "enum", arg: "ROUTER", choices: ROUTERS, default: DEFAULTS.generationRouter, description: "How a generation worker is picked" },
  { section: "serve", name: "max-retries", key: "maxRetries", kind: "int", arg: "N", min: 0, default: String(DEFAULTS.maxRetries), description: "Extra attempts per worker call; TRTLLM_DISAGG_NO_RETRY=1 forces 0" },
  { section: "serve", name: "retry-delay-ms", key: "retryDelayMs", kind: "int", arg: "MS", min: 0, default: String(DEFAULTS.retryDelayMs), description: "Pause between attempts" },
  { section: "serve", name: "request-timeout", short: "r", spellings: ["request_timeout"], key: "requestTimeoutMs", kind: "seconds", arg: "S", default: String(DEFAULTS.requestTimeoutMs / 1000), description: "Seconds: bound on a non-streamed worker call, on silence for a streamed one" },
  { section: "serve", name: "worker-keep-alive-s", key: "workerKeepAliveMs", kind: "seconds", arg: "S", default: String(DEFAULTS.workerKeepAliveMs / 1000), description: "Seconds a pooled worker connection may sit idle and still be reused; keep it below the workers' keep-alive (trtllm-serve: 5)" },
  { section: "serve", name: "outlier-failures", key: "outlierFailures", kind: "int", arg: "N", min: 0, default: String(DEFAULTS.outlierFailures), description: "Consecutive failed requests (timeouts, lost connections, 5xx, broken answers) that eject a worker from rotation although its /health passes; 0 = never" },
  { section: "serve", name: "outlier-ejection-s", key: "outlierEjectionMs", kind: "seconds", arg: "S", default: String(DEFAULTS.outlierEjectionMs / 1000), description: "Seconds a worker's first ejection lasts; the n-th lasts n times as long (each such length back in rotation forgives one); it returns once a request or check then succeeds" },
  { section: "serve", name: "outlier-max-ejection-percent", key: "outlierMaxEjectionPercent", kind: "int", arg: "P", min: 1, max: 100, default: String(DEFAULTS.outlierMaxEjectionPercent), description: "Most of a role's workers ejected at once, in percent (at least one, never the last in rotation)" },
  { section: "serve", name: "first-token-timeout-ms", key: "firstTokenTimeoutMs", kind: "int", arg: "MS", min: 0, default: "0", description: "A streamed generation leg silent this long before its first bytes fails: run once more on a fresh pair, and counted against its worker (0 = bounded by --request-timeout)" },
  { section: "serve", name: "server-start-timeout", short: "t", spellings: ["server_start_timeout"], key: "serverStartTimeoutMs", kind: "seconds", arg: "S", default: String(DEFAULTS.serverStartTimeoutMs / 1000), description: "Seconds to wait for every worker's /health at start-up" },
  { section: "serve", name: "stream-start-wait-ms", key: "streamStartWaitMs", kind: "int", arg: "MS", min: 0, default: String(DEFAULTS.streamStartWaitMs), description: "How long a stream may wait for its first worker byte before the client gets headers" },
  { section: "serve", name: "keepalive-interval-ms", key: "keepaliveIntervalMs", kind: "int", arg: "MS", min: 0, default: String(DEFAULTS.keepaliveIntervalMs), description: "SSE comment sent to a silent client stream this often; 0 = never" },
  { section: "serve", name: "node-id", key: "nodeId", kind: "int", arg: "N", min: 0, max: 255, default: "MAC % 256", description: "Part of every disagg_request_id; give each proxy host its own" },
  { section: "serve", name: "log-level", short: "l", spellings: ["log_level"], key: "logLevel", kind: "enum", arg: "LEVEL", choices: ["debug", "info", "warn", "error"], aliases: { warning: "warn", verbose: "debug", trace: "debug", internal_error: "error" }, default: DEFAULTS.logLevel, description: "Least severe log line written" },
  { section: "serve", name: "health-check-interval-ms", key: "healthCheckIntervalMs", kind: "int", arg: "MS", min: 1, default: String(DEFAULTS.healthCheckIntervalMs), description: "How often each worker's /health is checked after start-up" },
  { section: "serve", name: "health-check-timeout-ms", key: "healthCheckTimeoutMs", kind: "int", arg: "MS", min: 1, default: String(DEFAULTS.healthCheckTimeoutMs), description: "A /health check slower than this failed" },
  { section: "serve", name: "health-check-failures", key: "healthCheckFailures", kind: "int", arg: "N", min: 1, default: String(DEFAULTS.healthCheckFailures), description: "Consecutive failed checks that take a worker out of rotation" },
  { section: "serve", name: "health-check-successes", key: "healthCheckSuccesses", kind: "int", arg: "N", min: 1, default: String(DEFAULTS.healthCheckSuccesses), description: "Consecutive passed checks that bring a worker (back) into rotation" },
  { section: "serve", name: "drain-timeout", key: "drainTimeoutMs", kind: "seconds", arg: "S", default: String(DEFAULTS.drainTimeoutMs / 1000), description: "Seconds in-flight requests may run on after SIGTERM before they are aborted" },
  { section: "serve", name: "take-over", key: "takeOver", kind: "flag", description: "Start beside the proxy serving this port and replace it once ready (it stops listening and drains): an upgrade without a refused connection; with none running, start as usual" },
  { section: "serve", name: "runtime-dir", key: "runtimeDir", kind: "string", arg: "DIR", default: "$RUNTIME_DIRECTORY or $XDG_RUNTIME_DIR/disagg-proxy or /tmp/disagg-proxy-<uid> (~/.cache/disagg-proxy when that one is not this user's alone)", description: "Directory (mode 0700) of the per-port control socket that refuses a second copy on the port and carries a take-over" },
  { section: "serve", name: "max-inflight", key: "maxInflight", kind: "int", arg: "N", min: 0, default: "0", description: "Requests in flight at once; beyond it 429 with Retry-After (0 = no limit)" },
  { section: "serve", name: "max-inflight-per-worker", key: "maxInflightPerWorker", kind: "int", arg: "N", min: 0, default: "0", description: "Requests one worker may serve at once; a full worker is skipped, all full = 429 (0 = no limit)" },
  { section: "serve", name: "num-workers", spellings: ["num_workers"], key: "numWorkers", kind: "int", arg: "N", min: 1, max: 64, default: "1", description: "Event loops serving the port, one core each, sharing one load view (num_workers in the YAML)" },
  { section: "serve", name: "admission-wait-ms", key: "admissionWaitMs", kind: "int", arg: "MS", min: 0, default: "0", description: "How long a request over --max-inflight may queue for a slot before its 429" },
  { section: "serve", name: "tls-cert", key: "tlsCertFile", kind: "string", arg: "FILE", description: "PEM certificate chain: serve HTTPS (with --tls-key; both re-read on SIGHUP)" },
  { section: "serve", name: "tls-key", key: "tlsKeyFile", kind: "string", arg: "FILE", description: "PEM private key for --tls-cert" },
  { section: "serve", name: "worker-ca", key: "workerCaFile", kind: "string", arg: "FILE", description: "PEM bundle trusted for https:// workers" },
  { section: "serve", name: "worker-api-key", key: "workerApiKey", kind: "string", arg: "KEY", description: "Bearer token sent to workers (the client's key is never forwarded)" },
  { section: "serve", name: "api-key-file", key: "apiKeyFile", kind: "string", arg: "FILE", description: "Client API keys, one per line (also DISAGG_PROXY_API_KEYS, comma-separated); re-read on SIGHUP" },
  { section: "serve", name: "protect-metrics", key: "protectMetrics", kind: "flag", description: "Require a client key on /metrics and /prometheus/metrics too (and on /dashboard)" },
  { section: "serve", name: "no-dashboard", key: "noDashboard", kind: "flag", description: "Turn off the live status page (/dashboard), open where /metrics is" },
  { section: "serve", name: "internal-auth-key-file", key: "internalAuthKeyFile", kind: "string", arg: "FILE", description: "Shared key signing generation requests (x-trtllm-disagg-auth), as internal_request_auth_key" },
  { section: "serve", name: "body-min-rate", key: "bodyMinBytesPerSecond", kind: "int", arg: "BYTES", min: 1, default: String(DEFAULTS.bodyMinBytesPerSecond), description: "Bytes per second a request body must average once --body-grace-ms is over (slower: 408)" },
  { section: "serve", name: "body-grace-ms", key: "bodyGraceMs", kind: "int", arg: "MS", min: 0, default: String(DEFAULTS.bodyGraceMs), description: "How long a request body may take before its rate is judged" },
  { section: "serve", name: "metadata-config", short: "m", spellings: ["metadata_server_config_file"], key: "metadataConfigFile", kind: "string", arg: "FILE", description: "TensorRT-LLM metadata_config.yaml: discover workers under etcd's trtllm/ keys" },
  { section: "serve", name: "worker-msgpack", key: "workerMsgpack", kind: "flag", description: "Send bodies to workers in msgpack (X-TRTLLM-Msgpack: 1), as trtllm-serve's newest proxy does" },
  { section: "serve", name: "worker-protocol", key: "workerProtocol", kind: "string", arg: "VERSION", default: "auto", description: "Workers' TensorRT-LLM version (e.g. 1.3.0rc18), deciding which optional fields they are sent; auto asks each worker's GET /version" },
  { section: "serve", name: "responses-fallback", key: "responsesFallback", kind: "enum", arg: "MODE", choices: ["error", "aggregated"], default: "error", description: "A /v1/responses request on workers too old to disaggregate it: a 501 (error) or served whole by one worker (aggregated)" },
  { section: "serve", name: "max-answer-bytes", key: "maxAnswerBytes", kind: "int", arg: "N", min: 1024, default: String(DEFAULTS.maxAnswerBytes), description: "Largest non-streamed worker answer accepted (larger: 502)" },
  { section: "serve", name: "max-sse-event-bytes", key: "maxSseEventBytes", kind: "int", arg: "N", min: 1024, default: String(DEFAULTS.maxSseEventBytes), description: "Largest single SSE line or event from a worker stream (larger: the stream ends with an error)" },
  { section: "serve", name: "report-addr", spellings: ["report_addr"], key: "reportAddrFile", kind: "string", arg: "FILE", description: "Once listening, write the advertised host (--host, not --bind-host) and the bound port to FILE (atomically), as trtllm-serve's --report_addr does" },
  { section: "serve", name: "cluster-allow-from", key: "clusterAllowFrom", kind: "list", arg: "CIDR", repeatable: true, description: "With an http:// disagg_cluster.cluster_uri: networks besides loopback whose workers may register (e.g. 10.0.0.0/8; a comma list)" },
  { section: "serve", name: "allowed-host", key: "allowedHosts", kind: "list", arg: "NAME", repeatable: true, description: "A name clients may use for this proxy in Host on /dashboard, /cluster_info and the HTTP cluster storage, besides IP literals, localhost, hostname, bind_host and the cluster_uri's host (other names: 421, against DNS rebinding; a comma list)" },
  { section: "serve", name: "allow-link-local-workers", key: "allowLinkLocalWorkers", kind: "flag", description: "Accept discovered workers at link-local or cloud-metadata addresses (169.254.0.0/16, fe80::/10, metadata names), refused by default" },
  { section: "serve", name: "cluster-key-file", key: "clusterKeyFile", kind: "string", arg: "FILE", description: "With an http:// disagg_cluster.cluster_uri: workers must register with this key as a Bearer token (from any address)" },
  { section: "serve", name: "metrics-log-interval", key: "metricsLogIntervalS", kind: "int", arg: "S", min: 0, default: "0", description: "Accepted for trtllm-serve command lines; no periodic statistics lines are logged (see /prometheus/metrics)" },
  { section: "serve", name: "telemetry", key: "telemetry", kind: "flag", description: "Accepted for trtllm-serve command lines; this proxy sends no usage telemetry" },
  { section: "serve", name: "no-telemetry", key: "noTelemetry", kind: "flag", description: "Accepted for trtllm-serve command lines; this proxy sends no usage telemetry" },
  { section: "serve", name: "model-alias", key: "modelAlias", kind: "list", arg: "FROM=TO", repeatable: true, description: "Send requests for model FROM (an exact name, or a prefix ending in *) to the workers serving TO; also model_aliases in the YAML" },
  { section: "serve", name: "worker-load-interval-ms", key: "workerLoadIntervalMs", kind: "int", arg: "MS", min: 0, default: "0", description: "Read each worker's own load (running and waiting requests, GET /prometheus/metrics) this often, for load_balancing and kv_cache_aware (0 = never: the proxy's own counts only)" },
  { section: "serve", name: "max-worker-queue", key: "maxWorkerQueue", kind: "int", arg: "N", min: 0, default: "0", description: "With --worker-load-interval-ms: when every worker of a role reports more than N waiting requests, refuse with 429 (Anthropic 529) and Retry-After (0 = never)" },
  { section: "serve", name: "max-body-bytes", key: "maxBodyBytes", kind: "int", arg: "N", min: 1, default: String(DEFAULTS.maxBodyBytes), description: "Largest request body accepted (413 above)" },

  { section: "worker", name: "role", key: "role", kind: "enum", arg: "ROLE", choices: ["context", "generation", "mixed"], required: true, description: "Which phase(s) the emulated worker serves; mixed serves both" },
  { section: "worker", name: "port", key: "port", kind: "int", arg: "PORT", min: 0, max: 65_535, required: true, description: "Port to listen on; 0 picks a free port" },
  { section: "worker", name: "host", key: "host", kind: "string", arg: "HOST", description: "Address to listen on" },
  { section: "worker", name: "model", key: "model", kind: "string", arg: "NAME", description: "Model name the worker reports" },
  { section: "worker", name: "prefill-ms", key: "prefillMs", kind: "number", arg: "MS", default: "0", description: "Fixed prefill latency per request" },
  { section: "worker", name: "prefill-ms-per-token", key: "prefillMsPerToken", kind: "number", arg: "MS", default: "0", description: "Extra prefill latency per prompt token not already in the KV cache" },
  { section: "worker", name: "token-ms", key: "tokenMs", kind: "number", arg: "MS", default: "0", description: "Latency per output token after the first" },
  { section: "worker", name: "tokens-per-block", key: "tokensPerBlock", kind: "int", arg: "N", min: 1, default: "32", description: "KV cache block size in prompt tokens (kv_cache_config.tokens_per_block); only full blocks are cached" },
  { section: "worker", name: "kv-cache-blocks", key: "kvCacheBlocks", kind: "int", arg: "N", min: 0, default: "8192", description: "KV cache capacity in blocks, least recently used evicted first; 0 caches nothing" },
  { section: "worker", name: "max-seq-len", key: "maxSeqLen", kind: "int", arg: "N", min: 1, default: "no limit", description: "Longest prompt in tokens the worker takes; a longer one is refused (400, context_length_exceeded) as trtllm-serve refuses it" },
  { section: "worker", name: "output-tokens", key: "outputTokens", kind: "int", arg: "N", default: "16", description: "Output tokens when neither the request nor a prompt directive limits them" },
  { section: "worker", name: "reject-status", key: "rejectStatus", kind: "int", arg: "S", min: 400, max: 599, description: "Fault: answer every request with this HTTP error status" },
  { section: "worker", name: "reject-after-ms", key: "rejectAfterMs", kind: "number", arg: "MS", description: "Fault: wait this long before answering the rejection" },
  { section: "worker", name: "cut-after-tokens", key: "cutAfterTokens", kind: "int", arg: "N", description: "Fault: close the connection abruptly after N tokens" },
  { section: "worker", name: "chunk-bytes", key: "chunkBytes", kind: "int", arg: "N", min: 1, description: "Fault: deliver every reply body in pieces of N bytes" },
  { section: "worker", name: "silence-ms", key: "silenceMs", kind: "number", arg: "MS", description: "Fault: go silent this long mid-stream" },
  { section: "worker", name: "silence-after-tokens", key: "silenceAfterTokens", kind: "int", arg: "N", description: "Fault: number of tokens before the silence starts" },
  { section: "worker", name: "error-event-after-tokens", key: "errorEventAfterTokens", kind: "int", arg: "N", description: "Fault: emit an in-band error event after N tokens, then end the stream" },
  { section: "worker", name: "keep-alive-timeout-ms", key: "keepAliveTimeoutMs", kind: "number", arg: "MS", description: "Fault: close a kept-alive connection this long after its last response unless another request began, as uvicorn's timeout_keep_alive (trtllm-serve: 5000)" },
  { section: "worker", name: "reset-kept-alive", key: "resetKeptAlive", kind: "flag", description: "Fault: reset the next request of every kept-alive connection before reading it" },
  { section: "worker", name: "kv-transfer-timeout-ms", key: "kvTransferTimeoutMs", kind: "number", arg: "MS", default: "until pulled", description: "cache_transceiver_config.kv_transfer_timeout_ms: how long a context-first hand-off's KV is held for a generation request to pull it" },
  { section: "worker", name: "protocol-version", key: "protocolVersion", kind: "string", arg: "VERSION", default: "1.4.0rc0", description: "TensorRT-LLM release the worker plays: 1.3.0rc14 (before ctx_usage), 1.3.0rc18 (ctx_usage), 1.3.0rc28 (Responses disaggregation) or 1.4.0rc0 (newest: injected_chat_template_kwargs)" },
  { section: "worker", name: "report-waiting", key: "reportedWaiting", kind: "int", arg: "N", min: 0, default: "0", description: "Report N requests waiting in its queue on /prometheus/metrics (trtllm_num_requests_waiting), to play a saturated worker" },
  { section: "worker", name: "starting-ms", key: "startingMs", kind: "number", arg: "MS", default: "0", description: "Start-up: for this long every route answers 503 with code starting and x-trtllm-server-state: starting, as trtllm-serve while it loads its model" },
  { section: "worker", name: "max-records", key: "maxRecords", kind: "int", arg: "N", min: 0, default: "all", description: "Keep only the newest N request records (long runs)" },
  { section: "worker", name: "register", spellings: ["disagg-cluster-uri", "disagg_cluster_uri"], key: "register", kind: "string", arg: "URI", description: "Register as a disagg_cluster worker does: in etcd (etcd://host:port, a comma list for several members) or in a proxy's HTTP cluster storage (http://proxy:port, as trtllm-serve --disagg_cluster_uri)" },
  { section: "worker", name: "cluster-key-file", key: "clusterKeyFile", kind: "string", arg: "FILE", description: "With --register http://…: send this file's key as a Bearer token" },
  { section: "worker", name: "cluster-name", key: "clusterName", kind: "string", arg: "NAME", description: "With --register: the disagg_cluster cluster_name (default empty)" },
  { section: "worker", name: "heartbeat-interval", key: "heartbeatMs", kind: "seconds", arg: "S", default: "5", description: "With --register: seconds between lease refreshes (heartbeat_interval_sec)" },
  { section: "worker", name: "inactive-timeout", key: "ttlMs", kind: "seconds", arg: "S", default: "10", description: "With --register: seconds the registration outlives a dead worker (inactive_timeout_sec)" },

  { section: "demo", name: "port", key: "port", kind: "int", arg: "PORT", min: 0, max: 65_535, default: String(DEFAULTS.port), description: "Port of the demo proxy" },
] as const satisfies readonly OptionSpec[];

type Entry = (typeof OPTIONS)[number];

type ValueOf<E extends Entry> = E extends { kind: "enum"; choices: readonly (infer C)[] }
  ? C
  : E extends { kind: "urls" | "list" }
    ? string[]
    : E extends { kind: "string" }
      ? string
      : E extends { kind: "flag" }
        ? boolean
        : number;

/** What a section's flags parse to: only the flags the user gave are present. */
export type OptionValues<S extends Section> = {
  [E in Extract<Entry, { section: S }> as E["key"]]?: ValueOf<E>;
};

export type ServeFlags = OptionValues<"serve">;
export type WorkerFlags = OptionValues<"worker">;

/** The table seen as plain specs, for code that walks it without caring about literals. */
export const OPTION_SPECS: readonly OptionSpec[] = OPTIONS;

export function specsOf(section: Section): OptionSpec[] {
  return OPTION_SPECS.filter((spec) => spec.section === section);
}
