/**
 * How a worker-bound body is put on the wire (reference §2.4): JSON, or msgpack with
 * `Content-Type: application/json` and `X-TRTLLM-Msgpack: 1` as trtllm-serve's newest proxy
 * sends it. Integers beyond 32 bits are written as msgpack 64-bit integers (never floats), so a
 * 63-bit disagg_request_id kept as raw JSON text arrives exact.
 */

import { Packr } from "msgpackr/pack";
import { isRawJson, type JsonObject, type JsonValue } from "../json.ts";

export const MSGPACK_HEADER = "x-trtllm-msgpack";

export type WorkerBody = string | Uint8Array;

export interface BodyCodec {
  encode(body: JsonObject): WorkerBody;
  /** Headers every body of this codec travels with. */
  readonly headers: Readonly<Record<string, string>>;
}

export const JSON_CODEC: BodyCodec = { encode: (body) => stringifyBody(body), headers: {} };

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
  const member = `"disaggregated_params":${JSON.stringify(params)}`;
  return text === "{}" ? `{${member}}` : `${text.slice(0, -1)},${member}}`;
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
    if (member !== undefined) out[key] = toMsgpackValue(member);
  }
  return out;
}

function rawToValue(raw: string): MsgpackValue {
  if (/^-?\d+$/.test(raw)) return BigInt(raw);
  const parsed: unknown = JSON.parse(raw);
  return typeof parsed === "number" ? parsed : raw;
}
