import { openAiStream } from "../dialects/openai.ts";
import { badRequest } from "../errors.ts";
import type { JsonObject } from "../json.ts";
import type { App } from "../server/app.ts";
import { readClientBody } from "./client-body.ts";
import { openAiErrorResponse } from "./errors.ts";
import { chatRequest, check, completionsRequest } from "./openai-schemas.ts";
import { proxyThroughPipeline, type RouteDialect } from "./proxied.ts";

const dialect: RouteDialect = {
  openStream: (_body, maxEventBytes) => ({ stream: openAiStream(maxEventBytes), opensEarly: true }),
  errorResponse: openAiErrorResponse,
};

/** POST /v1/completions */
export async function completions(app: App, request: Request, keepOpen: () => void): Promise<Response> {
  const body = await readClientBody(request, app.bodyLimits);
  check(completionsRequest, body);
  return proxyThroughPipeline({ app, request, keepOpen, route: "/v1/completions", api: "completions", body: unwrapPrompt(body), dialect });
}

/** POST /v1/chat/completions */
export async function chatCompletions(app: App, request: Request, keepOpen: () => void): Promise<Response> {
  const body = await readClientBody(request, app.bodyLimits);
  check(chatRequest, body);
  if (body["chat_template"] !== undefined && !app.config.allowRequestChatTemplate) {
    throw badRequest("chat_template in a request is not allowed on this server (allow_request_chat_template is off)");
  }
  return proxyThroughPipeline({ app, request, keepOpen, route: "/v1/chat/completions", api: "chat", body, dialect });
}

/** A one-element prompt list is its element, as trtllm-serve treats it. */
function unwrapPrompt(body: JsonObject): JsonObject {
  const prompt = body["prompt"];
  if (Array.isArray(prompt) && prompt.length === 1 && typeof prompt[0] === "string") return { ...body, prompt: prompt[0] };
  return body;
}
