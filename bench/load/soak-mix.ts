/**
 * The soak's request mix: healthy streams and answers in every dialect, clients that leave
 * mid-stream or mid-prefill, and worker faults from prompt directives (rejections, cut
 * connections, in-band errors, silences the proxy must fill with keepalives).
 */

import type { Workload } from "./paths.ts";
import { chatJson, chatStream, messagesStream, responsesStream } from "./workloads.ts";

export interface SoakKind {
  readonly name: string;
  readonly weight: number;
  readonly workload: Workload;
  /** The client drops its connection after a random delay in [min, max) ms. */
  readonly leaveAfterMs?: readonly [number, number];
}

export const SOAK_KINDS: readonly SoakKind[] = [
  { name: "chat stream", weight: 30, workload: chatStream(32, "gen.token_ms=5") },
  { name: "chat json", weight: 15, workload: chatJson(16) },
  { name: "responses stream", weight: 8, workload: responsesStream(16, "gen.token_ms=5") },
  { name: "messages stream", weight: 7, workload: messagesStream(16, "gen.token_ms=5") },
  { name: "client leaves mid-stream", weight: 10, workload: chatStream(64, "gen.token_ms=10"), leaveAfterMs: [20, 500] },
  { name: "client leaves mid-prefill", weight: 3, workload: chatStream(8, "ctx.prefill_ms=3000"), leaveAfterMs: [200, 2500] },
  { name: "generation rejects 503", weight: 5, workload: chatStream(16, "gen.reject=503") },
  { name: "context rejects 500", weight: 4, workload: chatStream(16, "ctx.reject=500") },
  { name: "generation cuts after 3", weight: 5, workload: chatStream(16, "gen.cut=3 gen.token_ms=5") },
  { name: "in-band error after 3", weight: 4, workload: chatStream(16, "gen.error_event=3") },
  { name: "silence 2.5 s", weight: 4, workload: chatStream(8, "gen.silence_ms=2500 gen.silence_after=2") },
  {
    name: "client leaves during silence",
    weight: 5,
    workload: chatStream(8, "gen.silence_ms=5000 gen.silence_after=1"),
    leaveAfterMs: [100, 3000],
  },
];

/** Deterministic PRNG (mulberry32): every run sends the same sequence of kinds and delays. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export function pickKind(random: () => number): SoakKind {
  const total = SOAK_KINDS.reduce((sum, kind) => sum + kind.weight, 0);
  let point = random() * total;
  for (const kind of SOAK_KINDS) {
    point -= kind.weight;
    if (point < 0) return kind;
  }
  return SOAK_KINDS[0] as SoakKind;
}
