import { describe, expect, test } from "bun:test";
import {
  decodeWire,
  encodeFinishRequest,
  encodeSelectAnswer,
  encodeSelectRequest,
  isRefusal,
  readClusterInfo,
  readFinishRequest,
  readSelectAnswer,
  readSelectRequest,
  readWireBody,
  serverNameOf,
  COORDINATOR_BODY_BYTES,
  type MsgpackValue,
} from "./coordinator-wire.ts";

/** Bytes from hex words (spaces ignored), written out by hand as Python's msgpack.packb(payload, use_bin_type=True) packs them. */
function bytes(...words: string[]): Uint8Array {
  return Uint8Array.from(Buffer.from(words.join("").replaceAll(" ", ""), "hex"));
}

function decoded(message: Uint8Array): MsgpackValue {
  const read = decodeWire(message);
  if (!read.ok) throw new Error(`refused: ${read.error}`);
  return read.value;
}

const REQ_ID = (1n << 40n) + 42n;

/**
 * tests/unittest/disaggregated/test_coordinator_e2e.py @ 2713ff6b: the gen router is a
 * conversation router and the request carries `X-Session-ID: conv-e2e`, so the disagg server's
 * CoordinatorDelegatingRouter (router.py [id 54957247436]) POSTs {role, routing_key, req_id,
 * exclude_server} with the context worker's host:port excluded. Python packs an int >= 2^32 as uint64 (0xcf).
 */
const E2E_SELECT = bytes(
  "84",
  "a4 726f6c65 aa 67656e65726174696f6e", // "role": "generation"
  "ab 726f7574696e675f6b6579 a8 636f6e762d653265", // "routing_key": "conv-e2e"
  "a6 7265715f6964 cf 000001000000002a", // "req_id": 2**40 + 42
  "ae 6578636c7564655f736572766572 af 3132372e302e302e313a3138303031", // "exclude_server": "127.0.0.1:18001"
);

/** test_coordinator_worker.py @ 82750ef6 test_conversation_coordinator_sticky_by_conv_id: conv-A, nothing excluded. */
const WORKER_TEST_SELECT = bytes(
  "84",
  "a4 726f6c65 aa 67656e65726174696f6e",
  "ab 726f7574696e675f6b6579 a6 636f6e762d41", // "routing_key": "conv-A"
  "a6 7265715f6964 cf 4000000000003039", // 2**62 + 12345
  "ae 6578636c7564655f736572766572 c0", // "exclude_server": None
);

/** A kv_cache_aware key as router.py _routing_key_sync builds it: one prompt's chain of v1 block hashes. */
const KV_SELECT = bytes(
  "84",
  "a4 726f6c65 a7 636f6e74657874", // "role": "context"
  "ab 726f7574696e675f6b6579 83",
  "b4 626c6f636b5f6861736865735f62795f616c676f 81 ac 76315f626c6f636b5f6b6579 91 92 cf fedcba9876543210 07", // {"v1_block_key": [[0xfedcba9876543210, 7]]}
  "a8 636f6e765f6b6579 cf 8000000000000001", // "conv_key": 2**63 + 1 (uint64)
  "aa 6e756d5f746f6b656e73 40", // "num_tokens": 64
  "a6 7265715f6964 cf 000001000000002a",
  "ae 6578636c7564655f736572766572 c0",
);

/** router.py _finish_async: {"role": role, "req_id": req_id, "success": success}; role "gen" as upstream's server accepts it. */
const FINISH_FAILED = bytes("83", "a4 726f6c65 a3 67656e", "a6 7265715f6964 cf 000001000000002a", "a7 73756363657373 c2");

