/**
 * Reading an answer the proxy did not write (a worker's, etcd's) with a bound on its size and,
 * for JSON, on its shape, before anything parses it. The caller says how a refusal reads in its
 * own terms (`Refuse`): a worker's answer becomes a 502 WORKER_BAD_ANSWER, etcd's an EtcdError.
 */

import { parseJson, type JsonValue } from "./json.ts";
import { ANSWER_SHAPE_LIMITS } from "./json-bytes.ts";
import { JsonShapeGuard, type JsonLayout, type JsonShapeProblem } from "./json-shape.ts";
import { concatBytes, type ByteReader } from "../bytes.ts";

/** The error to throw for an answer that `what` ("is larger than 1024 bytes"), with the parse's error as `cause` when there is one. */
export type Refuse = (what: string, cause?: unknown) => Error;

/** Reads a body up to `limit` bytes; the rest is cancelled, as it is when `onPiece` throws (which the read then throws). */
export function readPrefix(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
  onPiece?: (piece: Uint8Array) => void,
): Promise<Uint8Array> {
  return body === null ? Promise.resolve(new Uint8Array()) : readPrefixOf(body.getReader(), limit, onPiece);
}

/** readPrefix from a reader: up to `limit` bytes, then the reader is cancelled. */
export async function readPrefixOf(reader: ByteReader, limit: number, onPiece?: (piece: Uint8Array) => void): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      onPiece?.(value);
      parts.push(value);
      size += value.byteLength;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
  return (concatBytes(parts) ?? new Uint8Array()).subarray(0, Math.min(size, limit));
}

/**
 * Reads a whole answer, refusing one larger than `limit` bytes; `onPiece` sees its bytes in
 * order as they arrive (all at once when read natively) and may refuse them by throwing. An
 * answer that declares its length (and is not compressed, so the length is what arrives) is
 * read natively in one go: the HTTP framing already stops it there, and a JS read loop costs
 * ~12 µs more per call.
 */
export async function readBounded(
  response: Response,
  limit: number,
  refuse: Refuse,
  onPiece?: (piece: Uint8Array) => void,
): Promise<Uint8Array> {
  const declared = declaredLength(response.headers);
  if (declared !== undefined) {
    if (declared > limit) {
      response.body?.cancel().catch(() => {});
      throw refuse(`is larger than ${limit} bytes`);
    }
    const bytes = await response.bytes();
    onPiece?.(bytes);
    return bytes;
  }
  const bytes = await readPrefix(response.body, limit + 1, onPiece);
  if (bytes.byteLength > limit) throw refuse(`is larger than ${limit} bytes`);
  return bytes;
}

function declaredLength(headers: Headers): number | undefined {
  const encoding = headers.get("content-encoding");
  if (encoding !== null && encoding.toLowerCase() !== "identity") return undefined;
  const length = headers.get("content-length");
  if (length === null || !/^\d+$/.test(length)) return undefined;
  return Number(length);
}

/**
 * An answer read by `read`, its shape checked against ANSWER_SHAPE_LIMITS as its bytes arrive
 * and before anything parses them: refused, or returned with its layout.
 */
export async function readShaped(
  limit: number,
  refuse: Refuse,
  read: (onPiece: (piece: Uint8Array) => void) => Promise<Uint8Array>,
): Promise<{ bytes: Uint8Array; layout: JsonLayout }> {
  const guard = new JsonShapeGuard(ANSWER_SHAPE_LIMITS, limit);
  const check = (problem: JsonShapeProblem | undefined): void => {
    if (problem === undefined) return;
    throw refuse(
      problem.bound === "depth" ? `nests deeper than ${problem.limit} levels` : `holds more than ${problem.limit} JSON values for its size`,
    );
  };
  const bytes = await read((piece) => check(guard.feed(piece)));
  check(guard.finish(bytes.length));
  return { bytes, layout: guard.layout() };
}

/** Fatal: an answer that is not UTF-8 is broken, not text to repair. */
const strictDecoder = new TextDecoder("utf-8", { fatal: true });

/**
 * A JSON answer bounded as a worker's model answer is: at most `limit` bytes (a declared
 * larger length is refused before a byte is read), its shape checked as it arrives, parsed
 * only then. Anything else throws `refuse`'s error.
 */
export async function readJsonBounded(response: Response, limit: number, refuse: Refuse): Promise<JsonValue> {
  const { bytes } = await readShaped(limit, refuse, (onPiece) => readBounded(response, limit, refuse, onPiece));
  return parsed(bytes, refuse);
}

/** JSON already read whole (one line of a stream, bounded in size by its reader), shape-checked as readJsonBounded's, then parsed. */
export async function parseJsonBounded(bytes: Uint8Array, refuse: Refuse): Promise<JsonValue> {
  await readShaped(bytes.length, refuse, (onPiece) => {
    onPiece(bytes);
    return Promise.resolve(bytes);
  });
  return parsed(bytes, refuse);
}

function parsed(bytes: Uint8Array, refuse: Refuse): JsonValue {
  let text: string;
  try {
    text = strictDecoder.decode(bytes);
  } catch (cause) {
    throw refuse("is not valid UTF-8", cause);
  }
  try {
    return parseJson(text);
  } catch (cause) {
    throw refuse("is not valid JSON", cause);
  }
}
