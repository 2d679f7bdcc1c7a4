/** Everything one benchmark run produced (bench/out/results.json). */

import type { BenchOptions, BenchPlan } from "../plan.ts";
import type { AgentPoint } from "../scenarios/agent.ts";
import type { CloseResult } from "../scenarios/close.ts";
import type { ConversationsResult } from "../scenarios/conversations.ts";
import type { LatencyPoint } from "../scenarios/latency.ts";
import type { MemoryResult } from "../scenarios/memory.ts";
import type { SoakResult } from "../scenarios/soak.ts";
import type { StreamingResult } from "../scenarios/streaming.ts";
import type { TtfbResult } from "../scenarios/ttfb.ts";
import type { Machine } from "./machine.ts";

export interface BenchResults {
  readonly machine: Machine;
  readonly command: string;
  readonly options: BenchOptions;
  readonly plan: BenchPlan;
  latency?: LatencyPoint[];
  agent?: AgentPoint[];
  streaming?: StreamingResult;
  memory?: MemoryResult;
  close?: CloseResult;
  ttfb?: TtfbResult;
  soak?: SoakResult;
  conversations?: ConversationsResult;
}
