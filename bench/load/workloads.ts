/** The client requests the scenarios send; emulator behaviour is chosen by `[[emu …]]` prompt directives. */

import type { Workload } from "./paths.ts";

const MODEL = "emulated-model";
const PROMPT = "Summarise the benefits of disaggregated prefill and decode for large language model serving";

/** Non-streamed chat with a short answer: the proxy's per-request cost dominates. */
export function chatJson(tokens: number): Workload {
  return {
    route: "/v1/chat/completions",
    api: "chat",
    body: { model: MODEL, messages: [{ role: "user", content: `${PROMPT} [[emu tokens=${tokens}]]` }], max_tokens: tokens },
  };
}

/** Streamed chat; `directives` adds emulator behaviour (silence, faults, latency). */
export function chatStream(tokens: number, directives = ""): Workload {
  return {
    route: "/v1/chat/completions",
    api: "chat",
    body: {
      model: MODEL,
      messages: [{ role: "user", content: `${PROMPT} [[emu tokens=${tokens} ${directives}]]` }],
      max_tokens: tokens,
      stream: true,
    },
  };
}

export function responsesStream(tokens: number, directives = ""): Workload {
  return {
    route: "/v1/responses",
    api: "responses",
    body: { model: MODEL, input: `${PROMPT} [[emu tokens=${tokens} ${directives}]]`, max_output_tokens: tokens, stream: true },
  };
}

/** Anthropic Messages rides on the chat worker API. */
export function messagesStream(tokens: number, directives = ""): Workload {
  return {
    route: "/v1/messages",
    api: "chat",
    body: {
      model: MODEL,
      max_tokens: tokens,
      messages: [{ role: "user", content: `${PROMPT} [[emu tokens=${tokens} ${directives}]]` }],
      stream: true,
    },
  };
}
