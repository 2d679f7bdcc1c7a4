/**
 * The wire of upstream's disaggregated coordinator (fleet mode), both ways: what a serving
 * process POSTs to /select and /finish and what /cluster_info, /version and errors answer, as
 * tensorrt_llm/serve/coordinator_server.py [id 56726411408] serves them and router.py
 * CoordinatorDelegatingRouter [id 54957247436] sends them (disagg_coordinator.py @ 0186c597).
 * Bodies are MessagePack both ways (`Content-Type: application/msgpack` on what upstream sends;
 * its server reads any body as msgpack, whatever the content type, and has no JSON fallback).
 * Every read is bounded (COORDINATOR_BODY_BYTES) and shape-checked; a refusal is `{error}` with
 * upstream's own wording. docs/cluster.md tells the story.
 */

import type { Role } from "../config/types.ts";
import { readPrefix } from "../json/bounded-read.ts";
import { isMsgpackMap, MsgpackError, readMsgpack, type MsgpackMap, type MsgpackValue } from "../json/msgpack-read.ts";
import { writeMsgpack, type WireMap, type WireValue } from "../json/msgpack-write.ts";

export type { MsgpackMap, MsgpackValue, WireMap, WireValue };

export const MSGPACK_CONTENT_TYPE = "application/msgpack";

/**
 * The largest body read either way. A kv_cache_aware key of a 128k-token prompt at 32 tokens a
 * block is 4,096 hashes of 9 bytes (37 KB); 4 MiB leaves room for several hash algorithms and a
 * server_info map.
 */
export const COORDINATOR_BODY_BYTES = 4 * 1024 * 1024;

/** The role words upstream's server accepts (coordinator_server.py: context, ctx, generation, gen). */
const ROLE_WORDS: Readonly<Record<string, Role>> = { context: "context", ctx: "context", generation: "generation", gen: "generation" };

/** The hash algorithm of token-id block keys, as the engine and upstream name it (router_utils KV_CACHE_HASH_ALGO_V1). */
export const TOKEN_HASH_ALGO = "v1_block_key";
/**
 * Ours, beside upstream's algorithms in `block_hashes_by_algo`: chained wyhash hashes of the
 * prompt's text in windows of tokens_per_block × 4 UTF-16 code units (routing/block-hash.ts
 * textBlockHashes), for a proxy that has no tokenizer; v1 was v1_block_key over the code units,
 * 50× slower. Upstream's coordinator ignores an algorithm no worker uses, so sending it there
 * costs nothing.
 */
export const TEXT_HASH_ALGO = "disagg_proxy_text_v2";

/**
 * What `routing_key` carries. Upstream's conversation router sends the conversation id (a str)
 * or nil; its kv_cache_aware router a map `{block_hashes_by_algo: {algo: [[int]]}, conv_key,
 * num_tokens}` (router.py _routing_key_sync). `conversation_id` and `model` in that map are
 * ours: a key that asks both for stickiness and for a prefix match, and the served model (a fleet
 * of several models places each on its own workers).
 */
export type RoutingKey =
  | { readonly kind: "none" }
  | { readonly kind: "conversation"; readonly id: string }
  | {
      readonly kind: "blocks";
      /** Per algorithm, one chain of block hashes per prompt (upstream batches several prompts). */
      readonly hashesByAlgo: ReadonlyMap<string, readonly (readonly bigint[])[]>;
      readonly convKey: bigint | undefined;
      readonly numTokens: number | undefined;
      readonly conversationId: string | undefined;
      readonly model?: string | undefined;
    };

export interface SelectRequest {
  readonly role: Role;
  readonly routingKey: RoutingKey;
  /** The request's disagg_request_id (`req_id`); nil is allowed by upstream's server. */
  readonly reqId: bigint | undefined;
  /** `host:port` of the paired leg's worker, as /select answered it. */
  readonly excludeServer: string | undefined;
}

export interface SelectAnswer {
  /** `host:port`, no scheme (an https worker keeps its `https://`): the client sends to `http://{server}`. */
  readonly server: string;
  readonly info: WireMap;
  readonly reqId: bigint | undefined;
}

export interface FinishRequest {
  readonly role: Role;
  readonly reqId: bigint;
  /** Default true, as upstream. */
  readonly success: boolean;
}

/** A message that does not have the shape: `error` is what the 400 answer says. */
export interface WireRefusal {
  readonly error: string;
}

export function isRefusal(value: object): value is WireRefusal {
  return "error" in value && typeof value.error === "string";
}

/** A message read and decoded, or why not (a decoded `{error}` answer is a value, not a refusal). */
export type Decoded = { readonly ok: true; readonly value: MsgpackValue } | { readonly ok: false; readonly error: string };

