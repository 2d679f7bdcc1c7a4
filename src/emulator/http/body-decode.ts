/**
 * A request body as trtllm-serve reads it: JSON, or msgpack when `X-TRTLLM-Msgpack: 1` says so
 * (reference §2.4). Either way the result is lossless JSON values: 64-bit integers beyond
 * Number's safe range stay exact as raw JSON integers.
 */

import { Unpackr } from "msgpackr/unpack";
import { jsonInteger, parseJson, type JsonObject, type JsonValue } from "../../json/json.ts";

export async function readRequestBody(req: Request): Promise<JsonValue | undefined> {
  try {
    if (req.headers.get("x-trtllm-msgpack")?.trim() === "1") return decodeMsgpack(new Uint8Array(await req.arrayBuffer()));
    return parseJson(await req.text());
  } catch {
    return undefined;
  }
}

export function decodeMsgpack(bytes: Uint8Array): JsonValue {
  const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "bigint" });
  return toJsonValue(unpackr.unpack(bytes));
}

function toJsonValue(value: unknown): JsonValue {
  if (typeof value === "bigint")
    return Number.isSafeInteger(Number(value)) && BigInt(Number(value)) === value ? Number(value) : jsonInteger(value);
  if (value === null || value === undefined) return null;
  if (typeof value === "number" || typeof value === "string" || typeof value === "boolean") return value;
  if (Array.isArray(value)) return value.map(toJsonValue);
  if (value instanceof Uint8Array) throw new SyntaxError("Binary values are not JSON");
  if (typeof value !== "object") throw new SyntaxError(`A ${typeof value} is not JSON`);
  const out: JsonObject = {};
  for (const [key, member] of Object.entries(value)) out[key] = toJsonValue(member);
  return out;
}
