/** A /select's routing key as what the routers know of a request. */

import { TEXT_HASH_ALGO, TOKEN_HASH_ALGO, type RoutingKey } from "../routing/coordinator-wire.ts";
import type { RoutingRequest } from "../routing/routing-request.ts";

/**
 * What the routers may know of a request placed by its key: a conversation id places by
 * stickiness alone (as upstream's coordinator: no content match for it); a block-hash map by its
 * hashes, token-id hashes first and our text hashes for a prompt the serving process could not
 * tokenize. A batched prompt is matched by its first prompt. Nil: placed as a request with no
 * content (least loaded, round robin).
 */
export function routingOf(key: RoutingKey): RoutingRequest | undefined {
  if (key.kind === "none") return undefined;
  if (key.kind === "conversation") return { conversationId: key.id, promptText: "", promptLength: 0, promptTokenIds: undefined };
  return {
    conversationId: key.conversationId,
    model: key.model,
    promptText: "",
    promptLength: 0,
    promptTokenIds: undefined,
    promptTokenCount: key.numTokens,
    knownBlocks: { tokens: key.hashesByAlgo.get(TOKEN_HASH_ALGO)?.[0], text: key.hashesByAlgo.get(TEXT_HASH_ALGO)?.[0] },
  };
}
