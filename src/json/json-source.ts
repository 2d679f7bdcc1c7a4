/**
 * A client's JSON object body parsed from its bytes, with the bytes kept so that workers can be
 * sent them again: every top-level member the proxy leaves as it came is forwarded as the
 * client's own bytes (workers/body-codec.ts), not serialised once more per worker.
 *
 * The parse holds at once the bytes, the text and the parsed values; for a long string that is
 * three copies (five bytes a character once one character is outside Latin-1, as the text and
 * the string are then UTF-16). So strings longer than LONG_STRING_BYTES (recorded by the shape
 * guard's scan) are cut out of the text before it is parsed, each replaced by a placeholder,
 * and decoded on their own straight from the bytes: the text holds everything else.
 */

import { badRequest } from "../errors.ts";
import { isJsonObject, parseClientJson, type JsonObject, type JsonValue } from "./json.ts";
import { integersOf, keyAt, memberIntegerList, textStart } from "./json-bytes.ts";
import type { JsonLayout } from "./json-shape.ts";

/** A top-level member as the client sent it: its bytes and the value they parsed to. */
export interface SourceMember {
  readonly start: number;
  readonly end: number;
  readonly value: JsonValue;
  /** Its place among the body's members: members n and n + 1 lie next to each other, a comma between them. */
  readonly index: number;
  /** A member taken from elsewhere (withOwnMember): its value's bytes, written after its key. */
  readonly own?: Uint8Array;
}

/** The client's body bytes and its top-level members by key (the last of a repeated key, as the parse keeps it). */
export interface JsonSource {
  readonly bytes: Uint8Array;
  readonly members: ReadonlyMap<string, SourceMember>;
  /** The long strings decoded from the bytes, with the bytes of their quoted form. */
  readonly longStrings: readonly LongString[];
}

export interface LongString {
  readonly value: string;
  readonly start: number;
  readonly end: number;
}

export interface ParsedBody {
  readonly body: JsonObject;
  readonly source: JsonSource;
}

/**
 * RFC 8259: JSON text exchanged between systems is UTF-8; a body that is not is refused, not
 * repaired. The decoder keeps a U+FEFF it meets first: the text is decoded in pieces, and a
 * piece (a long string, the text after one) may well start with one that is the client's.
 * Only a byte order mark before the whole body is passed over (RFC 8259 §8.1 lets a parser).
 */
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A long string with escapes is parsed in pieces of about this many bytes, joined as a rope. */
const PIECE_BYTES = 1024 * 1024;

const BACKSLASH = 0x5c;
const LETTER_U = 0x75;

/** Parses an object body (400 when it is not JSON, not UTF-8, or not an object). */
export function parseJsonSource(bytes: Uint8Array, layout: JsonLayout): ParsedBody {
  let body: JsonValue;
  const longStrings: LongString[] = [];
  const from = textStart(bytes);
  try {
    const lists = longIntegerLists(bytes, layout);
    const whole = layout.longStrings.length === 0 && lists.length === 0;
    body = whole
      ? parseClientJson(decoder.decode(bytes.subarray(from)))
      : parseAroundCuts(bytes, from, layout.longStrings, lists, longStrings);
  } catch (error) {
    if (error instanceof TypeError) throw badRequest("Request body is not valid UTF-8");
    throw badRequest("Request body is not valid JSON");
  }
  if (!isJsonObject(body)) throw badRequest("Request body must be a JSON object");
  return { body, source: { bytes, members: membersOf(bytes, layout.members, body), longStrings } };
}

function membersOf(bytes: Uint8Array, layout: readonly number[], body: JsonObject): Map<string, SourceMember> {
  const members = new Map<string, SourceMember>();
  // The parse's own key strings, in the order it met them (the body's order but for repeats
  // and integer-like keys): reused when the bytes spell them, as a key decoded afresh costs
  // a lookup in the runtime's table of names wherever it is used.
  const keys = Object.keys(body);
  let next = 0;
  for (let i = 0; i + 2 < layout.length; i += 3) {
    const start = layout[i]!;
    const keyEnd = layout[i + 1]!;
    const known = keys[next];
    let key: string;
    if (known !== undefined && spells(bytes, start + 1, keyEnd - 1, known)) {
      key = known;
      next++;
    } else key = keyAt(bytes, start, keyEnd);
    const value = body[key];
    if (value !== undefined && Object.hasOwn(body, key)) members.set(key, { start, end: layout[i + 2]!, value, index: i / 3 });
  }
  return members;
}

