/**
 * GET /v1/models and GET /v1/models/{id}: OpenAI's list and model object, or Anthropic's when
 * the client sends `anthropic-version` (the Anthropic SDK's models.list and models.retrieve ask
 * the same paths). In a fleet of several models (or with aliases) the proxy lists what its
 * workers serve and the aliases; otherwise a context worker answers, as trtllm-serve's proxy asks
 * one. Admitted and logged like every request; a worker's error status is kept.
 */

import { ProxyError } from "../errors.ts";
import { isJsonObject, parseJsonOrUndefined, type JsonObject, type JsonValue } from "../json/json.ts";
import type { RequestContext } from "../request/context.ts";
import type { Answer } from "../streaming/stream-request.ts";
import type { RouteDeps } from "./deps.ts";
import { openAiErrorResponse } from "./errors.ts";
import { anthropicErrorResponse } from "./messages.ts";
import { withinRequest } from "./proxied.ts";

const MODEL_PATH = "/v1/models/";

/** The list as OpenAI's `{object: "list", data}`; a worker's error answer as it came. */
type Listed =
  | { readonly kind: "list"; readonly list: JsonObject; readonly bytes?: Uint8Array }
  | { readonly kind: "refused"; readonly answer: Answer };

export async function models(deps: RouteDeps, request: Request): Promise<Response> {
  const anthropic = request.headers.has("anthropic-version");
  const ctx = await deps.startRequest("/v1/models", false, request);
  return withinRequest(ctx, request, renderer(anthropic), async () => {
    const listed = await listOf(deps, ctx);
    if (listed.kind === "refused") return listed.answer;
    if (!anthropic && listed.bytes !== undefined) return json(ctx, listed.bytes);
    return json(ctx, anthropic ? anthropicList(listed.list) : listed.list);
  });
}

export async function model(deps: RouteDeps, request: Request): Promise<Response> {
  const anthropic = request.headers.has("anthropic-version");
  const id = modelIdOf(request);
  const ctx = await deps.startRequest("/v1/models/{id}", false, request);
  return withinRequest(ctx, request, renderer(anthropic), async () => {
    const listed = await listOf(deps, ctx);
    if (listed.kind === "refused") return listed.answer;
    const entry = entriesOf(listed.list).find((candidate) => candidate["id"] === id);
    // OpenAI's own wording for a model it does not have.
    if (entry === undefined) throw new ProxyError("MODEL_NOT_FOUND", 404, `The model '${id}' does not exist`);
    return json(ctx, anthropic ? anthropicModel(entry) : entry);
  });
}

/** The id after /v1/models/, decoded: model names hold slashes (`meta-llama/Llama-3.1-8B`) and may be escaped. */
function modelIdOf(request: Request): string {
  const path = new URL(request.url, "http://host").pathname;
  const raw = path.slice(path.indexOf(MODEL_PATH) + MODEL_PATH.length);
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

function renderer(anthropic: boolean): (error: ProxyError) => Response {
  return anthropic ? (error) => anthropicErrorResponse(error) : (error) => openAiErrorResponse(error);
}

async function listOf(deps: RouteDeps, ctx: RequestContext): Promise<Listed> {
  const listed = deps.modelList();
  if (listed !== undefined) return { kind: "list", list: listed };
  const answer = await deps.callWorker(ctx, { role: "context", method: "GET", path: "/v1/models" });
  if (answer.status >= 400) {
    ctx.sent(answer.body.byteLength);
    const response = new Response(answer.body, { status: answer.status, headers: { "content-type": "application/json" } });
    const error = new ProxyError("WORKER_HTTP_ERROR", answer.status, "The context worker rejected the request");
    return { kind: "refused", answer: { response, ended: Promise.resolve({ status: answer.status, error }) } };
  }
  const list = parseJsonOrUndefined(new TextDecoder().decode(answer.body));
  if (!isJsonObject(list) || !Array.isArray(list["data"]))
    throw new ProxyError("WORKER_BAD_ANSWER", 502, "The context worker's model list is not a JSON object with a data list");
  return { kind: "list", list, bytes: answer.body };
}

function entriesOf(list: JsonObject): JsonObject[] {
  const data = list["data"];
  return Array.isArray(data) ? data.filter(isJsonObject) : [];
}

/** Anthropic's page of models (its SDK reads type, display_name, created_at and the page's has_more, first_id, last_id). */
function anthropicList(list: JsonObject): JsonObject {
  const data = entriesOf(list).map(anthropicModel);
  return { data, has_more: false, first_id: data[0]?.["id"] ?? null, last_id: data.at(-1)?.["id"] ?? null };
}

/** An OpenAI model entry as Anthropic's ModelInfo: the id is its display name, `created` (seconds) its RFC 3339 `created_at`. */
function anthropicModel(entry: JsonObject): JsonObject {
  const created: JsonValue | undefined = entry["created"];
  const seconds = typeof created === "number" && Number.isFinite(created) ? created : 0;
  const id = typeof entry["id"] === "string" ? entry["id"] : "";
  return { type: "model", id, display_name: id, created_at: new Date(seconds * 1000).toISOString() };
}

function json(ctx: RequestContext, body: JsonObject | Uint8Array): Answer {
  const bytes = body instanceof Uint8Array ? body : new TextEncoder().encode(JSON.stringify(body));
  ctx.sent(bytes.byteLength);
  return {
    response: new Response(bytes, { headers: { "content-type": "application/json" } }),
    ended: Promise.resolve({ status: 200, error: undefined }),
  };
}
