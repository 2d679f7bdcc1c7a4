/** `disagg-proxy worker` flags → the emulator's options (the emulator owns their defaults). */

import type { WorkerFlags } from "./cli-options.ts";

export interface EmulatorFaultOptions {
  rejectStatus?: number;
  rejectAfterMs?: number;
  cutAfterTokens?: number;
  chunkBytes?: number;
  silenceMs?: number;
  silenceAfterTokens?: number;
  errorEventAfterTokens?: number;
}

export interface EmulatorCliOptions {
  role: "context" | "generation" | "mixed";
  host?: string;
  port?: number;
  model?: string;
  prefillMs?: number;
  prefillMsPerToken?: number;
  tokenMs?: number;
  outputTokens?: number;
  faults?: EmulatorFaultOptions;
}

const TIMING_KEYS = ["port", "prefillMs", "prefillMsPerToken", "tokenMs", "outputTokens"] as const;
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
  return options;
}
