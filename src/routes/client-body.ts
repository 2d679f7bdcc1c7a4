import { badRequest, ProxyError } from "../errors.ts";
import { isJsonObject, parseJson, type JsonObject } from "../json.ts";

const decoder = new TextDecoder();

/** Reads the client's JSON object body, bounded by `maxBytes` (413 beyond it). */
export async function readClientBody(request: Request, maxBytes: number): Promise<JsonObject> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > maxBytes) throw tooLarge(maxBytes);
  const bytes = await readAtMost(request, maxBytes);
  let body: unknown;
  try {
    body = parseJson(decoder.decode(bytes));
  } catch {
    throw badRequest("Request body is not valid JSON");
  }
  if (!isJsonObject(body)) throw badRequest("Request body must be a JSON object");
  return body;
}

async function readAtMost(request: Request, maxBytes: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array();
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const part of request.body) {
    size += part.byteLength;
    if (size > maxBytes) throw tooLarge(maxBytes);
    parts.push(part);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

function tooLarge(maxBytes: number): ProxyError {
  return new ProxyError("BODY_TOO_LARGE", 413, `Request body is larger than ${maxBytes} bytes`);
}
