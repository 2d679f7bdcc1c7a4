/**
 * TRTLLM_REQUEST_TRACE_DIR: upstream's replayable per-request trace
 * (tensorrt_llm/serve/request_trace.py, read_file id 70217114160). Two JSONL files per UTC hour
 * and process:
 *
 *     $TRTLLM_REQUEST_TRACE_DIR/2026-09-03T14/requests-<pid>.jsonl    one line per accepted request
 *     $TRTLLM_REQUEST_TRACE_DIR/2026-09-03T14/responses-<pid>.jsonl   one line when it ends
 *
 * Never in a request's way: `accepted` and `finished` only queue (bounded: 1,024 lines as
 * upstream's, and 64 MiB; past either a line is dropped and counted), and a drain that starts on
 * a later turn of the event loop builds the lines and appends them in batches of 32, one append
 * per file. Unset, nothing is built at all.
 */

import { join } from "node:path";
import type { ErrorCode } from "../errors.ts";
import { withDeadline } from "../timers.ts";
import { AppendQueue, type LostReason } from "./append-queue.ts";
import { dropWarned, type Logger } from "./logger.ts";
import { steadySeconds } from "./steady-clock.ts";
import { privateAppender, traceDirRefusal } from "./trace-files.ts";
import { TraceHandle } from "./trace-handle.ts";
import { hourBucket, isoUtc, requestLine, sessionKey } from "./trace-records.ts";
import { responseLineOf, type TraceEnd } from "./trace-terminal.ts";

export { TraceHandle } from "./trace-handle.ts";
export { traceStatusOf, type TraceEnd } from "./trace-terminal.ts";

export const REQUEST_TRACE_DIR_ENV = "TRTLLM_REQUEST_TRACE_DIR";

const QUEUE_LIMIT = 1024;
const BATCH_SIZE = 32;
/** A streamed reply longer than this keeps its start and its last 64 KiB (trace-capture.ts). */
const MAX_RESPONSE_BYTES = 1024 * 1024;
/** What the queued lines may hold in all (bodies, kept replies): past it, lines are dropped. */
const MAX_QUEUED_BYTES = 64 * 1024 * 1024;
/** A line's own fields, beside its body. */
const LINE_OVERHEAD_BYTES = 1024;
const CLOSE_TIMEOUT_MS = 5000;

export interface TraceClock {
  /** Wall clock, ms since the epoch: the lines' timestamps and hour buckets. */
  wallMs(): number;
  /** The steady clock in seconds (the arrival stamp perf metrics use too). */
  steadySeconds(): number;
}

const SYSTEM_CLOCK: TraceClock = { wallMs: () => Date.now(), steadySeconds };

export interface RequestTraceOptions {
  readonly dir: string;
  readonly logger: Logger;
  readonly pid?: number;
  readonly clock?: TraceClock;
  readonly queueLimit?: number;
  readonly maxQueuedBytes?: number;
  readonly maxResponseBytes?: number;
  /** For tests: where a batch's lines go (default: appended to the file, privately: trace-files.ts). */
  readonly append?: (path: string, data: string) => Promise<void>;
}

/** What an accepted request's line records of it. */
export interface TracedRequestInput {
  readonly route: string;
  readonly headers: Headers;
  /** The client's body as it arrived. */
  readonly body: Uint8Array;
  /** The conversation id routing keys on (the line's session). */
  readonly conversationId: string | undefined;
  /** The body is not a JSON object: recorded as text, with `body_parse_error`. */
  readonly unparsed?: boolean | undefined;
}

export interface TraceCounts {
  readonly submitted: number;
  readonly persisted: number;
  readonly dropped: { readonly queue_full: number; readonly write_error: number; readonly shutdown: number };
  readonly pending: number;
}

type DropReason = keyof TraceCounts["dropped"];

const LOST_MESSAGE: Readonly<Record<LostReason, string>> = {
  queue_full: "request trace queue full: lines dropped",
  write_error: "request trace lines not written",
};

/** A request refused before admission: its status and why (upstream's `on_rejected`). */
export interface TraceRefusal {
  readonly status: number;
  readonly code: ErrorCode;
  readonly message: string;
}

type Queued = (
  | {
      readonly kind: "requests";
      readonly at: number;
      readonly handle: TraceHandle;
      readonly input: TracedRequestInput;
      readonly arrival: number;
      readonly refusal?: TraceRefusal;
    }
  | { readonly kind: "responses"; readonly at: number; readonly handle: TraceHandle; readonly end: TraceEnd }
) & { readonly bytes: number };

/**
 * The writer for TRTLLM_REQUEST_TRACE_DIR, its directory made (0700) at start-up; a directory
 * that cannot be made, or that another user owns or others may write (trace-files.ts), turns
 * the trace off with upstream's error line (`Disabling request trace output: <why>`,
 * RequestTraceWriter.start), and the proxy serves on.
 */
export function openRequestTrace(dir: string, logger: Logger): RequestTraceWriter | undefined {
  const refusal = traceDirRefusal(dir);
  if (refusal !== undefined) {
    logger.error(`Disabling request trace output: ${refusal}`, { dir, env: REQUEST_TRACE_DIR_ENV });
    return undefined;
  }
  logger.info(`Recording request traces to ${dir}`);
  return new RequestTraceWriter({ dir, logger });
}

