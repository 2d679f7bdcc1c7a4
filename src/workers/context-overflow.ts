/**
 * Whether a worker's refusal says the prompt is longer than its context window, and the counts
 * it gave. Every wording trtllm-serve workers have used is read:
 *
 * - since #19457 (28c5d5a5c5, 2026-10-01; tensorrt_llm/executor/utils.py
 *   `context_length_exceeded_message`, raised from executor/base_worker.py): OpenAI's own
 *   wording, "…maximum context length is M tokens. However, your messages resulted in N
 *   tokens…", with `code: "context_length_exceeded"` in the worker's error envelope (the server
 *   tests, read_file id 70156702744, build it with (8, 9) and find "maximum context length is 8
 *   tokens");
 * - the PyTorch backend before it (tensorrt_llm/llmapi/llm.py `_check_arguments`, read_file id
 *   55216765702): "The sum of prompt length (P), query length (Q) should not exceed
 *   max_num_tokens (M)", P a float (the prompt over the context-parallel size);
 * - the TensorRT backend (same function): "The sum of prompt length (P) and query length (Q)
 *   max_tokens (T) should not exceed max_seq_len (M)", and its older "The sum of prompt length
 *   (P) and max_tokens (T) should not exceed max_seq_len (M)" (id 2629603228);
 * - `_deduce_max_tokens` (executor/base_worker.py): "`default_max_tokens` (D) should be greater
 *   than 0, `default_max_tokens` (D) = max_seq_len (M) - `splited_prompt_len` (P) -
 *   `query_token_len` (Q)".
 */

import type { ContextOverflow } from "../errors.ts";

/** The error code OpenAI and trtllm-serve (since #19457) give a context overflow. */
export const CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded";

const NUMBER = String.raw`(\d+(?:\.\d+)?)`;

interface Wording {
  readonly pattern: RegExp;
  /** The counts from the match's groups (as numbers, in the pattern's order). */
  readonly counts: (values: readonly number[]) => ContextOverflow;
}

const WORDINGS: readonly Wording[] = [
  {
    pattern: new RegExp(String.raw`maximum context length is ${NUMBER} tokens`, "i"),
    counts: ([max]) => ({ promptTokens: undefined, maxTokens: max }),
  },
  {
    pattern: new RegExp(String.raw`prompt length \(${NUMBER}\), query length \(${NUMBER}\) should not exceed max_num_tokens \(${NUMBER}\)`),
    counts: ([prompt = 0, query = 0, max]) => ({ promptTokens: Math.round(prompt) + query, maxTokens: max }),
  },
  {
    pattern: new RegExp(
      String.raw`prompt length \(${NUMBER}\) and query length \(${NUMBER}\) max_tokens \(${NUMBER}\) should not exceed max_seq_len \(${NUMBER}\)`,
    ),
    counts: ([prompt = 0, query = 0, output = 0, max]) => ({ promptTokens: Math.round(prompt) + query + output, maxTokens: max }),
  },
  {
    pattern: new RegExp(String.raw`prompt length \(${NUMBER}\) and max_tokens \(${NUMBER}\) should not exceed max_seq_len \(${NUMBER}\)`),
    counts: ([prompt = 0, output = 0, max]) => ({ promptTokens: Math.round(prompt) + output, maxTokens: max }),
  },
  {
    pattern: new RegExp(String.raw`max_seq_len \(${NUMBER}\) - \`splited_prompt_len\` \(${NUMBER}\) - \`query_token_len\` \(${NUMBER}\)`),
    counts: ([max, prompt = 0, query = 0]) => ({ promptTokens: Math.round(prompt) + query, maxTokens: max }),
  },
];

/** In OpenAI's wording, the prompt's count follows "resulted in", "requested", "has" or "contains". */
const OPENAI_PROMPT_COUNT = new RegExp(String.raw`(?:resulted in|requested|has|contains)(?: at least)? ${NUMBER}(?: input)? tokens`, "i");

/**
 * The overflow a worker's 400 states, or undefined when it refused for another reason. `code`
 * is its envelope's `code` (or its nested `error.code`): `context_length_exceeded` alone is
 * enough, whatever the message says.
 */
export function contextOverflowOf(message: string, code: unknown): ContextOverflow | undefined {
  for (const wording of WORDINGS) {
    const match = wording.pattern.exec(message);
    if (match === null) continue;
    const counts = wording.counts(match.slice(1).map(Number));
    if (counts.promptTokens !== undefined) return counts;
    const prompt = OPENAI_PROMPT_COUNT.exec(message.slice(match.index + match[0].length));
    return { promptTokens: prompt === null ? undefined : Number(prompt[1]), maxTokens: counts.maxTokens };
  }
  return code === CONTEXT_LENGTH_EXCEEDED ? { promptTokens: undefined, maxTokens: undefined } : undefined;
}