/**
 * True when bytes[from, to) are `key`'s characters, all of them plain ASCII. A byte from 0x80
 * is part of a UTF-8 sequence, never a character of its own: C3 A9 ("é") must not spell "Ã©".
 */
function spells(bytes: Uint8Array, from: number, to: number, key: string): boolean {
  if (to - from !== key.length) return false;
  for (let i = 0; i < key.length; i++) {
    const c = bytes[from + i]!;
    if (c >= 0x80 || c !== key.charCodeAt(i) || c === BACKSLASH) return false;
  }
  return true;
}

/** Top-level list members at least this long made only of integers are read from the bytes, not parsed from a copy of their text. */
const LONG_LIST_BYTES = 64 * 1024;

/** A top-level member's value that is a long list of (safe) integers: a token-id prompt. */
interface IntegerList {
  readonly start: number;
  readonly end: number;
  readonly values: number[];
}

function longIntegerLists(bytes: Uint8Array, layout: JsonLayout): IntegerList[] {
  const lists: IntegerList[] = [];
  for (let i = 0; i + 2 < layout.members.length; i += 3) {
    const list = memberIntegerList(bytes, layout, i, LONG_LIST_BYTES);
    const values = list === undefined ? undefined : integersOf(bytes, list.start, list.end, list.count);
    if (list !== undefined && values !== undefined) lists.push({ start: list.start, end: list.end, values });
  }
  return lists;
}

/**
 * The body parsed with each cut (a long string anywhere, a long integer list at the top level)
 * replaced by a placeholder no client can write (it holds a random nonce), then the
 * placeholders swapped for the strings decoded on their own and the lists read from the bytes.
 */
function parseAroundCuts(
  bytes: Uint8Array,
  from: number,
  longStrings: readonly number[],
  lists: readonly IntegerList[],
  decoded: LongString[],
): JsonValue {
  const cuts: { start: number; end: number; value: () => JsonValue; check: () => void }[] = [];
  for (let i = 0; i + 2 < longStrings.length; i += 3) {
    const start = longStrings[i]!;
    const end = longStrings[i + 1]!;
    const escaped = longStrings[i + 2] === 1;
    cuts.push({
      start,
      end,
      value: () => {
        const value = decodeString(bytes, start, end, escaped);
        decoded.push({ value, start, end });
        return value;
      },
      check: () => decodeString(bytes, start, end, escaped),
    });
  }
  // A list's bytes were checked when it was read.
  for (const list of lists) cuts.push({ start: list.start, end: list.end, value: () => list.values, check: () => {} });
  cuts.sort((a, b) => a.start - b.start);
  const nonce = `\uf8ff${crypto.randomUUID()}:`;
  let text = "";
  let at = from;
  cuts.forEach((cut, n) => {
    text += `${decoder.decode(bytes.subarray(at, cut.start))}"${nonce}${n}"`;
    at = cut.end;
  });
  text += decoder.decode(bytes.subarray(at));
  const skeleton = parseClientJson(text);
  text = "";
  const swapped = new Set<number>();
  replacePlaceholders(skeleton, nonce, (n) => {
    swapped.add(n);
    return cuts[n]!.value();
  });
  // Fewer may be swapped than were cut: those under a key the client repeated are dropped with
  // it. They are still checked (UTF-8, escapes, control characters), as JSON.parse checks every
  // string: the member holding them may be forwarded as the client's bytes.
  cuts.forEach((cut, n) => {
    if (!swapped.has(n)) cut.check();
  });
  return skeleton;
}

/**
 * A JSON string's value from its quoted bytes, without a second copy of its text: read
 * directly when it holds no escape, else parsed piece by piece (never cutting an escape or a
 * UTF-8 sequence) and joined, which keeps the pieces as they are (a rope).
 */
