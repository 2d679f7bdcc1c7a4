/**
 * How a worker-bound body is put on the wire (reference §2.4): JSON, or msgpack with
 * `Content-Type: application/json` and `X-TRTLLM-Msgpack: 1` as trtllm-serve's newest proxy
 * sends it. Integers beyond 32 bits are written as msgpack 64-bit integers (never floats), so a
 * 63-bit disagg_request_id kept as raw JSON text arrives exact.
 */

import { Packr } from "msgpackr/pack";
import { isRawJson, type JsonObject, type JsonValue } from "../json/json.ts";
import type { JsonSource } from "../json/json-source.ts";

export const MSGPACK_HEADER = "x-trtllm-msgpack";

/** A large JSON body as its parts (the client's own bytes between the proxy's), sent without joining them. */
export interface PartsBody {
  readonly parts: readonly Uint8Array[];
  readonly byteLength: number;
}

export type WorkerBody = string | Uint8Array | PartsBody;

export interface BodyCodec {
  /** `source`: the client's body the worker body was built from, whose unchanged members are sent as their bytes. */
  encode(body: JsonObject, source?: JsonSource): WorkerBody;
  /** Headers every body of this codec travels with. */
  readonly headers: Readonly<Record<string, string>>;
}

export const JSON_CODEC: BodyCodec = {
  encode: (body, source) => (source === undefined ? stringifyBody(body) : spliceBody(body, source)),
  headers: {},
};

export function isPartsBody(body: WorkerBody): body is PartsBody {
  return typeof body === "object" && !(body instanceof Uint8Array);
}

/**
 * Bodies at least this large are sent as their parts; smaller ones are joined. The proxy's own
 * client writes large parts as they are (http1/connection.ts); fetch joins parts below 256 KiB
 * (workers/worker-call.ts requestOf), as this codec did.
 */
export const PARTS_BODY_BYTES = 64 * 1024;

const encoder = new TextEncoder();

/** A key JSON writes as it is, between quotes (the proxy's own keys are all such). */
const PLAIN_KEY = /^[\w.-]*$/;

/**
 * A worker body as JSON, each top-level member whose value is still the one the client's bytes
 * parsed to (the same value, or the same object: the pipeline builds worker bodies by copying
 * the client's members and replacing its own) written as those bytes; the proxy's members,
 * and any member it changed, serialised. One member per key, whatever the client repeated.
 * The hand-off parameters go last, as in stringifyBody.
 */
export function spliceBody(body: JsonObject, source: JsonSource): WorkerBody {
  const pieces: (string | Uint8Array)[] = [];
  let text = "{";
  let first = true;
  // The run of the client's bytes being extended: members next to each other in its body go as one.
  let runStart = -1;
  let runEnd = 0;
  let runIndex = 0;
  for (const key in body) {
    const value = body[key];
    if (value === undefined || key === "disaggregated_params") continue;
    const member = source.members.get(key);
    if (member?.own !== undefined && member.value === value) {
      if (runStart >= 0) pieces.push(source.bytes.subarray(runStart, runEnd));
      runStart = -1;
      pieces.push(`${text}${first ? "" : ","}${JSON.stringify(key)}:`, member.own);
      text = "";
    } else if (member !== undefined && member.value === value) {
      if (runStart >= 0 && text === "" && member.index === runIndex + 1) {
        runEnd = member.end;
        runIndex = member.index;
        continue;
      }
      if (runStart >= 0) pieces.push(source.bytes.subarray(runStart, runEnd));
      pieces.push(first ? text : `${text},`);
      text = "";
      runStart = member.start;
      runEnd = member.end;
      runIndex = member.index;
    } else {
      if (runStart >= 0) pieces.push(source.bytes.subarray(runStart, runEnd));
      runStart = -1;
      text += `${first ? "" : ","}${PLAIN_KEY.test(key) ? `"${key}"` : JSON.stringify(key)}:`;
      if (!holdsLongString(value, source)) text += JSON.stringify(value);
      else text = writeAroundLongStrings(pieces, text, value, source);
    }
    first = false;
  }
  if (runStart >= 0) pieces.push(source.bytes.subarray(runStart, runEnd));
  const params = body["disaggregated_params"];
  if (params !== undefined) text += `${first ? "" : ","}"disaggregated_params":${paramsJson(params)}`;
  pieces.push(`${text}}`);
  let size = 0;
  for (const piece of pieces) size += piece.length;
  return size >= PARTS_BODY_BYTES ? asParts(pieces) : joined(pieces);
}

