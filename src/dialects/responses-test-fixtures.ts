/** Worker Responses streams and client-stream checks shared by the Responses dialect tests. */
import { expect } from "bun:test";
import { ProxyError } from "../errors.ts";
import { type JsonObject, isJsonObject, parseJson } from "../json/json.ts";
import { concatBytes } from "../bytes.ts";
import { SseFrameScanner } from "../sse/frame-scanner.ts";
import type { DialectStream } from "../streaming/dialect.ts";

export const encoder = new TextEncoder();
export const decoder = new TextDecoder();

/** The worker's own response object: its clock and its served model name, not the opening's. */
export const WORKER_RESPONSE: JsonObject = {
  id: "resp_101_0123456789abcdef",
  object: "response",
  created_at: 1_700_000_999,
  status: "in_progress",
  model: "served-model",
  output: [],
};

export function workerEvent(type: string, sequenceNumber: number, fields: JsonObject = {}): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...fields, sequence_number: sequenceNumber })}\n\n`;
}

const responseFields = { response: WORKER_RESPONSE };

/** A whole worker stream: its opening, a keepalive mid-output, deltas with multi-byte text. */
export function workerStream(): string {
  return [
    workerEvent("response.created", 0, responseFields),
    workerEvent("response.in_progress", 1, responseFields),
    workerEvent("response.output_item.added", 2, { output_index: 0, item: { id: "msg_1", type: "message" } }),
    workerEvent("response.content_part.added", 3, { item_id: "msg_1", output_index: 0, content_index: 0 }),
    workerEvent("response.output_text.delta", 4, { item_id: "msg_1", delta: "Hé 世界" }),
    workerEvent("response.in_progress", 5, responseFields),
    // The text of a terminal event inside a payload must not end the stream.
    workerEvent("response.output_text.delta", 6, { item_id: "msg_1", delta: "🎉\n\nevent: response.completed\n\n" }),
    workerEvent("response.output_text.done", 7, { item_id: "msg_1", text: "Hé 世界🎉" }),
    workerEvent("response.output_item.done", 8, { output_index: 0, item: { id: "msg_1", type: "message" } }),
    workerEvent("response.completed", 9, { response: { ...WORKER_RESPONSE, status: "completed" } }),
  ].join("");
}

export function pieces(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

/** Every client byte the stream sends for these worker chunks, joined. */
export function pushAll(stream: DialectStream, chunks: readonly Uint8Array[]): Uint8Array {
  const out: Uint8Array[] = [];
  for (const chunk of chunks) {
    const bytes = stream.push(chunk);
    if (bytes !== undefined) out.push(bytes);
  }
  return concatBytes(out) ?? new Uint8Array(0);
}

export interface ClientEvent {
  readonly event: string | undefined;
  readonly payload: JsonObject;
}

/** The client's view: every frame parsed as a Responses event. Fails on a frame that is not. */
export function clientEvents(bytes: Uint8Array): ClientEvent[] {
  const frames = new SseFrameScanner().push(bytes);
  return frames.map((frame) => {
    const payload = parseJson(frame.data ?? "");
    if (!isJsonObject(payload)) throw new TypeError(`Not a JSON object: ${frame.data}`);
    return { event: frame.event, payload };
  });
}

/** One sequence numbered from 0 without gaps, and every event named after its own type. */
export function expectOneSequence(events: readonly ClientEvent[]): void {
  expect(events.map((e) => e.payload["sequence_number"])).toEqual(events.map((_, i) => i));
  for (const { event, payload } of events) expect(payload["type"]).toBe(event);
}

export function types(events: readonly ClientEvent[]): unknown[] {
  return events.map((e) => e.payload["type"]);
}

export function responseOf(event: ClientEvent | undefined): JsonObject {
  const response = event?.payload["response"];
  if (!isJsonObject(response)) throw new TypeError("The event carries no response object");
  return response;
}

/** end()'s bytes, failing the test when it reported a broken stream instead. */
export function endBytes(ended: Uint8Array | ProxyError | undefined): Uint8Array | undefined {
  if (ended instanceof ProxyError) throw new TypeError(`Expected a complete stream, got ${ended.code}`);
  return ended;
}

/** end()'s error, failing the test when the stream counted as complete. */
export function endError(ended: Uint8Array | ProxyError | undefined): ProxyError {
  if (!(ended instanceof ProxyError)) throw new TypeError("Expected the stream to count as broken");
  return ended;
}

/** The event's fields apart from its sequence number. */
export function withoutSequence(event: ClientEvent | undefined): JsonObject {
  const { sequence_number: _ignored, ...rest } = event?.payload ?? {};
  return rest;
}