export function decodeString(bytes: Uint8Array, start: number, end: number, escaped: boolean, pieceBytes = PIECE_BYTES): string {
  if (!escaped) {
    if (hasControlCharacter(bytes, start + 1, end - 1)) throw new SyntaxError("control character in a string");
    return decoder.decode(bytes.subarray(start + 1, end - 1));
  }
  let value = "";
  let from = start + 1;
  while (from < end - 1) {
    const to = end - 1 - from <= pieceBytes ? end - 1 : safeCut(bytes, from, from + pieceBytes, end - 1);
    const piece: unknown = JSON.parse(`"${decoder.decode(bytes.subarray(from, to))}"`);
    value += String(piece);
    from = to;
  }
  return value;
}

/**
 * The first position from `at` where a string's bytes can be cut: outside an escape and a
 * UTF-8 sequence. `floor` (the piece's start) is outside any escape, so backslashes are counted
 * back to it at most: each byte is counted once per piece, however long a run of them is.
 */
function safeCut(bytes: Uint8Array, floor: number, at: number, end: number): number {
  for (let p = at; p < end; p++) if (bytes[p]! < 0x80 && !insideEscape(bytes, floor, p)) return p;
  return end;
}

function insideEscape(bytes: Uint8Array, floor: number, p: number): boolean {
  if (backslashesBefore(bytes, floor, p) % 2 === 1) return true;
  // Within the four hex digits of \uXXXX.
  for (let j = 1; j <= 4 && p - j >= floor; j++)
    if (bytes[p - j] === LETTER_U && backslashesBefore(bytes, floor, p - j) % 2 === 1) return true;
  return false;
}

/**
 * Raw control characters are not allowed in a JSON string (JSON.parse would refuse them).
 * Searched for natively, one byte value after another: 0.4 ms a MiB, where a regular
 * expression over the decoded string takes 0.9 ms and a JS loop over the bytes 1 ms.
 */
function hasControlCharacter(bytes: Uint8Array, from: number, to: number): boolean {
  const range = bytes.subarray(from, to);
  for (let c = 0; c < 0x20; c++) if (range.includes(c)) return true;
  return false;
}

function backslashesBefore(bytes: Uint8Array, floor: number, p: number): number {
  let count = 0;
  while (p - count - 1 >= floor && bytes[p - count - 1] === BACKSLASH) count++;
  return count;
}

/** Swaps every placeholder string for its part (parts are not walked again). */
function replacePlaceholders(root: JsonValue, nonce: string, part: (n: number) => JsonValue): void {
  const swap = (value: JsonValue | undefined): JsonValue | undefined => {
    if (typeof value !== "string" || !value.startsWith(nonce)) return undefined;
    return part(Number(value.slice(nonce.length)));
  };
  // Iterative: the nesting is bounded by the guard, but not by the call stack's size.
  const pending: (JsonValue[] | JsonObject)[] = [];
  if (Array.isArray(root) || isJsonObject(root)) pending.push(root);
  for (let holder = pending.pop(); holder !== undefined; holder = pending.pop()) {
    if (Array.isArray(holder)) {
      for (let i = 0; i < holder.length; i++) {
        const value = holder[i];
        const long = swap(value);
        if (long !== undefined) holder[i] = long;
        else if (typeof value === "object" && value !== null && (Array.isArray(value) || isJsonObject(value))) pending.push(value);
      }
    } else {
      for (const key in holder) {
        const value = holder[key];
        const long = swap(value);
        if (long !== undefined) holder[key] = long;
        else if (typeof value === "object" && value !== null && (Array.isArray(value) || isJsonObject(value))) pending.push(value);
      }
    }
  }
}

/**
 * The client's source with `key` written from other bytes (the context answer's token ids):
 * the returned value, set under `key` in the worker body, stands for them.
 */
export function withOwnMember(source: JsonSource, key: string, bytes: Uint8Array): { source: JsonSource; value: JsonValue[] } {
  const value: JsonValue[] = [];
  const members = new Map(source.members);
  members.set(key, { start: 0, end: 0, value, index: -2, own: bytes });
  return { source: { ...source, members }, value };
}