describe("POST /select bodies as upstream's serving process sends them", () => {
  test("the e2e test's conversation placement reads as role, conversation id, integer req_id and excluded server", () => {
    const request = readSelectRequest(decoded(E2E_SELECT));
    expect(request).toEqual({
      role: "generation",
      routingKey: { kind: "conversation", id: "conv-e2e" },
      reqId: REQ_ID,
      excludeServer: "127.0.0.1:18001",
    });
  });

  test("a req_id beyond 2^53 stays exact and a nil exclude_server is absent", () => {
    const request = readSelectRequest(decoded(WORKER_TEST_SELECT));
    expect(request).toEqual({
      role: "generation",
      routingKey: { kind: "conversation", id: "conv-A" },
      reqId: (1n << 62n) + 12345n,
      excludeServer: undefined,
    });
  });

  test("a kv_cache_aware key keeps every block hash as an unsigned 64-bit integer", () => {
    const request = readSelectRequest(decoded(KV_SELECT));
    if (isRefusal(request)) throw new Error(request.error);
    expect(request.role).toBe("context");
    expect(request.routingKey).toEqual({
      kind: "blocks",
      hashesByAlgo: new Map([["v1_block_key", [[0xfedcba9876543210n, 7n]]]]),
      convKey: (1n << 63n) + 1n,
      numTokens: 64,
      conversationId: undefined,
    });
  });

  test("what our encoder writes reads back as the same request upstream's bytes give", () => {
    for (const fixture of [E2E_SELECT, WORKER_TEST_SELECT, KV_SELECT]) {
      const request = readSelectRequest(decoded(fixture));
      if (isRefusal(request)) throw new Error(request.error);
      expect(readSelectRequest(decoded(encodeSelectRequest(request)))).toEqual(request);
    }
  });

  test.each([
    ["a body that is not msgpack", bytes("c1"), "invalid MessagePack body"],
    ["a list instead of a map", bytes("90"), "body must include 'role' and 'routing_key'"],
    ["no routing_key", bytes("81 a4 726f6c65 a3 67656e"), "body must include 'role' and 'routing_key'"],
    ["an unknown role", bytes("82 a4 726f6c65 a6 6465636f6465 ab 726f7574696e675f6b6579 c0"), "invalid role: decode"],
    [
      "a float req_id",
      bytes("83 a4 726f6c65 a3 67656e ab 726f7574696e675f6b6579 c0 a6 7265715f6964 cb 3ff0000000000000"),
      "req_id must be an integer",
    ],
    ["a bool req_id", bytes("83 a4 726f6c65 a3 67656e ab 726f7574696e675f6b6579 c0 a6 7265715f6964 c3"), "req_id must be an integer"],
    [
      "an integer exclude_server",
      bytes("83 a4 726f6c65 a3 67656e ab 726f7574696e675f6b6579 c0 ae 6578636c7564655f736572766572 01"),
      "exclude_server must be a string",
    ],
    ["a list routing_key", bytes("82 a4 726f6c65 a3 67656e ab 726f7574696e675f6b6579 90"), "routing_key must be nil"],
    [
      "block hashes that are not integers",
      bytes("82 a4 726f6c65 a3 67656e ab 726f7574696e675f6b6579 81 b4 626c6f636b5f6861736865735f62795f616c676f 81 a1 76 91 91 a1 78"),
      "must be a list of lists of integers",
    ],
  ])("%s is refused with upstream's wording", (_name, message, wording) => {
    const read = decodeWire(message);
    const request = read.ok ? readSelectRequest(read.value) : read;
    expect("error" in request ? request.error : "").toContain(wording);
  });
});

describe("POST /finish bodies", () => {
  test("upstream's failed finish reads as role, req_id and success false; success defaults to true", () => {
    expect(readFinishRequest(decoded(FINISH_FAILED))).toEqual({ role: "generation", reqId: REQ_ID, success: false });
    expect(readFinishRequest(decoded(bytes("82 a4 726f6c65 a3 637478 a6 7265715f6964 05")))).toEqual({
      role: "context",
      reqId: 5n,
      success: true,
    });
    expect(readFinishRequest(decoded(encodeFinishRequest({ role: "context", reqId: REQ_ID, success: false })))).toEqual({
      role: "context",
      reqId: REQ_ID,
      success: false,
    });
  });

  test.each([
    ["no req_id", bytes("81 a4 726f6c65 a3 67656e"), "body must include 'role' and 'req_id'"],
    ["a nil req_id", bytes("82 a4 726f6c65 a3 67656e a6 7265715f6964 c0"), "req_id must be an integer"],
    [
      "a success that is not a bool",
      bytes("83 a4 726f6c65 a3 67656e a6 7265715f6964 01 a7 73756363657373 01"),
      "success must be a boolean",
    ],
    // body.get("success", True) is None when the key is sent as nil: not a bool.
    ["a nil success", bytes("83 a4 726f6c65 a3 67656e a6 7265715f6964 01 a7 73756363657373 c0"), "success must be a boolean"],
  ])("%s is refused", (_name, message, wording) => {
    const finish = readFinishRequest(decoded(message));
    expect(isRefusal(finish) ? finish.error : "").toContain(wording);
  });
});

