/**
 * `disagg-proxy worker` flags → the emulator's options (the emulator owns their defaults).
 * The flags arrive parsed (the proxy's option table checks their syntax); how the worker
 * registers in a cluster is injected by main.ts, so nothing here knows a registry.
 */

import type { EmulatorFaults, EmulatorOptions, WorkerRole } from "./types.ts";

/** The parsed `worker` flags this module reads; absent flags are absent. */
export interface EmulatorFlags {
  readonly port?: number | undefined;
  readonly host?: string | undefined;
  readonly model?: string | undefined;
  readonly prefillMs?: number | undefined;
  readonly prefillMsPerToken?: number | undefined;
  readonly tokenMs?: number | undefined;
  readonly outputTokens?: number | undefined;
  readonly maxSeqLen?: number | undefined;
  readonly tokensPerBlock?: number | undefined;
  readonly bytesPerToken?: number | undefined;
  readonly kvCacheBlocks?: number | undefined;
  readonly rejectStatus?: number | undefined;
  readonly rejectAfterMs?: number | undefined;
  readonly cutAfterTokens?: number | undefined;
  readonly chunkBytes?: number | undefined;
  readonly silenceMs?: number | undefined;
  readonly silenceAfterTokens?: number | undefined;
  readonly errorEventAfterTokens?: number | undefined;
  readonly maxRecords?: number | undefined;
  readonly protocolVersion?: string | undefined;
  readonly reportedWaiting?: number | undefined;
  readonly startingMs?: number | undefined;
  readonly kvTransferTimeoutMs?: number | undefined;
  readonly keepAliveTimeoutMs?: number | undefined;
  readonly resetKeptAlive?: boolean | undefined;
}

const NUMBER_KEYS = [
  "port",
  "prefillMs",
  "prefillMsPerToken",
  "tokenMs",
  "outputTokens",
  "maxSeqLen",
  "tokensPerBlock",
  "bytesPerToken",
  "kvCacheBlocks",
  "maxRecords",
  "reportedWaiting",
  "startingMs",
  "kvTransferTimeoutMs",
] as const;
const TEXT_KEYS = ["host", "model", "protocolVersion"] as const;
const FAULT_KEYS = [
  "rejectStatus",
  "rejectAfterMs",
  "cutAfterTokens",
  "chunkBytes",
  "silenceMs",
  "silenceAfterTokens",
  "errorEventAfterTokens",
  "keepAliveTimeoutMs",
] as const;

/** Only given flags appear; the faults are nested as the emulator takes them. */
export function emulatorOptions(role: WorkerRole, flags: EmulatorFlags): EmulatorOptions {
  const options: EmulatorOptions = { role };
  for (const key of NUMBER_KEYS) {
    const value = flags[key];
    if (value !== undefined) options[key] = value;
  }
  for (const key of TEXT_KEYS) {
    const value = flags[key];
    if (value !== undefined) options[key] = value;
  }
  const faults: EmulatorFaults = {};
  for (const key of FAULT_KEYS) {
    const value = flags[key];
    if (value !== undefined) faults[key] = value;
  }
  if (flags.resetKeptAlive === true) faults.resetKeptAlive = true;
  if (Object.keys(faults).length > 0) options.faults = faults;
  return options;
}
