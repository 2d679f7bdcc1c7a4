/**
 * JSON as CPython's `json.dumps(value, sort_keys=True, separators=(",", ":"))` writes it, the
 * message trtllm-serve workers sign and verify (disagg_auth.py). Byte equality matters: one
 * differing escape or digit and the worker rejects the request.
 *
 * Numbers: a JavaScript number is written as the worker reads what JSON.stringify sent it — an
 * integer below 1e21 as a Python int (digits), anything else as a Python float (repr). Raw JSON
 * numbers (large integers kept by src/json/json.ts) are read as Python reads their text: an integer
 * text is an exact int, any other number text a float.
 */
import { type JsonValue, isRawJson } from "../json/json.ts";

const INTEGER_TEXT = /^-?\d+$/;
const SHORT_ESCAPES: Readonly<Record<number, string>> = {
  0x08: "\\b",
  0x09: "\\t",
  0x0a: "\\n",
  0x0c: "\\f",
  0x0d: "\\r",
  0x22: '\\"',
  0x5c: "\\\\",
};

/** Python's json.dumps(value, sort_keys=True, separators=(",", ":")), ensure_ascii on. */
export function pythonCanonicalJson(value: JsonValue): string {
  const out: string[] = [];
  write(value, out);
  return out.join("");
}

function write(value: JsonValue, out: string[]): void {
  if (value === null) out.push("null");
  else if (typeof value === "boolean") out.push(value ? "true" : "false");
  else if (typeof value === "number") out.push(pythonNumber(value));
  else if (typeof value === "string") out.push(pythonString(value));
  else if (isRawJson(value)) out.push(rawText(value.rawJSON));
  else if (Array.isArray(value)) writeArray(value, out);
  else writeObject(value, out);
}

function writeArray(values: readonly JsonValue[], out: string[]): void {
  out.push("[");
  for (const [i, item] of values.entries()) {
    if (i > 0) out.push(",");
    write(item, out);
  }
  out.push("]");
}

function writeObject(object: { readonly [key: string]: JsonValue | undefined }, out: string[]): void {
  // Undefined members are absent on the wire (JSON.stringify drops them), so they are here too.
  const keys = Object.keys(object).filter((key) => object[key] !== undefined);
  keys.sort(compareCodePoints);
  out.push("{");
  for (const [i, key] of keys.entries()) {
    const item = object[key];
    if (item === undefined) continue;
    if (i > 0) out.push(",");
    out.push(pythonString(key), ":");
    write(item, out);
  }
  out.push("}");
}

/** Python orders str by code point; JavaScript's default sort orders by UTF-16 code unit. */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Only a surrogate (an astral character) against U+E000..U+FFFF orders differently.
    return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

function codePointRank(unit: number): number {
  return unit >= 0xd800 && unit <= 0xdfff ? unit + 0x10000 : unit;
}

/** A string as Python writes it with ensure_ascii: everything outside ' '..'~' escaped. */
export function pythonString(text: string): string {
  let out = '"';
  let runStart = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0x20 && unit <= 0x7e && unit !== 0x22 && unit !== 0x5c) continue;
    out += text.slice(runStart, i) + (SHORT_ESCAPES[unit] ?? `\\u${unit.toString(16).padStart(4, "0")}`);
    runStart = i + 1;
  }
  return `${out}${text.slice(runStart)}"`;
}

function pythonNumber(value: number): string {
  if (Number.isInteger(value) && Math.abs(value) < 1e21) return BigInt(value).toString();
  return pythonFloat(value);
}

/** Raw number text read as Python's json module reads it. */
function rawText(text: string): string {
  if (INTEGER_TEXT.test(text)) return BigInt(text).toString();
  const value: unknown = JSON.parse(text);
  if (typeof value === "number") return pythonFloat(value);
  if (typeof value === "string") return pythonString(value);
  if (typeof value === "boolean" || value === null) return String(value);
  throw new TypeError(`Cannot write raw JSON "${text}": not a JSON primitive`);
}

/** Python's repr(float): shortest round-trip digits, exponent form below 1e-4 or from 1e16. */
export function pythonFloat(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "Infinity" : "-Infinity";
  if (value === 0) return Object.is(value, -0) ? "-0.0" : "0.0";
  const sign = value < 0 ? "-" : "";
  // toExponential() without digits gives the shortest digits that round-trip, as repr does.
  const [mantissa = "", exponentText = "0"] = Math.abs(value).toExponential().split("e");
  const digits = mantissa.replace(".", "");
  const exponent = Number(exponentText);
  if (exponent < -4 || exponent >= 16) {
    const fraction = digits.length > 1 ? `.${digits.slice(1)}` : "";
    const magnitude = String(Math.abs(exponent)).padStart(2, "0");
    return `${sign}${digits[0] ?? ""}${fraction}e${exponent < 0 ? "-" : "+"}${magnitude}`;
  }
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
  const fraction = digits.slice(exponent + 1) || "0";
  return `${sign}${whole}.${fraction}`;
}
