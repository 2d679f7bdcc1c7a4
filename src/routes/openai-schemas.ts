import * as v from "valibot";
import { badRequest, type ProxyError } from "../errors.ts";
import type { JsonObject } from "../json/json.ts";

/**
 * Only the fields the proxy reads are checked; every other field passes through untouched
 * for the workers to judge (looseObject).
 */
const model = v.pipe(v.string("model must be a string"), v.minLength(1, "model must not be empty"));
const stream = v.optional(v.nullable(v.boolean("stream must be a boolean")));

/**
 * Lists are checked in one loop and passed on as they are: valibot's array schemas build a new
 * array and a result per item (a 255,000-id prompt cost ~4.7× its bytes in memory, measured).
 */
export function list<T>(isItem: (item: unknown) => item is T, message: string): v.GenericSchema<unknown, T[]> {
  return v.custom<T[]>((value) => Array.isArray(value) && value.every(isItem), message);
}

const isAnything = (_item: unknown): _item is unknown => true;
const isInteger = (item: unknown): item is number => Number.isInteger(item);

const tokenIds = v.pipe(list(isInteger, "prompt must be a list of integers"), v.minLength(1, "prompt must not be an empty list"));
const prompt = v.union(
  [v.string(), v.strictTuple([v.string()]), tokenIds],
  "Disaggregated serving supports a single string prompt or a list of token ids as prompt",
);

export const completionsRequest = v.looseObject({ model, stream, prompt });
export const chatRequest = v.looseObject({
  model,
  stream,
  messages: v.pipe(list(isAnything, "messages must be a list"), v.minLength(1, "messages must not be empty")),
});

/**
 * Checks a chat body. What chatRequest accepts is judged here first without valibot, whose
 * loose object copies the whole body per request; any other body goes to the schema, which
 * says what is wrong with it.
 */
export function checkChat(body: JsonObject): void {
  const messages = body["messages"];
  const plain = isModel(body["model"]) && isStream(body["stream"]) && Array.isArray(messages) && messages.length > 0;
  if (!plain) check(chatRequest, body);
}

/** Checks a completions body: like checkChat, a plain prompt is judged without valibot. */
export function checkCompletions(body: JsonObject): void {
  const given = body["prompt"];
  const plainPrompt =
    typeof given === "string" ||
    (Array.isArray(given) && ((given.length === 1 && typeof given[0] === "string") || (given.length > 0 && given.every(isInteger))));
  if (!(isModel(body["model"]) && isStream(body["stream"]) && plainPrompt)) check(completionsRequest, body);
}

function isModel(value: unknown): boolean {
  return typeof value === "string" && value.length > 0;
}

function isStream(value: unknown): boolean {
  return value === undefined || value === null || typeof value === "boolean";
}

/** Checks `body` against `schema`; a 400 with the first issue's path and message otherwise. */
export function check(schema: v.GenericSchema, body: JsonObject): void {
  const result = v.safeParse(schema, body);
  if (!result.success) throw invalid(result.issues);
}

function invalid(issues: readonly v.BaseIssue<unknown>[]): ProxyError {
  const first = issues[0];
  const path = first ? v.getDotPath(first) : null;
  if (first && !path) return badRequest(`Invalid request: ${first.message}`);
  const missing = first?.received === "undefined";
  return badRequest(missing ? `Invalid request: ${path} is required` : `Invalid request: ${path}: ${first?.message ?? "invalid"}`);
}
