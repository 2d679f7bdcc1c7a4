/** The names a worker gives its replies: fixed once per request, shared by every chunk. */

import type { ApiKind } from "../http/model-request.ts";

export function randomHex(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

export interface ReplyIds {
  /** `cmpl-…`, `chatcmpl-…`, or the Responses id (request_id when given, else `resp_…`). */
  readonly replyId: string;
  /** Responses: the id of the one message output item. */
  readonly messageItemId: string;
  /** Unix seconds. */
  readonly created: number;
}

const PREFIXES: Readonly<Record<ApiKind, string>> = {
  completions: "cmpl-",
  chat: "chatcmpl-",
  responses: "resp_",
};

export function replyIds(api: ApiKind, requestId: string | undefined): ReplyIds {
  return {
    replyId: api === "responses" && requestId !== undefined ? requestId : `${PREFIXES[api]}${randomHex()}`,
    messageItemId: `msg_${randomHex()}`,
    created: Math.floor(Date.now() / 1000),
  };
}
