import * as v from "valibot";
import { responsesStream } from "../dialects/responses-dialect.ts";
import { replayResponseEvents } from "../dialects/responses-replay.ts";
import { nameResponsesRequest } from "../dialects/responses-naming.ts";
import { buildResponsesOpening } from "../dialects/responses-opening.ts";
import { badRequest } from "../errors.ts";
import type { Connection, RouteDeps } from "./deps.ts";
import { openAiErrorResponse } from "./errors.ts";
import { check, list } from "./openai-schemas.ts";
import { checkedBody, proxyThroughPipeline, readModelBody, type RouteDialect } from "./proxied.ts";

const responsesRequest = v.looseObject({
  model: v.pipe(v.string("model must be a string"), v.minLength(1, "model must not be empty")),
  stream: v.optional(v.nullable(v.boolean("stream must be a boolean"))),
  input: v.union(
    [v.string(), list((_item: unknown): _item is unknown => true, "input must be a list")],
    "input must be a string or a list of input items",
  ),
});

const dialect: RouteDialect = {
  openStream(body, maxEventBytes) {
    const opening = buildResponsesOpening(body, Date.now());
    return { stream: responsesStream({ opening, maxEventBytes }), opensEarly: opening !== undefined };
  },
  replay: (answer) => replayResponseEvents(answer),
  errorResponse: openAiErrorResponse,
};

/**
 * POST /v1/responses. Responses are not stored on a disaggregated deployment, so `store`
 * is forced off and a request that continues a stored response is refused.
 */
export async function responses(deps: RouteDeps, request: Request, connection: Connection): Promise<Response> {
  const read = await readModelBody(deps, "/v1/responses", request);
  const { body, source } = read;
  checkedBody(deps, "/v1/responses", request, read, () => {
    check(responsesRequest, body);
    const previous = body["previous_response_id"];
    if (previous !== undefined && previous !== null) {
      throw badRequest("previous_response_id is not supported: responses are not stored on a disaggregated deployment");
    }
  });
  body["store"] = false;
  return proxyThroughPipeline({
    deps,
    request,
    connection,
    route: "/v1/responses",
    api: "responses",
    body,
    source,
    dialect,
    prepare: (ctx, named) => {
      nameResponsesRequest(named, ctx.disaggRequestId);
    },
  });
}
