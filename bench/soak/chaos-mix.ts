/**
 * The chaos soak's requests: every route streamed and not, worker faults chosen by prompt
 * directive, clients that leave, and bodies the proxy must refuse before any worker sees them.
 */

export interface ChaosKind {
  readonly name: string;
  readonly weight: number;
  readonly route: string;
  readonly body: () => string;
  /** The client aborts after a random delay in [min, max) ms. */
  readonly leaveAfterMs?: readonly [number, number];
}

const MODEL = "emulated-model";
const PROMPT = "Summarise the benefits of disaggregated prefill and decode";

function chat(tokens: number, directives: string, stream: boolean): () => string {
  return () =>
    JSON.stringify({
      model: MODEL,
      messages: [{ role: "user", content: `${PROMPT} [[emu tokens=${tokens} ${directives}]]` }],
      max_tokens: tokens,
      stream,
    });
}

function completions(tokens: number, stream: boolean): () => string {
  return () => JSON.stringify({ model: MODEL, prompt: `${PROMPT} [[emu tokens=${tokens} gen.token_ms=2]]`, max_tokens: tokens, stream });
}

function responses(tokens: number, stream: boolean): () => string {
  return () =>
    JSON.stringify({ model: MODEL, input: `${PROMPT} [[emu tokens=${tokens} gen.token_ms=2]]`, max_output_tokens: tokens, stream });
}

function messages(tokens: number, stream: boolean): () => string {
  return () =>
    JSON.stringify({
      model: MODEL,
      max_tokens: tokens,
      messages: [{ role: "user", content: `${PROMPT} [[emu tokens=${tokens} gen.token_ms=2]]` }],
      stream,
    });
}

const CHAT = "/v1/chat/completions";

export const CHAOS_KINDS: readonly ChaosKind[] = [
  { name: "chat stream", weight: 20, route: CHAT, body: chat(24, "gen.token_ms=3", true) },
  { name: "chat json", weight: 10, route: CHAT, body: chat(12, "", false) },
  { name: "completions stream", weight: 6, route: "/v1/completions", body: completions(16, true) },
  { name: "completions json", weight: 5, route: "/v1/completions", body: completions(8, false) },
  { name: "responses stream", weight: 6, route: "/v1/responses", body: responses(16, true) },
  { name: "responses json", weight: 3, route: "/v1/responses", body: responses(8, false) },
  { name: "messages stream", weight: 6, route: "/v1/messages", body: messages(16, true) },
  { name: "messages json", weight: 3, route: "/v1/messages", body: messages(8, false) },
  { name: "client leaves mid-stream", weight: 8, route: CHAT, body: chat(64, "gen.token_ms=10", true), leaveAfterMs: [20, 400] },
  { name: "client leaves mid-prefill", weight: 3, route: CHAT, body: chat(8, "ctx.prefill_ms=2000", true), leaveAfterMs: [100, 1500] },
  { name: "client leaves a JSON answer", weight: 3, route: "/v1/messages", body: messages(32, false), leaveAfterMs: [10, 200] },
  { name: "generation rejects 503", weight: 3, route: CHAT, body: chat(16, "gen.reject=503", true) },
  { name: "context rejects 500", weight: 3, route: CHAT, body: chat(16, "ctx.reject=500", false) },
  { name: "generation cuts after 3", weight: 3, route: CHAT, body: chat(16, "gen.cut=3 gen.token_ms=3", true) },
  {
    name: "in-band error after 3",
    weight: 2,
    route: "/v1/responses",
    body: () => JSON.stringify({ model: MODEL, input: `${PROMPT} [[emu tokens=16 gen.error_event=3]]`, stream: true }),
  },
  {
    name: "silence 1.5 s",
    weight: 2,
    route: "/v1/messages",
    body: () =>
      JSON.stringify({
        model: MODEL,
        max_tokens: 8,
        messages: [{ role: "user", content: `${PROMPT} [[emu tokens=8 gen.silence_ms=1500 gen.silence_after=2]]` }],
        stream: true,
      }),
  },
  { name: "bad: not JSON", weight: 2, route: CHAT, body: () => '{"model": "m", "messages": [' },
  {
    name: "bad: nested 100,000 deep",
    weight: 1,
    route: "/v1/completions",
    body: () => `{"model":"m","prompt":"x","x":${"[".repeat(100_000)}${"]".repeat(100_000)}}`,
  },
  {
    name: "bad: max_tokens 1e300",
    weight: 2,
    route: "/v1/messages",
    body: () => JSON.stringify({ model: MODEL, max_tokens: 1e300, messages: [{ role: "user", content: "x" }] }),
  },
  {
    name: "bad: over --max-body-bytes",
    weight: 1,
    route: "/v1/responses",
    body: () => JSON.stringify({ model: MODEL, input: "x".repeat(1536 * 1024) }),
  },
];

export function pickChaosKind(random: () => number): ChaosKind {
  const total = CHAOS_KINDS.reduce((sum, kind) => sum + kind.weight, 0);
  let point = random() * total;
  for (const kind of CHAOS_KINDS) {
    point -= kind.weight;
    if (point < 0) return kind;
  }
  return CHAOS_KINDS[0]!;
}
