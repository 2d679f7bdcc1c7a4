import { describe, expect, test } from "bun:test";
import { TEXT_HASH_ALGO, TOKEN_HASH_ALGO } from "../routing/coordinator-wire.ts";
import { routingOf } from "./placement-key.ts";

describe("placement keys", () => {
  test("a routing key becomes what the routers know: nothing, a conversation, or block hashes of its first prompt", () => {
    expect(routingOf({ kind: "none" })).toBeUndefined();
    expect(routingOf({ kind: "conversation", id: "c1" })).toMatchObject({
      conversationId: "c1",
      promptText: "",
      promptTokenIds: undefined,
    });
    const blocks = routingOf({
      kind: "blocks",
      hashesByAlgo: new Map([
        [TOKEN_HASH_ALGO, [[1n, 2n], [9n]]],
        [TEXT_HASH_ALGO, [[3n]]],
      ]),
      convKey: 5n,
      numTokens: 64,
      conversationId: "c2",
      model: "m",
    });
    expect(blocks).toMatchObject({ conversationId: "c2", model: "m", promptTokenCount: 64, knownBlocks: { tokens: [1n, 2n], text: [3n] } });
  });
});
