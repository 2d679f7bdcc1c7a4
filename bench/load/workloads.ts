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

const AGENT_PROSE = "You are a coding agent. Read the repository, plan the change, edit the files, run the tests and report what you did. ";

/** An agent's turn: a system message of `kb` KB of prose (its tools and history), then a short user line. */
export function agentChat(kb: number, tokens: number): Workload {
  const bytes = kb * 1024;
  const system = AGENT_PROSE.repeat(Math.ceil(bytes / AGENT_PROSE.length)).slice(0, bytes);
  return {
    route: "/v1/chat/completions",
    api: "chat",
    body: {
      model: MODEL,
      messages: [
        { role: "system", content: system },
        { role: "user", content: `What is the next step? [[emu tokens=${tokens}]]` },
      ],
      max_tokens: tokens,
    },
  };
}
