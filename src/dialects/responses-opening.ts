/**
 * The `response` object a stream opens with before any worker answered (seed #21452), built
 * from the client's request the way a worker builds it (ResponsesResponse.from_request).
 *
 * An opening is only built for a request the workers will accept: a request they would reject
 * (a sampling parameter out of range, a field of the wrong type) must keep its HTTP error
 * status, so it waits for its pipeline instead of getting a 200 it cannot honour.
 */
import { type JsonObject, type JsonValue, isJsonObject, readInteger } from "../json/json.ts";

type Field = JsonValue | undefined;

const TRUNCATIONS: ReadonlySet<string> = new Set(["auto", "disabled"]);
const SERVICE_TIERS: ReadonlySet<string> = new Set(["auto", "default", "flex", "scale", "priority"]);

// A worker drops explicit nulls before validating, so null means "use the default".
function isUnset(value: Field): value is null | undefined {
  return value === undefined || value === null;
}

function numberIn(value: Field, min: number, max: number): boolean {
  return isUnset(value) || (typeof value === "number" && Number.isFinite(value) && value >= min && value <= max);
}

function positiveInteger(value: Field): boolean {
  if (isUnset(value)) return true;
  const integer = readInteger(value);
  return integer !== undefined && integer >= 1n;
}

function ofType(value: Field, type: "string" | "boolean" | "number" | "object" | "array"): boolean {
  if (isUnset(value)) return true;
  if (type === "object") return isJsonObject(value);
  if (type === "array") return Array.isArray(value);
  return typeof value === type;
}

function oneOf(value: Field, allowed: ReadonlySet<string>): boolean {
  return isUnset(value) || (typeof value === "string" && allowed.has(value));
}

/** tool_choice other than "none" requires tools, as the worker's check_tool_choice does. */
function toolChoiceAcceptable(body: JsonObject): boolean {
  const choice = body["tool_choice"];
  if (isUnset(choice)) return true;
  if (typeof choice !== "string" && !isJsonObject(choice)) return false;
  return choice === "none" || Array.isArray(body["tools"]);
}

function acceptable(body: JsonObject): boolean {
  return (
    typeof body["model"] === "string" &&
    typeof body["request_id"] === "string" &&
    numberIn(body["temperature"], 0, 2) &&
    numberIn(body["top_p"], 0, 1) &&
    positiveInteger(body["max_output_tokens"]) &&
    ofType(body["instructions"], "string") &&
    ofType(body["tools"], "array") &&
    ofType(body["parallel_tool_calls"], "boolean") &&
    ofType(body["text"], "object") &&
    ofType(body["reasoning"], "object") &&
    ofType(body["metadata"], "object") &&
    ofType(body["user"], "string") &&
    ofType(body["top_logprobs"], "number") &&
    oneOf(body["truncation"], TRUNCATIONS) &&
    oneOf(body["service_tier"], SERVICE_TIERS) &&
    toolChoiceAcceptable(body) &&
    // Prompt templates are rejected by workers; background needs store, which is forced off.
    isUnset(body["prompt"]) &&
    body["background"] !== true
  );
}

function or(value: Field, fallback: JsonValue): JsonValue {
  return isUnset(value) ? fallback : value;
}

/**
 * The opening `response` object (status "in_progress"), or undefined when the request's
 * parameters are ones a worker rejects. `body.request_id` must already be set
 * (nameResponsesRequest): it is the response id the workers will answer under.
 */
export function buildResponsesOpening(body: JsonObject, nowMs: number): JsonObject | undefined {
  if (!acceptable(body)) return undefined;
  return {
    id: or(body["request_id"], null),
    object: "response",
    created_at: Math.floor(nowMs / 1000),
    status: "in_progress",
    error: null,
    incomplete_details: null,
    instructions: or(body["instructions"], null),
    max_output_tokens: or(body["max_output_tokens"], null),
    max_tool_calls: or(body["max_tool_calls"], null),
    model: or(body["model"], null),
    output: [],
    parallel_tool_calls: or(body["parallel_tool_calls"], false),
    // Responses are not stored on a disaggregated server, so there is no chain to point to.
    previous_response_id: null,
    reasoning: or(body["reasoning"], null),
    store: false,
    // A worker echoes its sampling defaults (1.0) for unset temperature and top_p.
    temperature: or(body["temperature"], 1),
    text: or(body["text"], null),
    tool_choice: or(body["tool_choice"], "auto"),
    tools: or(body["tools"], []),
    top_p: or(body["top_p"], 1),
    truncation: or(body["truncation"], "disabled"),
    usage: null,
    user: or(body["user"], null),
    metadata: or(body["metadata"], null),
    background: false,
    service_tier: or(body["service_tier"], "auto"),
    top_logprobs: or(body["top_logprobs"], 0),
  };
}
