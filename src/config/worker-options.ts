/** `disagg-proxy worker` flags → the emulator's options (the emulator owns their defaults). */

import { etcdEndpoint } from "./urls.ts";
import type { EmulatorFaults, EmulatorOptions } from "../emulator/types.ts";
import type { WorkerFlags } from "./cli-options.ts";
import { UsageError } from "./errors.ts";

/** The options the CLI can set: the emulator's own types, so the two cannot drift apart. */
export type EmulatorFaultOptions = EmulatorFaults;
export type EmulatorCliOptions = Pick<
  EmulatorOptions,
  "role" | "host" | "port" | "model" | "prefillMs" | "prefillMsPerToken" | "tokenMs" | "outputTokens" | "tokensPerBlock" | "kvCacheBlocks" | "faults" | "maxRecords"
> & { register?: EmulatorRegisterOptions };

/** `--register etcd://host:port`: registration as TensorRT-LLM's disagg_cluster workers do it. */
export interface EmulatorRegisterOptions {
  /** `http://host:port` (comma list). */
  endpoint: string;
  clusterName: string;
  heartbeatMs: number;
  ttlMs: number;
}

/** disagg_cluster's defaults: heartbeat_interval_sec 5, inactive_timeout_sec 10. */
const DEFAULT_HEARTBEAT_MS = 5000;
const DEFAULT_TTL_MS = 10_000;
const REGISTER_KEYS = ["clusterName", "heartbeatMs", "ttlMs"] as const;
const REGISTER_FLAG_NAMES: Readonly<Record<(typeof REGISTER_KEYS)[number], string>> = {
  clusterName: "--cluster-name",
  heartbeatMs: "--heartbeat-interval",
  ttlMs: "--inactive-timeout",
};

const TIMING_KEYS = ["port", "prefillMs", "prefillMsPerToken", "tokenMs", "outputTokens", "tokensPerBlock", "kvCacheBlocks"] as const;
const TEXT_KEYS = ["host", "model"] as const;
const FAULT_KEYS = [
  "rejectStatus",
  "rejectAfterMs",
  "cutAfterTokens",
  "chunkBytes",
  "silenceMs",
  "silenceAfterTokens",
  "errorEventAfterTokens",
] as const;

/** `role` is checked by the caller (the table marks it required); only given flags appear. */
export function toEmulatorOptions(role: EmulatorCliOptions["role"], flags: WorkerFlags): EmulatorCliOptions {
  const options: EmulatorCliOptions = { role };
  for (const key of TIMING_KEYS) {
    const value = flags[key];
    if (value !== undefined) options[key] = value;
  }
  for (const key of TEXT_KEYS) {
    const value = flags[key];
    if (value !== undefined) options[key] = value;
  }
  const faults: EmulatorFaultOptions = {};
  for (const key of FAULT_KEYS) {
    const value = flags[key];
    if (value !== undefined) faults[key] = value;
  }
  if (Object.keys(faults).length > 0) options.faults = faults;
  if (flags.maxRecords !== undefined) options.maxRecords = flags.maxRecords;
  const register = registerOptions(flags);
  if (register !== undefined) options.register = register;
  return options;
}

function registerOptions(flags: WorkerFlags): EmulatorRegisterOptions | undefined {
  const uri = flags.register;
  if (uri === undefined) {
    const stray = REGISTER_KEYS.find((key) => flags[key] !== undefined);
    if (stray !== undefined) throw new UsageError(`${REGISTER_FLAG_NAMES[stray]} needs --register`);
    return undefined;
  }
  // Only etcd: an http(s) cluster_uri is the proxy's own key-value store, which this proxy does not serve.
  const isEtcd = uri.split(",").every((item) => /^etcd:\/\//i.test(item.trim()) || item.trim() === "");
  const endpoint = isEtcd ? etcdEndpoint(uri) : undefined;
  if (endpoint === undefined) throw new UsageError(`Invalid value for --register: "${uri}" (expected etcd://host:port)`);
  return {
    endpoint,
    clusterName: flags.clusterName ?? "",
    heartbeatMs: flags.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    ttlMs: flags.ttlMs ?? DEFAULT_TTL_MS,
  };
}
