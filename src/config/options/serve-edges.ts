/** `serve` flags of its edges: TLS, keys, body bounds, discovery, the workers' protocol, answer bounds, cluster storage, models, worker load. */

import type { OptionSpec } from "../option-spec.ts";
import { DEFAULTS } from "../types.ts";

export const SERVE_EDGE_OPTIONS = [
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
] as const satisfies readonly OptionSpec[];
