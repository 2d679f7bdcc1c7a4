/**
 * Pieces of JSON read straight from its bytes, without decoding or parsing the text around
 * them: a member's key, where its value starts and ends, and lists of integers (token ids),
 * which are what a body's or a worker answer's size mostly is when they are there.
 */

import { parseJson, type JsonValue } from "./json.ts";
import { integerListLength } from "./integer-list.ts";
import { JSON_SHAPE_LIMITS, type JsonLayout, type JsonShapeLimits } from "./json-shape.ts";

export { integerListLength } from "./integer-list.ts";

/** Fatal: not UTF-8 is not repaired. A U+FEFF is kept (see textStart). */
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

const BACKSLASH = 0x5c;

/** Where the JSON text starts: after a byte order mark before it, which a parser may pass over (RFC 8259 §8.1). */
export function textStart(bytes: Uint8Array): number {
  return bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
}

/** A member's key from its quoted bytes: plain ASCII read directly, anything else parsed. */
export function keyAt(bytes: Uint8Array, start: number, end: number): string {
  let key = "";
  for (let i = start + 1; i < end - 1; i++) {
    const c = bytes[i]!;
    if (c >= 0x80 || c === BACKSLASH || c < 0x20) return String(JSON.parse(decoder.decode(bytes.subarray(start, end))) as unknown);
    key += String.fromCharCode(c);
  }
  return key;
}

/**
 * The integers of a list integerListLength counted, read into an array of their number (no
 * growing, no text): undefined if one is too long to be exact as a number (parseJson keeps those).
 */
export function integersOf(bytes: Uint8Array, start: number, end: number, count: number): number[] | undefined {
  // Filled: Array.from({ length }) cost 2.5-3× as much (47-58 µs for 25,631 ids, against 17-22).
  // oxlint-disable-next-line unicorn/no-new-array -- the one array of exactly `count` items, made at native speed
  const values: number[] = new Array<number>(count).fill(0);
  let n = 0;
  for (let i = start + 1; i < end;) {
    let c = bytes[i]!;
    if (c !== 0x2d && (c < 0x30 || c > 0x39)) {
      i++;
      continue;
    }
    const negative = c === 0x2d;
    if (negative) c = bytes[++i]!;
    const first = i;
    let value = 0;
    for (; c >= 0x30 && c <= 0x39; c = bytes[++i]!) value = value * 10 + (c - 0x30);
    if (i - first > 15) return undefined;
    values[n++] = negative ? -value : value;
  }
  return values;
}

/** A list of integers kept as its bytes (a context answer's token ids), and how many it holds. */
export interface KeptList {
  readonly bytes: Uint8Array;
  readonly count: number;
}

/**
 * Bounds on the shape of a worker's non-streamed answer, checked on its bytes before it is
 * parsed (JSON.parse of 32 MiB of `[` costs ~2.4 GiB and ~3 s of a blocked event loop). Depth:
 * twice a client body's, so an answer echoing the client's tools fits (upstream's own nest ~10
 * deep). Values: 4 bytes a weighted value passes token-id lists (~8) and chat top_logprobs (~6),
 * not empty lists or objects (3); below 65,536 values density is not judged. The figures:
 * docs/security.md, "Worker answers".
 */
export const ANSWER_SHAPE_LIMITS: JsonShapeLimits = { maxDepth: 2 * JSON_SHAPE_LIMITS.maxDepth, minValues: 65_536, bytesPerValue: 4 };

/**
 * A worker's JSON answer parsed with its top-level `key` member, when that is a list of
 * integers at least `keepBytes` long, left out of the parse (read as null) and kept as its
 * bytes: a context answer returns the prompt's token ids, which the proxy only passes on to
 * the generation worker, and parsing them (then writing them again) cost more than the rest
 * of the answer (~8 bytes an id parsed, plus the text). `layout` is the answer's, from a
 * JsonShapeGuard that fed it whole within ANSWER_SHAPE_LIMITS (the caller bounds its shape).
 * Throws SyntaxError or TypeError (not UTF-8) as a parse would.
 *
 * An answer that repeats `key` is read as every JSON reader the workers and clients use reads
 * it (JSON.parse, Python's json, pydantic): the last member wins. So the last one is the one
 * kept, and earlier ones are parsed and then overridden by its null; keeping the first (as
 * before) spliced one list into the generation body while the proxy verified and routed by
 * another. Refusing duplicates instead would 502 answers every upstream reader accepts.
 */
