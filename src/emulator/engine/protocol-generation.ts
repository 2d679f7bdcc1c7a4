/**
 * The request fields a trtllm-serve worker of a given version accepts, for the emulator to
 * play older workers faithfully (`--protocol-version`). Upstream's request models forbid
 * unknown fields (tensorrt_llm/serve/openai_protocol.py: OpenAIBaseModel extra="forbid"), so
 * an older worker answers a newer field with a 400 naming it, in FastAPI's validation-error
 * text; ResponsesRequest is extra="allow" and ignores what it does not know.
 *
 * Kept apart from the proxy's own table (src/workers/protocol.ts) on purpose: this one models
 * the workers, that one the proxy's belief about them, and the tests check one against the other.
 * Four generations are played, each named by a release (any other version plays the one it falls in):
 *  - 1.3.0rc14: before ctx_usage (NVIDIA/TensorRT-LLM#14177); conversation_id inside disaggregated_params;
 *  - 1.3.0rc18: with ctx_usage (the generation worker reports the context phase's usage);
 *  - 1.3.0rc28 (and rc29): conversation_params (#15452/#17618, the old conversation_id gone),
 *    return_prompt_token_ids_b64, resolved_thinking, Responses disaggregation (#18497);
 *  - 1.4.0rc0 (the default; and 1.3.0rc30): newest — injected_chat_template_kwargs (#19351,
 *    merged 2026-09-29, the day of the rc30 and 1.4.0rc0 bumps).
 */

import { isJsonObject, type JsonObject, type JsonValue } from "../../json/json.ts";
import type { ApiKind } from "../http/model-request.ts";
import { WorkerError } from "../http/worker-error.ts";

export const NEWEST_PROTOCOL_VERSION = "1.4.0rc0";

export interface WorkerGeneration {
  /** What GET /version reports. */
  readonly version: string;
  /** Every field DisaggregatedParams has in this version. */
  readonly disaggFields: ReadonlySet<string>;
  /** Version-dependent top-level request fields this version has. */
  readonly topLevel: ReadonlySet<string>;
  /** /v1/responses runs context_only / generation_only; before, disaggregated_params is ignored there. */
  readonly responsesDisaggregation: boolean;
}

const BASE_DISAGG_FIELDS = [
  "request_type",
  "first_gen_tokens",
  "first_gen_log_probs",
  "first_gen_logits",
  "ctx_request_id",
  "encoded_opaque_state",
  "draft_tokens",
  "disagg_request_id",
  "ctx_dp_rank",
  "ctx_info_endpoint",
  "schedule_style",
];

/** Top-level fields that came and went with versions; every other field is not checked here. */
const VERSIONED_TOP_LEVEL = ["conversation_params", "injected_chat_template_kwargs", "prompt_token_ids_b64"];

/** rc number of a 1.3.0rcN version; a final 1.3.0 or later counts as newer than every rc. */
function rcOf(version: string): number {
  const match = /^v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.?rc(\d+))?/.exec(version);
  if (match === null) throw new RangeError(`Cannot read the protocol version ${JSON.stringify(version)} (e.g. 1.3.0rc18)`);
  const [, major, minor, , rc] = match;
  const base = Number(major) * 1000 + Number(minor);
  if (base < 1003) return 0;
  if (base > 1003 || rc === undefined) return Number.MAX_SAFE_INTEGER;
  return Number(rc);
}

export function generationOf(version: string = NEWEST_PROTOCOL_VERSION): WorkerGeneration {
  const rc = rcOf(version);
  const disagg = new Set(BASE_DISAGG_FIELDS);
  const top = new Set<string>();
  if (rc < 26) disagg.add("conversation_id");
  if (rc >= 18) disagg.add("ctx_usage");
  if (rc >= 26) {
    disagg.add("return_prompt_token_ids_b64");
    top.add("conversation_params");
    top.add("prompt_token_ids_b64");
  }
  if (rc >= 28) disagg.add("resolved_thinking");
  if (rc >= 30) top.add("injected_chat_template_kwargs");
  // The rank a remote or centralized router chose (RouteHint, which router.py's RemoteHttpRouter
  // imports from openai_protocol.py, read_file id 56124310390): played by the newest generation.
  if (rc >= 30) disagg.add("route_hint");
  return { version, disaggFields: disagg, topLevel: top, responsesDisaggregation: rc >= 28 };
}

const MODEL_NAMES: Readonly<Record<ApiKind, string>> = {
  completions: "CompletionRequest",
  chat: "ChatCompletionRequest",
  responses: "ResponsesRequest",
};

/**
 * The body as this version's request model takes it: a 400 for the first field it forbids;
 * on /v1/responses (extra="allow") a version without Responses disaggregation drops
 * disaggregated_params and serves the request whole, as a real one does.
 */
export function admitFields(generation: WorkerGeneration, api: ApiKind, body: JsonObject): JsonObject {
  if (api === "responses") {
    if (generation.responsesDisaggregation || body["disaggregated_params"] === undefined) return body;
    const { disaggregated_params: _ignored, ...rest } = body;
    return rest;
  }
  for (const field of VERSIONED_TOP_LEVEL) {
    const applies = field !== "injected_chat_template_kwargs" && field !== "prompt_token_ids_b64" ? true : api === "chat";
    if (body[field] !== undefined && (!applies || !generation.topLevel.has(field))) throw extraForbidden(api, [field], body[field]);
  }
  const params = body["disaggregated_params"];
  if (isJsonObject(params)) {
    for (const [field, value] of Object.entries(params)) {
      if (!generation.disaggFields.has(field)) throw extraForbidden(api, ["disaggregated_params", field], value);
    }
  }
  return body;
}

/** FastAPI's RequestValidationError as trtllm-serve answers it: 400, str(exc.errors()). */
function extraForbidden(api: ApiKind, loc: readonly string[], input: JsonValue | undefined): WorkerError {
  const where = ["'body'", ...loc.map((part) => `'${part}'`)].join(", ");
  const shown = JSON.stringify(input ?? null).slice(0, 80);
  return new WorkerError(
    400,
    `1 validation error for ${MODEL_NAMES[api]}: [{'type': 'extra_forbidden', 'loc': (${where}), 'msg': 'Extra inputs are not permitted', 'input': ${shown}}]`,
  );
}
