/**
 * etcd v3 JSON gateway encoding: keys and values are base64, 64-bit numbers are decimal
 * strings, fields equal to their zero value are left out, and a watch answers with one JSON
 * object per line.
 */

export type JsonObject = { readonly [key: string]: unknown };

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function objectAt(object: JsonObject, name: string): JsonObject {
  const value = object[name];
  return isObject(value) ? value : {};
}

export function listAt(object: JsonObject, name: string): JsonObject[] {
  const value = object[name];
  return Array.isArray(value) ? value.filter(isObject) : [];
}

/** An int64 field (a decimal string on the wire; absent means 0). */
export function int64At(object: JsonObject, name: string): bigint {
  const value = object[name];
  if (typeof value === "string" && /^-?\d+$/.test(value)) return BigInt(value);
  if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value);
  return 0n;
}

export function stringAt(object: JsonObject, name: string): string | undefined {
  const value = object[name];
  return typeof value === "string" ? value : undefined;
}

export function encode(text: string): string {
  return Buffer.from(text, "utf8").toString("base64");
}

export function decode(base64: string | undefined): string {
  return base64 === undefined ? "" : Buffer.from(base64, "base64").toString("utf8");
}

/** The end of the range that holds exactly the keys starting with `prefix` (etcd's prefix rule). */
export function prefixRangeEnd(prefix: string): string {
  const bytes = Buffer.from(prefix, "utf8");
  for (let i = bytes.length - 1; i >= 0; i -= 1) {
    const byte = bytes[i] ?? 0xff;
    if (byte < 0xff) {
      const end = Buffer.from(bytes.subarray(0, i + 1));
      end[i] = byte + 1;
      return end.toString("base64");
    }
  }
  // Only 0xff bytes (or empty): every key from the prefix on ("\0" means no upper bound).
  return Buffer.from([0]).toString("base64");
}

/** Largest watch line accepted; etcd's own request limit is 1.5 MiB, events may batch. */
const MAX_LINE_CHARS = 64 * 1024 * 1024;

/**
 * Bytes → complete lines. Chunks rarely end on a line end, so pieces of the open line are kept
 * in a list and joined once its end arrives; only the new text is scanned.
 */
export async function* linesOf(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let pieces: string[] = [];
  let pending = 0;
  for await (const chunk of body) {
    let text = decoder.decode(chunk, { stream: true });
    let end = text.indexOf("\n");
    while (end !== -1) {
      pieces.push(text.slice(0, end));
      const line = pieces.join("");
      pieces = [];
      pending = 0;
      if (line.trim() !== "") yield line;
      text = text.slice(end + 1);
      end = text.indexOf("\n");
    }
    pieces.push(text);
    pending += text.length;
    if (pending > MAX_LINE_CHARS) throw new RangeError(`etcd watch line longer than ${MAX_LINE_CHARS} characters`);
  }
  const rest = pieces.join("") + decoder.decode();
  if (rest.trim() !== "") yield rest;
}

/** The message of a gateway error body: `{"error": "...", "code": N, "message": "..."}`. */
export function errorOf(body: unknown): { message: string; code: number | undefined } | undefined {
  if (!isObject(body)) return undefined;
  const error = body["error"];
  if (error === undefined) return undefined;
  // Unary calls answer {error, code, message}; a watch stream ends with {error: {grpc_code, message}}.
  const detail = isObject(error) ? error : body;
  const message = stringAt(detail, "message") ?? (typeof error === "string" ? error : JSON.stringify(error));
  const code = detail["code"] ?? detail["grpc_code"];
  return { message, code: typeof code === "number" ? code : undefined };
}