/**
 * Appends `value` after `text`: the client's long strings inside a value the proxy built (a
 * converted or cut member) go as their bytes too. Returns the text still to be written.
 */
function writeAroundLongStrings(pieces: (string | Uint8Array)[], text: string, value: JsonValue, source: JsonSource): string {
  let pending = text;
  for (const part of stringifyAroundLongStrings(value, source)) {
    if (typeof part === "string") pending += part;
    else {
      pieces.push(pending, part);
      pending = "";
    }
  }
  return pending;
}

/**
 * Whether `value` holds a string as long as one of the client's long strings: only then is it
 * written through the replacer below, which costs a JS call per value (a 2,591-id list, written
 * through it, took 215 µs; plainly, 6).
 */
function holdsLongString(value: JsonValue, source: JsonSource): boolean {
  if (source.longStrings.length === 0) return false;
  const shortest = Math.min(...source.longStrings.map((long) => long.value.length));
  // Iterative: the nesting is bounded by the client body's guard, not by the call stack.
  const pending: JsonValue[] = [value];
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    if (typeof item === "string") {
      if (item.length >= shortest) return true;
    } else if (Array.isArray(item)) {
      for (const element of item) if (typeof element === "object" || typeof element === "string") pending.push(element);
    } else if (typeof item === "object" && item !== null && !isRawJson(item)) {
      for (const key in item) {
        const member = item[key];
        if (member !== undefined && (typeof member === "object" || typeof member === "string")) pending.push(member);
      }
    }
  }
  return false;
}

/**
 * `value` as JSON text, each string that is one of the client's long strings given as the bytes
 * of its quoted form in the client's body (the same string, escaped as the client escaped it).
 */
function stringifyAroundLongStrings(value: JsonValue, source: JsonSource): (string | Uint8Array)[] {
  const nonce = `\uf8ff${crypto.randomUUID()}:`;
  let shortest = Number.POSITIVE_INFINITY;
  // By content, hashed once each: comparing every string with every long string would be
  // quadratic in a body of many long strings alike but for their ends.
  const index = new Map<string, number>();
  source.longStrings.forEach((long, n) => {
    shortest = Math.min(shortest, long.value.length);
    index.set(long.value, n);
  });
  let found = false;
  const text = JSON.stringify(value, (_key, item: unknown) => {
    if (typeof item !== "string" || item.length < shortest) return item;
    const n = index.get(item);
    if (n === undefined) return item;
    found = true;
    return `${nonce}${n}`;
  });
  if (!found) return [text];
  const parts: (string | Uint8Array)[] = [];
  const marker = `"${nonce}`;
  let at = 0;
  for (let next = text.indexOf(marker); next >= 0; next = text.indexOf(marker, at)) {
    const close = text.indexOf('"', next + marker.length);
    const long = source.longStrings[Number(text.slice(next + marker.length, close))]!;
    parts.push(text.slice(at, next), source.bytes.subarray(long.start, long.end));
    at = close + 1;
  }
  parts.push(text.slice(at));
  return parts;
}

function asParts(pieces: readonly (string | Uint8Array)[]): PartsBody {
  const parts = pieces.map((piece) => (typeof piece === "string" ? encoder.encode(piece) : piece)).filter((part) => part.length > 0);
  return { parts, byteLength: parts.reduce((sum, part) => sum + part.length, 0) };
}

/**
 * One buffer holding the pieces. Measured on a 2 KB chat body: Buffer.write into an unzeroed
 * buffer of the exact size, 0.7 µs; TextEncoder.encodeInto into a zeroed one, 1.2 µs; a JS
 * loop over the text, 2.7 µs.
 */
