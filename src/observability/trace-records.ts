/**
 * The two JSONL lines of a traced request, written as upstream's request trace writes them
 * (tensorrt_llm/serve/request_trace.py, read_file id 70217114160): field names and order, the
 * hour bucket, the session key and the Responses outcome fields, credentials redacted
 * (trace-redaction.ts). Pure: the writer calls these off the request's path, in its drain.
 */

import { isJsonObject, parseJsonOrUndefined, type JsonObject } from "../json/json.ts";
import type { CapturedKind } from "./trace-capture.ts";
import { redactedBodyText, redactedHeaders } from "./trace-redaction.ts";

/** Upstream's `_NO_SESSION`, and its bound on a session key. */
const NO_SESSION = "_no_session";
const MAX_SESSION_LENGTH = 128;

/** Upstream's `sanitize_session_key`: a client's session id reduced to a stable, bounded key. */
export function sessionKey(value: string | undefined): string {
  if (!value) return NO_SESSION;
  const cleaned = value
    .trim()
    .replace(/[^A-Za-z0-9._-]/g, "_")
    .slice(0, MAX_SESSION_LENGTH);
  return cleaned === "" || cleaned.startsWith(".") ? NO_SESSION : cleaned;
}

/** Python's `datetime.now(timezone.utc).isoformat()`: microseconds and `+00:00`. */
export function isoUtc(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 23)}000+00:00`;
}

/** The hour directory a line goes to: its own timestamp's first 13 characters (`2026-09-03T14`). */
export function hourBucket(iso: string): string {
  return iso.slice(0, 13);
}

export interface RequestLine {
  readonly traceId: string;
  readonly session: string;
  readonly recordedAt: string;
  /** The steady clock's arrival stamp in seconds (the one perf metrics use). */
  readonly arrivalSeconds: number;
  readonly route: string;
  readonly headers: Headers;
  /** The client's body as it sent it (valid JSON: it was parsed). */
  readonly body: Uint8Array;
  /** `accepted`, or `rejected_<status>` for a request refused before admission. */
  readonly status: string;
  /** Set when the body is not JSON: it is then recorded as text, and this says why (upstream's `body_parse_error`). */
  readonly parseError?: string | undefined;
  /** Why a refused request was refused, in upstream's `validation_errors` shape. */
  readonly validationErrors?: readonly { readonly loc: readonly string[]; readonly type: string; readonly msg: string }[];
}

const decoder = new TextDecoder();

export function requestLine(line: RequestLine): string {
  const head = {
    event: "request",
    trace_id: line.traceId,
    session: line.session,
    recorded_at: line.recordedAt,
    server_arrival_time: line.arrivalSeconds,
    route: line.route,
    status: line.status,
    headers: redactedHeaders(line.headers),
  };
  const errors = line.validationErrors === undefined ? "" : `,"validation_errors":${JSON.stringify(line.validationErrors)}`;
  if (line.parseError !== undefined) {
    const text = JSON.stringify(decoder.decode(line.body));
    return `${JSON.stringify(head).slice(0, -1)},"body":${text},"body_parse_error":${JSON.stringify(line.parseError)}${errors}}\n`;
  }
  // The body was parsed by its route: it is JSON, and only its line ends need replacing.
  return `${JSON.stringify(head).slice(0, -1)},"body":${oneLine(redactedBodyText(decoder.decode(line.body)))}${errors}}\n`;
}

export interface ResponseLine {
  readonly traceId: string;
  readonly session: string;
  readonly finishedAt: string;
  readonly status: string;
  readonly disaggRequestId: bigint;
  /** Written for answers the client got with an error status (as upstream's error exits do). */
  readonly httpStatus: number | undefined;
  readonly termination: { readonly cause: string; readonly detail: string } | undefined;
  readonly kind: CapturedKind | undefined;
  /** The client's bytes: the stream's text, or the answer's body. */
  readonly text: string | undefined;
  /** Stream bytes left out of `text` between its start and its end (a long stream). */
  readonly omittedBytes: number;
  /** The worker's answer a route could not convert (conversion_error): recorded in its place. */
  readonly upstream: string | undefined;
  /** A Responses reply: how it ended is read from it (`response_status`, …). */
  readonly responses: boolean;
}

export function responseLine(line: ResponseLine): string {
  const parts = [
    `{"event":"response","trace_id":${JSON.stringify(line.traceId)},"session":${JSON.stringify(line.session)}`,
    `"finished_at":${JSON.stringify(line.finishedAt)},"status":${JSON.stringify(line.status)}`,
    `"client_id":null,"disagg_request_id":${line.disaggRequestId},"ctx_request_id":null`,
  ];
  if (line.httpStatus !== undefined) parts.push(`"http_status":${line.httpStatus}`);
  if (line.termination !== undefined) parts.push(`"termination":${JSON.stringify(line.termination)}`);
  parts.push(`"response":${responseMember(line)}`);
  const outcome = line.responses ? responsesOutcome(line) : {};
  if (Object.keys(outcome).length > 0) parts.push(JSON.stringify(outcome).slice(1, -1));
  return `${parts.join(",")}}\n`;
}

function responseMember(line: ResponseLine): string {
  if (line.upstream !== undefined) return `{"kind":"json","body":{"upstream_body":${JSON.stringify(line.upstream)}}}`;
  const truncated = line.omittedBytes > 0 ? `,"truncated":true,"omitted_bytes":${line.omittedBytes}` : "";
  if (line.text === undefined) return `{"kind":"json","body":null}`;
  if (line.kind === "sse_text") return `{"kind":"sse_text","body":${JSON.stringify(line.text)}${truncated}}`;
  const json = jsonText(line.text);
  return json === undefined ? `{"kind":"text","body":${JSON.stringify(line.text)}}` : `{"kind":"json","body":${json}}`;
}

/**
 * The text as one JSONL-safe JSON value (its own bytes, so 64-bit integers stay exact), or
 * undefined when it is not JSON. Valid JSON has line ends only between tokens, where a space
 * is the same JSON.
 */
function jsonText(text: string): string | undefined {
  try {
    JSON.parse(text);
  } catch {
    return undefined;
  }
  return oneLine(text);
}

function oneLine(json: string): string {
  return json.includes("\n") || json.includes("\r") ? json.replace(/[\r\n]/g, " ") : json;
}

const TERMINAL_EVENTS: ReadonlySet<string> = new Set(["response.completed", "response.incomplete", "response.failed"]);

/**
 * Upstream's `responses_outcome`: how a Responses reply ended as the reply states it
 * (`response_status`, `incomplete_reason`, `error_code`), read from the stream's last frames
 * or the JSON answer; nothing for other replies.
 */
export function responsesOutcome(line: Pick<ResponseLine, "kind" | "text">): Record<string, unknown> {
  const response = line.kind === "sse_text" ? terminalResponse(line.text ?? "") : answerResponse(line.text);
  if (response === undefined) return {};
  const outcome: Record<string, unknown> = {};
  if (typeof response["status"] === "string") outcome["response_status"] = response["status"];
  const details = response["incomplete_details"];
  if (isJsonObject(details) && typeof details["reason"] === "string") outcome["incomplete_reason"] = details["reason"];
  const error = response["error"];
  if (isJsonObject(error) && error["code"] !== undefined && error["code"] !== null) outcome["error_code"] = error["code"];
  return outcome;
}

function terminalResponse(text: string): JsonObject | undefined {
  for (const frame of text.trimEnd().split("\n\n").slice(-3).reverse()) {
    let type: string | undefined;
    let data: unknown;
    for (const row of frame.split("\n")) {
      if (row.startsWith("event: ")) type = row.slice(7).trim();
      else if (row.startsWith("data: ")) data = parseJsonOrUndefined(row.slice(6));
    }
    if (!isJsonObject(data)) continue;
    const named = type ?? data["type"];
    if (typeof named === "string" && TERMINAL_EVENTS.has(named) && isJsonObject(data["response"])) return data["response"];
  }
  return undefined;
}

function answerResponse(text: string | undefined): JsonObject | undefined {
  const value = text === undefined ? undefined : parseJsonOrUndefined(text);
  return isJsonObject(value) && value["object"] === "response" ? value : undefined;
}
