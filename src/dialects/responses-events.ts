/** Reading worker Responses events and writing the proxy's own, as SSE bytes. */
import { type JsonObject, isJsonObject, parseJsonOrUndefined } from "../json/json.ts";
import { encodeData, encodeEvent } from "../sse/encode.ts";
import type { SseFrame } from "../sse/frame-scanner.ts";

const TERMINAL_TYPES: ReadonlySet<string> = new Set(["response.completed", "response.failed", "response.incomplete"]);
const OPENING_TYPES: ReadonlySet<string> = new Set(["response.created", "response.in_progress"]);

export function isTerminal(type: string | undefined): boolean {
  return type !== undefined && TERMINAL_TYPES.has(type);
}

/** A worker's opening event or one of its keepalives, which repeat its opening. */
export function isOpeningEvent(type: string | undefined): boolean {
  return type !== undefined && OPENING_TYPES.has(type);
}

/** One worker event: its type, and its JSON payload parsed only when asked for. */
export interface WorkerEvent {
  readonly type: string | undefined;
  payload(): JsonObject | undefined;
}

function parsePayload(data: string | undefined): JsonObject | undefined {
  if (data === undefined) return undefined;
  // Not JSON: the event is relayed as it came, without a number of ours.
  const value = parseJsonOrUndefined(data);
  return isJsonObject(value) ? value : undefined;
}

/** The event's type is its own `event:` line, or the payload's `type` when it has none. */
export function readWorkerEvent(frame: SseFrame): WorkerEvent {
  let parsed: { value: JsonObject | undefined } | undefined;
  const payload = (): JsonObject | undefined => {
    parsed ??= { value: parsePayload(frame.data) };
    return parsed.value;
  };
  const named = frame.event;
  if (named !== undefined && named !== "") return { type: named, payload };
  const type = payload()?.["type"];
  return { type: typeof type === "string" ? type : undefined, payload };
}

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** The message of an in-band failure the worker sent itself, or undefined for other events. */
export function failureEventMessage(event: WorkerEvent): string | undefined {
  if (event.type === "error") {
    const payload = event.payload();
    const nested = payload?.["error"];
    const inner = isJsonObject(nested) ? text(nested["message"]) : undefined;
    return text(payload?.["message"]) ?? inner ?? text(payload?.["code"]) ?? "error";
  }
  if (event.type === "response.failed") {
    const response = event.payload()?.["response"];
    const error = isJsonObject(response) ? response["error"] : undefined;
    return (isJsonObject(error) ? text(error["message"]) : undefined) ?? "response.failed";
  }
  return undefined;
}

/** The event with our sequence number; its other fields keep their order and values. */
export function renumbered(type: string | undefined, payload: JsonObject, sequenceNumber: number): Uint8Array {
  payload["sequence_number"] = sequenceNumber;
  const data = JSON.stringify(payload);
  return type === undefined ? encodeData(data) : encodeEvent(type, data);
}

/** `response.created` / `response.in_progress` carrying a whole response object. */
export function responseEvent(type: string, response: JsonObject, sequenceNumber: number): Uint8Array {
  return encodeEvent(type, JSON.stringify({ type, response, sequence_number: sequenceNumber }));
}

export type StreamErrorCode = "upstream_error" | "internal_error";

/** The `error` event an aggregated server sends for a stream that fails. */
export function errorEvent(code: StreamErrorCode, message: string, sequenceNumber: number): Uint8Array {
  const payload = { type: "error", code, message, param: null, sequence_number: sequenceNumber };
  return encodeEvent("error", JSON.stringify(payload));
}

/**
 * `response.failed` for the response the client was told about, under its own id. Its code is
 * `server_error`, or `context_length_exceeded` for a prompt too long for the context, which
 * clients act on (Codex compacts the conversation and goes on).
 */
export function failedEvent(response: JsonObject, message: string, sequenceNumber: number, code = "server_error"): Uint8Array {
  const failed = { ...response, status: "failed", error: { code, message } };
  return responseEvent("response.failed", failed, sequenceNumber);
}
