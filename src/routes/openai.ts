import { openAiStream } from "../dialects/openai.ts";
import { replayChunks } from "../dialects/openai-replay.ts";
import { badRequest } from "../errors.ts";
import type { JsonObject } from "../json/json.ts";
import type { Connection, RouteDeps } from "./deps.ts";
import { openAiErrorResponse } from "./errors.ts";
import { checkChat, checkCompletions } from "./openai-schemas.ts";
import { checkedBody, proxyThroughPipeline, readModelBody, type RouteDialect } from "./proxied.ts";

function dialectFor(api: "chat" | "completions"): RouteDialect {
  return {
    openStream: (_body, maxEventBytes) => ({ stream: openAiStream(maxEventBytes), opensEarly: true }),
    replay: (answer, body) => replayChunks(api, answer, body),
    errorResponse: openAiErrorResponse,
  };
}

const COMPLETIONS = dialectFor("completions");
const CHAT = dialectFor("chat");

/** POST /v1/completions */
export async function completions(deps: RouteDeps, request: Request, connection: Connection): Promise<Response> {
  const read = await readModelBody(deps, "/v1/completions", request);
  const { body, source } = read;
  checkedBody(deps, "/v1/completions", request, read, () => checkCompletions(body));
  return proxyThroughPipeline({
    deps,
    request,
    connection,
    route: "/v1/completions",
    api: "completions",
    body: unwrapPrompt(body),
    source,
    dialect: COMPLETIONS,
  });
}

/** POST /v1/chat/completions */
export async function chatCompletions(deps: RouteDeps, request: Request, connection: Connection): Promise<Response> {
  const read = await readModelBody(deps, "/v1/chat/completions", request);
  const { body, source } = read;
  checkedBody(deps, "/v1/chat/completions", request, read, () => {
    checkChat(body);
    if (body["chat_template"] !== undefined && !deps.settings.allowRequestChatTemplate) {
      throw badRequest("chat_template in a request is not allowed on this server (allow_request_chat_template is off)");
    }
  });
  return proxyThroughPipeline({ deps, request, connection, route: "/v1/chat/completions", api: "chat", body, source, dialect: CHAT });
}

/** A one-element prompt list is its element, as trtllm-serve treats it. */
function unwrapPrompt(body: JsonObject): JsonObject {
  const prompt = body["prompt"];
  if (Array.isArray(prompt) && prompt.length === 1 && typeof prompt[0] === "string") return { ...body, prompt: prompt[0] };
  return body;
}
