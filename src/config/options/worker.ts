/** `worker` flags: the emulated trtllm-serve worker, its timings and its faults; and `demo`'s. */

import type { OptionSpec } from "../option-spec.ts";
import { DEFAULTS } from "../types.ts";

export const WORKER_OPTIONS = [
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
