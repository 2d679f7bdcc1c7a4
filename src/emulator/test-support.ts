/** Helpers for the emulator's own tests: requests over loopback and readers for what comes back. */

import { isJsonObject, parseJson, type JsonObject, type JsonValue } from "../json/json.ts";

export function post(base: string, path: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(`${base}${path}`, {
    ...init,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

export async function json(response: Response): Promise<JsonObject> {
  const value = parseJson(await response.text());
  if (!isJsonObject(value)) throw new TypeError("Expected a JSON object");
  return value;
}

export interface SseEvent {
  readonly event: string | undefined;
  readonly data: string;
}

/** Splits a complete SSE text into events (the emulator writes one data line per event). */
export function sseEvents(text: string): SseEvent[] {
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const lines = block.split("\n");
      const event = lines.find((line) => line.startsWith("event: "))?.slice("event: ".length);
      const data = lines.find((line) => line.startsWith("data: "))?.slice("data: ".length) ?? "";
      return { event, data };
    });
}

/** The JSON payloads of an SSE text, without `[DONE]`. */
export function ssePayloads(text: string): JsonObject[] {
  return sseEvents(text)
    .filter((event) => event.data !== "[DONE]")
    .map((event) => {
      const value = parseJson(event.data);
      if (!isJsonObject(value)) throw new TypeError(`Expected a JSON object event, got ${event.data}`);
      return value;
    });
}

/** Walks a path of keys and indices through a JSON value (undefined where it does not exist). */
export function at(value: JsonValue | undefined, ...path: (string | number)[]): JsonValue | undefined {
  let current = value;
  for (const step of path) {
    if (typeof step === "number") current = Array.isArray(current) ? current[step] : undefined;
    else current = isJsonObject(current) ? current[step] : undefined;
  }
  return current;
}

/** Like at(), for a value that must be a string. */
export function stringAt(value: JsonValue | undefined, ...path: (string | number)[]): string {
  const found = at(value, ...path);
  if (typeof found !== "string") throw new TypeError(`Expected a string at ${path.join(".")}`);
  return found;
}

/** Reads a body chunk by chunk until it ends or breaks; reports what arrived and how it ended. */
export async function drain(response: Response): Promise<{ text: string; error: Error | undefined }> {
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  let text = "";
  if (reader === undefined) return { text, error: undefined };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, error: undefined };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error: error instanceof Error ? error : new Error(String(error)) };
  }
}

export interface RawChunkedReply {
  readonly head: string;
  /** Sizes of the HTTP/1.1 chunks exactly as the server framed them. */
  readonly chunkSizes: number[];
  readonly body: string;
}

/** One HTTP/1.1 POST over a raw socket, to see the server's own chunk framing. */
export async function rawPost(base: string, path: string, body: unknown): Promise<RawChunkedReply> {
  const { hostname, port } = new URL(base);
  const payload = JSON.stringify(body);
  const request =
    `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(payload)}\r\nConnection: close\r\n\r\n${payload}`;
  const received: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    Bun.connect({
      hostname,
      port: Number(port),
      socket: {
        open: (socket) => void socket.write(request),
        data: (_socket, data) => void received.push(Buffer.from(data)),
        close: () => resolve(),
        error: (_socket, error) => reject(error),
      },
    }).catch(reject);
  });
  return parseChunked(Buffer.concat(received));
}

function parseChunked(raw: Buffer): RawChunkedReply {
  const headEnd = raw.indexOf("\r\n\r\n");
  const head = raw.subarray(0, headEnd).toString();
  const chunkSizes: number[] = [];
  const parts: Buffer[] = [];
  let offset = headEnd + 4;
  for (;;) {
    const lineEnd = raw.indexOf("\r\n", offset);
    if (lineEnd < 0) break;
    const size = Number.parseInt(raw.subarray(offset, lineEnd).toString(), 16);
    if (!(size > 0)) break;
    chunkSizes.push(size);
    parts.push(raw.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
  return { head, chunkSizes, body: Buffer.concat(parts).toString() };
}