describe("answers", () => {
  test("a /select answer names the server as host:port and echoes a req_id beyond 32 bits as an integer", () => {
    const encoded = encodeSelectAnswer({ server: "127.0.0.1:18001", info: { server_info: {}, match_length: 64 }, reqId: REQ_ID });
    expect(readSelectAnswer(decoded(encoded))).toEqual({
      server: "127.0.0.1:18001",
      info: { server_info: {}, match_length: 64n },
      reqId: REQ_ID,
    });
    // Python reads an int only when it is packed as one: 2^40 + 42 must not go out as a float64 (0xcb).
    expect(Buffer.from(encoded).toString("hex")).not.toContain("cb");
  });

  test("cluster_info gives readiness, both server lists and the routing key configs", () => {
    const info = readClusterInfo(
      decoded(
        encodeSelectAnswerLike({
          is_ready: true,
          server_lists: { context: ["127.0.0.1:18001"], generation: ["127.0.0.1:18002", 7] },
          routing_key_configs: { generation: { tokens_per_block: 32, kv_cache_hash_algo: "v1_block_key" } },
        }),
      ),
    );
    if (isRefusal(info)) throw new Error(info.error);
    expect(info.isReady).toBe(true);
    expect(info.serverLists).toEqual({ context: ["127.0.0.1:18001"], generation: ["127.0.0.1:18002"] });
    expect(info.routingKeyConfigs).toEqual({ generation: { tokens_per_block: 32n, kv_cache_hash_algo: "v1_block_key" } });
  });
});

describe("server names", () => {
  test("a worker is named host:port as upstream's clients send to http://{server}; an https worker keeps its scheme", () => {
    expect(serverNameOf("http://10.0.0.5:8001")).toBe("10.0.0.5:8001");
    expect(serverNameOf("http://[::1]:8001")).toBe("[::1]:8001");
    expect(serverNameOf("https://gen.example:443")).toBe("https://gen.example:443");
  });
});

describe("bounded reads", () => {
  test("a body over the bound is refused before it is decoded", async () => {
    const body = new Response(new Uint8Array(COORDINATOR_BODY_BYTES + 10)).body;
    expect(await readWireBody(body)).toEqual({ ok: false, error: `body is larger than ${COORDINATOR_BODY_BYTES} bytes` });
  });

  test.each([
    ["an array claiming 4 billion entries", bytes("dd ffffffff 01"), "declares more entries than bytes are left"],
    ["a map claiming 65,535 entries", bytes("de ffff a1 61 01"), "declares more entries than bytes are left"],
    ["33 nested lists", bytes("91".repeat(33), "01"), "nests deeper than 32 levels"],
    ["an ext type (a msgpackr record)", bytes("d4 00 01"), "ext types"],
    ["a map with an integer key", bytes("81 01 02"), "a map key is not a string"],
    ["a str that is not UTF-8", bytes("a2 c328"), "not valid UTF-8"],
    ["bytes after the message", bytes("c0 c0"), "bytes follow the message"],
    ["a string cut short", bytes("a5 6162"), "ends early"],
  ])("%s is refused", (_name, message, wording) => {
    const read = decodeWire(message);
    expect(read.ok ? "" : read.error).toContain(wording);
  });

  test("a __proto__ key is a plain member of the decoded map", () => {
    const value = decoded(bytes("81 a9 5f5f70726f746f5f5f 81 a4 726f6c65 a3 67656e"));
    expect(Object.getPrototypeOf(value)).toBeNull();
    expect(Object.keys(value as object)).toEqual(["__proto__"]);
  });
});

function encodeSelectAnswerLike(value: Parameters<typeof encodeSelectAnswer>[0]["info"]): Uint8Array {
  // Any map through the same writer the coordinator answers with.
  return encodeSelectAnswerMap(value);
}

import { encodeWire as encodeSelectAnswerMap } from "./coordinator-wire.ts";
