import { badRequest } from "../errors.ts";
import { isRawJson, type JsonObject, type JsonValue } from "../json/json.ts";

/**
 * Numbers a worker can hold. trtllm-serve's request models type these as Python int/float
 * (tensorrt_llm/serve/openai_protocol.py, ChatCompletionRequest/CompletionRequest), which
 * take any size; the engine then stores token counts as SizeType32 (int32), the seed as
 * uint64 and sampling floats as float32, so a value beyond those fails inside the worker
 * (the probe's `max_tokens: 1e300`, forwarded as 1e+308). Checked on the body the workers
 * will see, so every route (Anthropic and Responses after their conversion) is covered.
 */
const INT32_MAX = 2 ** 31 - 1;
const UINT64_MAX = 2n ** 64n - 1n;
const FLOAT32_MAX = 3.4028234663852886e38;

interface IntegerRange {
  readonly min: bigint;
  readonly max: bigint;
}

const COUNT: IntegerRange = { min: 1n, max: BigInt(INT32_MAX) };
const NON_NEGATIVE: IntegerRange = { min: 0n, max: BigInt(INT32_MAX) };

const INTEGER_FIELDS: Readonly<Record<string, IntegerRange>> = {
  max_tokens: COUNT,
  max_completion_tokens: COUNT,
  max_output_tokens: COUNT,
  n: COUNT,
  best_of: COUNT,
  truncate_prompt_tokens: COUNT,
  min_tokens: NON_NEGATIVE,
  top_k: NON_NEGATIVE,
  top_logprobs: NON_NEGATIVE,
  prompt_ignore_length: NON_NEGATIVE,
  seed: { min: 0n, max: UINT64_MAX },
};

const FLOAT_FIELDS = [
  "temperature",
  "top_p",
  "top_p_min",
  "min_p",
  "frequency_penalty",
  "presence_penalty",
  "repetition_penalty",
  "length_penalty",
  "priority",
];

/** The integer fields with their ranges, in order, and each range's ends as numbers (a plain number needs no bigint). */
const INTEGER_CHECKS = Object.entries(INTEGER_FIELDS).map(([field, range]) => ({
  field,
  range,
  min: Number(range.min),
  max: Number(range.max),
}));

/** 400 naming the first numeric field a worker could not hold; null and absent pass. */
export function checkNumericBounds(body: JsonObject): void {
  for (const { field, range, min, max } of INTEGER_CHECKS) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    // A safe integer compares exactly with the ends as numbers (each exact, or beyond 2^53).
    if (typeof value === "number" && Number.isSafeInteger(value) && value >= min && value <= max) continue;
    const integer = integerOf(value);
    if (integer === undefined || integer < range.min || integer > range.max) {
      throw badRequest(`Invalid request: ${field} must be an integer from ${range.min} to ${range.max}`);
    }
  }
  for (const field of FLOAT_FIELDS) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== "number" || Math.abs(value) > FLOAT32_MAX) {
      throw badRequest(`Invalid request: ${field} must be a number of magnitude at most ${FLOAT32_MAX}`);
    }
  }
}

function integerOf(value: JsonValue): bigint | undefined {
  if (typeof value === "number") return Number.isSafeInteger(value) ? BigInt(value) : undefined;
  // Integers of 16+ digits arrive as raw JSON text (json/json.ts), exact.
  if (isRawJson(value) && /^-?\d+$/.test(value.rawJSON)) return BigInt(value.rawJSON);
  return undefined;
}