/** A body read whole within COORDINATOR_BODY_BYTES and decoded. */
export async function readWireBody(body: ReadableStream<Uint8Array> | null): Promise<Decoded> {
  const bytes = await readPrefix(body, COORDINATOR_BODY_BYTES + 1);
  if (bytes.byteLength > COORDINATOR_BODY_BYTES) return { ok: false, error: `body is larger than ${COORDINATOR_BODY_BYTES} bytes` };
  return decodeWire(bytes);
}

export function decodeWire(bytes: Uint8Array): Decoded {
  try {
    return { ok: true, value: readMsgpack(bytes) };
  } catch (error) {
    if (!(error instanceof MsgpackError)) throw error;
    return { ok: false, error: `invalid MessagePack body: ${error.message}` };
  }
}

export function encodeWire(value: WireValue): Uint8Array {
  return writeMsgpack(value);
}

/** POST /select's body, checked as coordinator_server.py (D) checks it, then the routing key's shape. */
export function readSelectRequest(body: MsgpackValue): SelectRequest | WireRefusal {
  if (!isMsgpackMap(body) || !("role" in body) || !("routing_key" in body)) return { error: "body must include 'role' and 'routing_key'" };
  const role = roleOf(body["role"]);
  if (role === undefined) return { error: `invalid role: ${shown(body["role"])}` };
  const reqId = body["req_id"];
  if (reqId !== undefined && reqId !== null && typeof reqId !== "bigint") return { error: "req_id must be an integer" };
  const exclude = body["exclude_server"];
  if (exclude !== undefined && exclude !== null && typeof exclude !== "string") return { error: "exclude_server must be a string" };
  const routingKey = routingKeyOf(body["routing_key"]);
  if (isRefusal(routingKey)) return routingKey;
  return { role, routingKey, reqId: reqId ?? undefined, excludeServer: exclude ?? undefined };
}

export function encodeSelectRequest(request: SelectRequest): Uint8Array {
  // Key order as upstream's client builds the payload.
  return writeMsgpack({
    role: request.role,
    routing_key: routingKeyValue(request.routingKey),
    req_id: request.reqId ?? null,
    exclude_server: request.excludeServer ?? null,
  });
}

/** POST /finish's body: role and an integer req_id required, success a bool when present (true when absent). */
export function readFinishRequest(body: MsgpackValue): FinishRequest | WireRefusal {
  if (!isMsgpackMap(body) || !("role" in body) || !("req_id" in body)) return { error: "body must include 'role' and 'req_id'" };
  const role = roleOf(body["role"]);
  if (role === undefined) return { error: `invalid role: ${shown(body["role"])}` };
  const reqId = body["req_id"];
  if (typeof reqId !== "bigint") return { error: "req_id must be an integer" };
  // Absent is true; a nil success is refused, as upstream's body.get("success", True) gives None.
  const success = "success" in body ? body["success"] : true;
  if (typeof success !== "boolean") return { error: "success must be a boolean" };
  return { role, reqId, success };
}

export function encodeFinishRequest(request: FinishRequest): Uint8Array {
  return writeMsgpack({ role: request.role, req_id: request.reqId, success: request.success });
}

export function encodeSelectAnswer(answer: SelectAnswer): Uint8Array {
  return writeMsgpack({ server: answer.server, info: answer.info, req_id: answer.reqId ?? null });
}

/** A 200 answer of /select: `server` must be a non-empty string. */
export function readSelectAnswer(body: MsgpackValue): SelectAnswer | WireRefusal {
  if (!isMsgpackMap(body)) return { error: "the /select answer is not a map" };
  const server = body["server"];
  if (typeof server !== "string" || server === "") return { error: "the /select answer has no server" };
  const info = body["info"];
  const reqId = body["req_id"];
  return { server, info: isMsgpackMap(info) ? toWireMap(info) : {}, reqId: typeof reqId === "bigint" ? reqId : undefined };
}

/** GET /cluster_info as the newest client reads it: is_ready and the two server lists; the rest as sent. */
export interface ClusterInfo {
  readonly isReady: boolean;
  readonly serverLists: Readonly<Record<Role, readonly string[]>>;
  /** Per role, the block-hash encoding a kv_cache_aware key must use (`tokens_per_block`, `kv_cache_hash_algo`). */
  readonly routingKeyConfigs: Readonly<Partial<Record<Role, WireMap>>>;
  readonly raw: WireMap;
}

export function readClusterInfo(body: MsgpackValue): ClusterInfo | WireRefusal {
  if (!isMsgpackMap(body)) return { error: "the /cluster_info answer is not a map" };
  const lists = body["server_lists"];
  const listOf = (role: Role): string[] => {
    const list = isMsgpackMap(lists) ? lists[role] : undefined;
    return Array.isArray(list) ? list.filter((server) => typeof server === "string") : [];
  };
  const configs = body["routing_key_configs"];
  const configOf = (role: Role): WireMap | undefined => {
    const config = isMsgpackMap(configs) ? configs[role] : undefined;
    return isMsgpackMap(config) ? toWireMap(config) : undefined;
  };
  const routingKeyConfigs: Partial<Record<Role, WireMap>> = {};
  for (const role of ["context", "generation"] as const) {
    const config = configOf(role);
    if (config !== undefined) routingKeyConfigs[role] = config;
  }
  return {
    isReady: body["is_ready"] === true,
    serverLists: { context: listOf("context"), generation: listOf("generation") },
    routingKeyConfigs,
    raw: toWireMap(body),
  };
}

