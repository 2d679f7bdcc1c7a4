import { anthropicStream } from "../dialects/anthropic-dialect.ts";
import { randomAnthropicIds } from "../dialects/anthropic-ids.ts";
import { toChatRequest, toCountTokensRequest } from "../dialects/anthropic-request.ts";
import { anthropicErrorFor, toAnthropicMessage } from "../dialects/anthropic-response.ts";
import { ProxyError } from "../errors.ts";
import type { App } from "../server/app.ts";
import { readClientBody } from "./client-body.ts";
import { errorHeaders } from "./errors.ts";
import { proxyThroughPipeline, type RouteDialect } from "./proxied.ts";

const COUNT_TOKENS_TIMEOUT_MS = 30_000;

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
export async function messages(app: App, request: Request, keepOpen: () => void): Promise<Response> {
  const body = await readClientBody(request, app.bodyLimits);
  const model = typeof body["model"] === "string" ? body["model"] : undefined;
  const chat = toChatRequest(body, randomAnthropicIds.newToolUseId);
  const dialect: RouteDialect = {
    openStream: (_body, maxEventBytes) => ({
      stream: anthropicStream({ ...randomAnthropicIds, ...(model === undefined ? {} : { model }), maxEventBytes }),
      opensEarly: true,
    }),
    errorResponse: anthropicErrorResponse,
    renderJson: (answer) => toAnthropicMessage(answer, randomAnthropicIds),
  };
  return proxyThroughPipeline({ app, request, keepOpen, route: "/v1/messages", api: "chat", body: chat, dialect });
}

/** POST /v1/messages/count_tokens: converted, then answered by one ready context worker. */
export async function countTokens(app: App, request: Request): Promise<Response> {
  const body = await readClientBody(request, app.bodyLimits);
  const converted = toCountTokensRequest(body, randomAnthropicIds.newToolUseId);
  const worker = app.placement.pool.ready("context")[0];
  if (!worker) throw new ProxyError("NOT_READY", 503, "No context worker is ready");
  const upstream = await app.workerFetch(`${worker.origin}/v1/messages/count_tokens`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(converted),
    signal: AbortSignal.any([request.signal, AbortSignal.timeout(COUNT_TOKENS_TIMEOUT_MS)]),
  }).catch((cause: unknown) => {
    throw new ProxyError("WORKER_UNREACHABLE", 502, "The context worker is unreachable", { cause });
  });
  const bytes = new Uint8Array(await upstream.arrayBuffer());
  if (upstream.status >= 400) {
    const contentType = upstream.headers.get("content-type") ?? "application/json";
    throw new ProxyError("WORKER_HTTP_ERROR", upstream.status, "The context worker rejected the request", {
      workerAnswer: { status: upstream.status, contentType, body: bytes },
    });
  }
  return new Response(bytes, { status: 200, headers: { "content-type": "application/json" } });
}