export function parseKeepingList(
  bytes: Uint8Array,
  layout: JsonLayout,
  key: string,
  keepBytes: number,
): { body: JsonValue; kept: KeptList | undefined } {
  if (bytes.length >= keepBytes) {
    const members = layout.members;
    for (let i = members.length - 3; i >= 0; i -= 3) {
      if (keyAt(bytes, members[i]!, members[i + 1]!) !== key) continue;
      const list = memberIntegerList(bytes, layout, i, keepBytes);
      if (list === undefined) break;
      const text = `${decoder.decode(bytes.subarray(textStart(bytes), list.start))}null${decoder.decode(bytes.subarray(list.end))}`;
      return { body: parseJson(text), kept: { bytes: bytes.subarray(list.start, list.end), count: list.count } };
    }
  }
  return { body: parseJson(decoder.decode(bytes.subarray(textStart(bytes)))), kept: undefined };
}

/**
 * The value of the top-level member at `layout.members[i]` when it is a list of integers at
 * least `minBytes` long: where it lies and how many it holds. A list the shape guard already
 * read as integers (layout.integerLists) is not read again.
 */
export function memberIntegerList(
  bytes: Uint8Array,
  layout: JsonLayout,
  i: number,
  minBytes: number,
): { start: number; end: number; count: number } | undefined {
  const members = layout.members;
  if (members[i + 2]! - members[i + 1]! < minBytes) return undefined;
  const start = valueStart(bytes, members[i + 1]!);
  const end = trimmedEnd(bytes, start, members[i + 2]!);
  if (end - start < minBytes) return undefined;
  const lists = layout.integerLists;
  for (let n = 0; n < lists.length; n += 3) if (lists[n] === start && lists[n + 1] === end) return { start, end, count: lists[n + 2]! };
  const count = integerListLength(bytes, start, end);
  return count < 0 ? undefined : { start, end, count };
}

function isSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** Where a member's value starts: after its key, the colon and any spaces. */
function valueStart(bytes: Uint8Array, keyEnd: number): number {
  let at = keyEnd;
  while (isSpace(bytes[at]) || bytes[at] === 0x3a) at++;
  return at;
}

function trimmedEnd(bytes: Uint8Array, start: number, end: number): number {
  let at = end;
  while (at > start && isSpace(bytes[at - 1])) at--;
  return at;
}

/** True when `values` is the kept list's integers, in order (read from its bytes, nothing parsed). */
export function keptListEquals(kept: KeptList, values: JsonValue | undefined): boolean {
  if (!Array.isArray(values) || values.length !== kept.count) return false;
  // Beyond 15 digits a double may round: integersOf gives up there, so only exact values compare.
  const ids = integersOf(kept.bytes, 0, kept.bytes.length, kept.count);
  return ids !== undefined && ids.length === values.length && ids.every((id, i) => id === values[i]);
}

/**
 * The kept list's integers that are numbers (a router hashes ids as numbers; one beyond 2^53,
 * kept exact as text, cannot be one), read from the bytes: a 25,631-id list parsed and filtered
 * took ~20 % of a kv_cache_aware placement's CPU.
 */
export function keptListNumbers(kept: KeptList): number[] {
  return (
    integersOf(kept.bytes, 0, kept.bytes.length, kept.count) ?? keptListValues(kept).filter((id): id is number => typeof id === "number")
  );
}

/** The kept list's integers, parsed (for a router that wants them, or a codec that cannot send bytes). */
export function keptListValues(kept: KeptList): JsonValue[] {
  const values = parseJson(decoder.decode(kept.bytes));
  return Array.isArray(values) ? values : [];
}
