/**
 * Lossless JSON for worker traffic. Engine request ids are 63-bit integers: a plain
 * JSON.parse would round them, so integers beyond Number's safe range are kept as raw
 * JSON text and written back byte for byte.
 */

export type JsonValue = null | boolean | number | string | RawJson | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue | undefined;
}
/** A JSON fragment written verbatim by JSON.stringify (TC39 JSON.rawJSON). */
export interface RawJson {
  readonly rawJSON: string;
}

declare global {
  // TC39 JSON.parse source text access: in Bun (JavaScriptCore), not yet in TypeScript's lib.
  interface JSON {
    rawJSON(text: string): RawJson;
    isRawJSON(value: unknown): value is RawJson;
  }
}

interface ReviverContext {
  readonly source?: string;
}

function keepLargeIntegers(_key: string, value: unknown, context?: ReviverContext): unknown {
  if (typeof value === "number" && !Number.isSafeInteger(value) && context?.source !== undefined) {
    if (/^-?\d+$/.test(context.source)) return JSON.rawJSON(context.source);
  }
  return value;
}

/** 16 digits in a row: the shortest integer that can lose precision as a double. */
const MAYBE_LARGE_INTEGER = /\d{16}/;

/** JSON.parse that keeps integers beyond 2^53 exact. Throws SyntaxError like JSON.parse. */
export function parseJson(text: string): JsonValue {
  // The reviver costs ~10x a plain parse; text without a long digit run cannot need it.
  const parsed: JsonValue = MAYBE_LARGE_INTEGER.test(text) ? JSON.parse(text, keepLargeIntegers) : JSON.parse(text);
  return parsed;
}

/** A 64-bit integer as a JSON number (JSON.stringify cannot write a bigint). */
export function jsonInteger(value: bigint): RawJson {
  return JSON.rawJSON(value.toString());
}

export function isRawJson(value: unknown): value is RawJson {
  return JSON.isRawJSON(value);
}

/** Reads an integer that may be a number or a raw large integer. */
export function readInteger(value: unknown): bigint | undefined {
  if (typeof value === "number" && Number.isInteger(value)) return BigInt(value);
  if (isRawJson(value) && /^-?\d+$/.test(value.rawJSON)) return BigInt(value.rawJSON);
  return undefined;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !isRawJson(value);
}