/** An error answer's text (`{"error": str}`), or undefined when the body says nothing readable. */
export function errorTextOf(body: MsgpackValue): string | undefined {
  const error = isMsgpackMap(body) ? body["error"] : undefined;
  return typeof error === "string" ? error : undefined;
}

/** A value in an error text, as Python's f-string would show a scalar. */
function shown(value: MsgpackValue | undefined): string {
  if (typeof value === "string") return value;
  if (typeof value === "bigint" || typeof value === "number" || typeof value === "boolean") return String(value);
  if (value === null || value === undefined) return "None";
  return value instanceof Uint8Array ? "bytes" : Array.isArray(value) ? "a list" : "a map";
}

function roleOf(value: MsgpackValue | undefined): Role | undefined {
  return typeof value === "string" && Object.hasOwn(ROLE_WORDS, value) ? ROLE_WORDS[value] : undefined;
}

function routingKeyOf(value: MsgpackValue | undefined): RoutingKey | WireRefusal {
  if (value === null || value === undefined) return { kind: "none" };
  if (typeof value === "string") return value === "" ? { kind: "none" } : { kind: "conversation", id: value };
  if (!isMsgpackMap(value)) return { error: "routing_key must be nil, a conversation id (str) or a map" };
  const byAlgo = value["block_hashes_by_algo"] ?? null;
  if (byAlgo !== null && !isMsgpackMap(byAlgo)) return { error: "routing_key.block_hashes_by_algo must be a map" };
  const hashesByAlgo = new Map<string, bigint[][]>();
  for (const [algo, chains] of Object.entries(byAlgo ?? {})) {
    const read = chainsOf(chains);
    if (read === undefined) return { error: `routing_key.block_hashes_by_algo.${algo} must be a list of lists of integers` };
    hashesByAlgo.set(algo, read);
  }
  const convKey = value["conv_key"] ?? null;
  if (convKey !== null && typeof convKey !== "bigint") return { error: "routing_key.conv_key must be an integer" };
  const numTokens = value["num_tokens"] ?? null;
  if (numTokens !== null && (typeof numTokens !== "bigint" || numTokens < 0n))
    return { error: "routing_key.num_tokens must be a non-negative integer" };
  const conversationId = value["conversation_id"] ?? null;
  if (conversationId !== null && typeof conversationId !== "string") return { error: "routing_key.conversation_id must be a string" };
  const model = value["model"] ?? null;
  if (model !== null && typeof model !== "string") return { error: "routing_key.model must be a string" };
  return {
    kind: "blocks",
    hashesByAlgo,
    convKey: convKey ?? undefined,
    numTokens: numTokens === null ? undefined : Number(numTokens),
    conversationId: conversationId === null || conversationId === "" ? undefined : conversationId,
    ...(model === null ? {} : { model }),
  };
}

function chainsOf(value: MsgpackValue | undefined): bigint[][] | undefined {
  if (!Array.isArray(value)) return undefined;
  const chains: bigint[][] = [];
  for (const chain of value) {
    if (!Array.isArray(chain) || !chain.every((hash): hash is bigint => typeof hash === "bigint")) return undefined;
    chains.push(chain);
  }
  return chains;
}

function routingKeyValue(key: RoutingKey): WireValue {
  if (key.kind === "none") return null;
  if (key.kind === "conversation") return key.id;
  const byAlgo: Record<string, WireValue> = {};
  for (const [algo, chains] of key.hashesByAlgo) byAlgo[algo] = chains;
  return {
    block_hashes_by_algo: byAlgo,
    conv_key: key.convKey ?? null,
    num_tokens: key.numTokens ?? 0,
    conversation_id: key.conversationId,
  };
}

/** A decoded map as a value to write again (bin members become their bytes' list, which no coordinator message carries). */
function toWireMap(map: MsgpackMap): WireMap {
  const out: Record<string, WireValue> = {};
  Object.setPrototypeOf(out, null);
  for (const [key, value] of Object.entries(map)) if (value !== undefined) out[key] = toWireValue(value);
  return out;
}

function toWireValue(value: MsgpackValue): WireValue {
  if (value instanceof Uint8Array) return [...value];
  if (Array.isArray(value)) return value.map(toWireValue);
  if (isMsgpackMap(value)) return toWireMap(value);
  return value;
}

/** A worker as this wire names it: `host:port`, no scheme (an https worker keeps its `https://`, as upstream's clients keep it). */
export function serverNameOf(origin: string): string {
  return origin.startsWith("http://") ? origin.slice("http://".length) : origin;
}
