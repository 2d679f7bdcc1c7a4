import { anthropicStream } from "../dialects/anthropic-dialect.ts";
import { randomAnthropicIds } from "../dialects/anthropic-ids.ts";
import { toChatRequest, toCountTokensRequest } from "../dialects/anthropic-request.ts";
import { anthropicErrorFor, toAnthropicMessage } from "../dialects/anthropic-response.ts";
import { ProxyError } from "../errors.ts";
import { replayChunks } from "../dialects/openai-replay.ts";
import { readClientBody } from "./client-body.ts";
import type { Connection, RouteDeps } from "./deps.ts";
import { errorHeaders } from "./errors.ts";
import { checkedBody, proxyThroughPipeline, readModelBody, withinRequest, type RouteDialect } from "./proxied.ts";

/** A failure outside the stream, in Anthropic's envelope. */
export function anthropicErrorResponse(error: ProxyError, headers?: Headers): Response {
  const { status, body } = anthropicErrorFor(error);
  const out = errorHeaders(error, headers);
  out.set("content-type", "application/json");
  return new Response(JSON.stringify(body), { status, headers: out });
}

/**
 * POST /v1/messages: converted to a chat request, run through the chat pipeline, and
 * converted back (or reframed into Anthropic events). The query string (Claude Code sends
 * `?beta=true`) plays no part in routing.
 */
export async function messages(deps: RouteDeps, request: Request, connection: Connection): Promise<Response> {
  const read = await readModelBody(deps, "/v1/messages", request);
  const { body, source } = read;
  const model = typeof body["model"] === "string" ? body["model"] : undefined;
  const chat = checkedBody(deps, "/v1/messages", request, read, () => toChatRequest(body, randomAnthropicIds.newToolUseId));
  const dialect: RouteDialect = {
    openStream: (_body, maxEventBytes) => ({
      stream: anthropicStream({ ...randomAnthropicIds, ...(model === undefined ? {} : { model }), maxEventBytes }),
      opensEarly: true,
    }),
    replay: (answer, chatBody) => replayChunks("chat", answer, chatBody),
    errorResponse: anthropicErrorResponse,
    renderJson: (answer) => toAnthropicMessage(answer, randomAnthropicIds),
  };
  return proxyThroughPipeline({ deps, request, connection, route: "/v1/messages", api: "chat", body: chat, source, dialect });
}

/**
 * POST /v1/messages/count_tokens: converted, then answered by one context worker, placed,
 * admitted and logged like every request; a worker's error answer keeps its status and body.
 */
export async function countTokens(deps: RouteDeps, request: Request): Promise<Response> {
  const body = await readClientBody(request, deps.bodyLimits);
  const converted = toCountTokensRequest(body, randomAnthropicIds.newToolUseId);
  const ctx = await deps.startRequest("/v1/messages/count_tokens", false, request);
  return withinRequest(
    ctx,
    request,
    (error) => anthropicErrorResponse(error),
    async () => {
      const answer = await deps.callWorker(ctx, { role: "context", method: "POST", path: "/v1/messages/count_tokens", body: converted });
      if (answer.status >= 400) {
        throw new ProxyError("WORKER_HTTP_ERROR", answer.status, "The context worker rejected the request", { workerAnswer: answer });
      }
      ctx.sent(answer.body.byteLength);
      const response = new Response(answer.body, { status: 200, headers: { "content-type": "application/json" } });
      return { response, ended: Promise.resolve({ status: 200, error: undefined }) };
    },
  );
}