function joined(pieces: readonly (string | Uint8Array)[]): Uint8Array {
  let size = 0;
  for (const piece of pieces) size += typeof piece === "string" ? Buffer.byteLength(piece) : piece.length;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const piece of pieces) {
    if (typeof piece === "string") at += out.write(piece, at);
    else {
      out.set(piece, at);
      at += piece.length;
    }
  }
  return out;
}

/**
 * A worker-bound body as JSON text. Its hand-off parameters carry 63-bit ids as raw JSON, and
 * one raw value sends JSON.stringify down its slow path for the whole body (~4× slower on a
 * short chat body, more the longer the messages): the rest of the body is written on the fast
 * path and the parameters are spliced in after it (as its last member; order means nothing to
 * the workers' JSON readers).
 */
export function stringifyBody(body: JsonObject): string {
  const params = body["disaggregated_params"];
  if (params === undefined) return JSON.stringify(body);
  const { disaggregated_params: _params, ...rest } = body;
  const text = JSON.stringify(rest);
  const member = `"disaggregated_params":${paramsJson(params)}`;
  return text === "{}" ? `{${member}}` : `${text.slice(0, -1)},${member}}`;
}

/**
 * The hand-off parameters as JSON, their raw 63-bit ids written after the other members: the rest
 * then goes through JSON.stringify's fast path, which one raw value leaves (a generation request's
 * parameters: 0.34 µs against 0.88).
 */
function paramsJson(params: JsonValue): string {
  if (typeof params !== "object" || params === null || Array.isArray(params) || isRawJson(params)) return JSON.stringify(params);
  let raw = "";
  const plain: JsonObject = {};
  for (const key in params) {
    const value = params[key];
    if (value !== undefined && isRawJson(value)) raw += `,${PLAIN_KEY.test(key) ? `"${key}"` : JSON.stringify(key)}:${value.rawJSON}`;
    // Assigned, a member named __proto__ would set the copy's prototype and vanish from its JSON.
    else if (key === "__proto__") return JSON.stringify(params);
    else plain[key] = value;
  }
  if (raw === "") return JSON.stringify(params);
  const text = JSON.stringify(plain);
  return text === "{}" ? `{${raw.slice(1)}}` : `${text.slice(0, -1)}${raw}}`;
}

/** Plain msgpack maps (no record extension), so any msgpack reader (msgspec) decodes them. */
export function msgpackCodec(): BodyCodec {
  const packr = new Packr({ useRecords: false, variableMapSize: true });
  return {
    // The returned view is never written again: later packs continue after it or in a new buffer.
    encode: (body) => packr.pack(toMsgpackValue(body)),
    headers: { [MSGPACK_HEADER]: "1" },
  };
}

type MsgpackValue = null | boolean | number | bigint | string | MsgpackValue[] | { [key: string]: MsgpackValue };

/** Raw JSON integers and integers beyond 32 bits become bigints (int64); undefined members are left out. */
export function toMsgpackValue(value: JsonValue): MsgpackValue {
  if (typeof value === "number") return Number.isInteger(value) && (value > 0xffff_ffff || value < -0x8000_0000) ? BigInt(value) : value;
  if (value === null || typeof value !== "object") return value;
  if (isRawJson(value)) return rawToValue(value.rawJSON);
  if (Array.isArray(value)) return value.map(toMsgpackValue);
  const out: { [key: string]: MsgpackValue } = {};
  for (const key in value) {
    const member = value[key];
    if (member === undefined) continue;
    // Assigned, a member named __proto__ (JSON.parse makes it an own one) would set the map's prototype and be lost.
    if (key === "__proto__")
      Object.defineProperty(out, key, { value: toMsgpackValue(member), enumerable: true, writable: true, configurable: true });
    else out[key] = toMsgpackValue(member);
  }
  return out;
}

function rawToValue(raw: string): MsgpackValue {
  if (/^-?\d+$/.test(raw)) return BigInt(raw);
  const parsed: unknown = JSON.parse(raw);
  return typeof parsed === "number" ? parsed : raw;
}