export class RequestTraceWriter {
  readonly #options: RequestTraceOptions;
  readonly #clock: TraceClock;
  readonly #pid: number;
  readonly #queue: AppendQueue<Queued>;
  readonly #dropped: Record<DropReason, number> = { queue_full: 0, write_error: 0, shutdown: 0 };
  #submitted = 0;
  #closed = false;

  constructor(options: RequestTraceOptions) {
    this.#options = options;
    this.#clock = options.clock ?? SYSTEM_CLOCK;
    this.#pid = options.pid ?? process.pid;
    this.#queue = new AppendQueue<Queued>({
      limit: options.queueLimit ?? QUEUE_LIMIT,
      maxBytes: options.maxQueuedBytes ?? MAX_QUEUED_BYTES,
      bytesOf: (item) => item.bytes,
      batchSize: BATCH_SIZE,
      // Lines are built after the request's own work; those of requests ending together share an append.
      startLater: true,
      lines: (batch) => this.#lines(batch),
      append: options.append ?? privateAppender(),
      lost: (reason, count, error) => this.#drop(reason, count, LOST_MESSAGE[reason], error),
    });
  }

  /** Records an accepted request and returns the handle its end redeems. */
  accepted(input: TracedRequestInput): TraceHandle {
    const handle = new TraceHandle(input.route, input.conversationId, this.#options.maxResponseBytes ?? MAX_RESPONSE_BYTES);
    const bytes = input.body.byteLength + LINE_OVERHEAD_BYTES;
    this.#submit({ kind: "requests", at: this.#clock.wallMs(), handle, input, arrival: this.#clock.steadySeconds(), bytes });
    return handle;
  }

  /**
   * A request refused before admission, its body read (a field of the wrong type, a refused
   * `chat_template`, an Anthropic body that cannot be converted): one request line with status
   * `rejected_<status>` and `validation_errors`, and no terminal line, as upstream's
   * `on_rejected` writes a body refused by validation.
   */
  refused(input: TracedRequestInput, refusal: TraceRefusal): void {
    const handle = new TraceHandle(input.route, input.conversationId, 0);
    handle.ended = true;
    const bytes = input.body.byteLength + LINE_OVERHEAD_BYTES;
    this.#submit({ kind: "requests", at: this.#clock.wallMs(), handle, input, arrival: this.#clock.steadySeconds(), bytes, refusal });
  }

  /** The request's one terminal line; a second call for the same handle writes nothing. */
  finished(handle: TraceHandle, end: TraceEnd): void {
    if (handle.ended) return;
    handle.ended = true;
    this.#submit({ kind: "responses", at: this.#clock.wallMs(), handle, end, bytes: handle.capture.heldBytes + LINE_OVERHEAD_BYTES });
  }

  counts(): TraceCounts {
    const dropped = this.#dropped.queue_full + this.#dropped.write_error + this.#dropped.shutdown;
    const persisted = this.#queue.written;
    return { submitted: this.#submitted, persisted, dropped: { ...this.#dropped }, pending: this.#submitted - persisted - dropped };
  }

  /** Resolves once every queued line was written or dropped. */
  flush(): Promise<void> {
    return this.#queue.flush();
  }

  /** Writes what is queued (up to 5 s), then drops anything submitted later, counted as `shutdown`. */
  async close(): Promise<void> {
    await withDeadline(this.flush(), CLOSE_TIMEOUT_MS);
    this.#closed = true;
    this.#dropped.shutdown += this.#queue.clear();
  }

  #submit(item: Queued): void {
    this.#submitted++;
    if (this.#closed) {
      this.#dropped.shutdown++;
      return;
    }
    this.#queue.push(item);
  }

  /** The batch's lines by file, each in its own hour's directory. */
  async #lines(batch: readonly Queued[]): Promise<Map<string, string[]>> {
    const groups = new Map<string, string[]>();
    for (const item of batch) {
      const at = isoUtc(item.at);
      // oxlint-disable-next-line no-await-in-loop -- an answer's bytes are already read or being read
      const line = item.kind === "requests" ? this.#requestLine(item, at) : await responseLineOf(item.handle, item.end, at);
      const path = join(this.#options.dir, hourBucket(at), `${item.kind}-${this.#pid}.jsonl`);
      const lines = groups.get(path);
      if (lines === undefined) groups.set(path, [line]);
      else lines.push(line);
    }
    return groups;
  }

  #requestLine(item: Extract<Queued, { kind: "requests" }>, at: string): string {
    const { handle, input, refusal } = item;
    const line = {
      traceId: handle.traceId,
      session: sessionKey(handle.session),
      recordedAt: at,
      arrivalSeconds: item.arrival,
      route: input.route,
      headers: input.headers,
      body: input.body,
    };
    if (refusal === undefined) return requestLine({ ...line, status: "accepted" });
    const validationErrors = [{ loc: ["body"], type: refusal.code.toLowerCase(), msg: refusal.message }];
    const parseError = input.unparsed === true ? refusal.message : undefined;
    return requestLine({ ...line, status: `rejected_${refusal.status}`, validationErrors, parseError });
  }

  #drop(reason: DropReason, count: number, message: string, error?: unknown): void {
    const before = this.#dropped[reason];
    this.#dropped[reason] += count;
    if (dropWarned(before, this.#dropped[reason])) {
      this.#options.logger.warn(message, { reason, dropped_records: this.#dropped[reason], error });
    }
  }
}
