/**
 * The Responses stream dialect (seeds #21452, #21602; trtllm-disagg.md §3.4).
 *
 * Opened early (the pipeline outlived the start wait): the client got response.created and
 * response.in_progress built from its request, so every worker response.created /
 * response.in_progress — its opening and its keepalives, wherever they come — is dropped and
 * every other event is renumbered to continue the client's one sequence from 0.
 *
 * Not opened (the pipeline answered in time): the worker's bytes pass untouched, and the frames
 * are only watched: the worker's response object, its last sequence number and the terminal
 * event, so a keepalive or a failure of ours continues the worker's sequence. Once we insert an
 * event of our own, later worker events are renumbered so the sequence stays gap-free.
 */
import { ProxyError } from "../errors.ts";
import { type JsonObject, isJsonObject, readInteger } from "../json/json.ts";
import { concatBytes } from "../bytes.ts";
import { ScannedFrame } from "../sse/frame.ts";
import { SseFrameScanner, type SseFrame } from "../sse/frame-scanner.ts";
import type { DialectStream } from "../streaming/dialect.ts";
import { CONTEXT_LENGTH_EXCEEDED } from "../workers/context-overflow.ts";
import {
  type WorkerEvent,
  errorEvent,
  failedEvent,
  isOpeningEvent,
  isTerminal,
  readWorkerEvent,
  renumbered,
  responseEvent,
  failureEventMessage,
} from "./responses-events.ts";

export interface ResponsesDialectOptions {
  /** The opening response object (buildResponsesOpening), or undefined when none can be built. */
  readonly opening: JsonObject | undefined;
  /** Bound on one worker event (hostile or broken workers); the scanner's default when unset. */
  readonly maxEventBytes?: number;
}

/** The one terminal event of a stream whose prompt the worker refused as too long (no `error` event: none precedes it in OpenAI's). */
function overflowEvent(response: JsonObject, error: ProxyError, sequence: number): Uint8Array {
  return failedEvent(response, error.message, sequence, CONTEXT_LENGTH_EXCEEDED);
}

// Ends a frame the worker left unfinished, so our next event starts on a fresh line.
const FRAME_END = new TextEncoder().encode("\n\n");
const EMPTY = new Uint8Array(0);

/** One streamed Responses request's state: the worker's events renumbered behind our opening. */
export function responsesStream(options: ResponsesDialectOptions): DialectStream {
  return new ResponsesStream(options.opening, options.maxEventBytes);
}

class ResponsesStream implements DialectStream {
  readonly #opening: JsonObject | undefined;
  readonly #scanner: SseFrameScanner;
  /** The response object the client knows: the opening's, or the worker's own. */
  #response: JsonObject | undefined;
  #opened = false;
  /** Worker events are re-encoded with our numbers (always, once we sent an event of ours). */
  #renumbering = false;
  #nextSequence = 0;
  /**
   * Pass-through watch: the last worker event's own bytes, its number read only when needed.
   * Kept as bytes of its own: the event (its frame, its decoded text, the chunk the frame lay
   * in) would stay with an idle stream for as long as it is open.
   */
  #lastEvent: Uint8Array | undefined;
  #eventCount = 0;
  #sentAnything = false;
  #terminal = false;
  #failed = false;
  /** Bytes end() produced that must precede the failure events fail() writes next. */
  #carried: Uint8Array | undefined;
  workerError: string | undefined;

  constructor(opening: JsonObject | undefined, maxEventBytes: number | undefined) {
    this.#scanner = new SseFrameScanner(maxEventBytes === undefined ? {} : { maxFrameBytes: maxEventBytes });
    this.#opening = opening;
  }

  get delivered(): boolean {
    return this.#terminal;
  }

  opening(): Uint8Array | undefined {
    if (this.#opening === undefined || this.#opened || this.#sentAnything) return undefined;
    this.#opened = true;
    this.#renumbering = true;
    this.#response = this.#opening;
    this.#sentAnything = true;
    this.#nextSequence = 2;
    return concatBytes([responseEvent("response.created", this.#opening, 0), responseEvent("response.in_progress", this.#opening, 1)]);
  }

  push(chunk: Uint8Array): Uint8Array | undefined {
    const frames = this.#scanner.push(chunk);
    if (this.#renumbering) return concatBytes(frames.flatMap((frame) => this.#relay(frame, false)));
    for (const frame of frames) this.#watch(frame);
    this.#keepLastEvent();
    if (chunk.length === 0) return undefined;
    this.#sentAnything = true;
    return chunk;
  }

  keepalive(): Uint8Array | undefined {
    if (this.#terminal || this.#failed || this.#response === undefined) return undefined;
    if (!this.#renumbering) {
      // Pass-through may have sent part of a frame: nothing can be inserted inside it.
      if (this.#scanner.midFrame) return undefined;
      this.#nextSequence = this.#passThroughNext();
      this.#renumbering = true;
    }
    return responseEvent("response.in_progress", this.#response, this.#nextSequence++);
  }

  end(): Uint8Array | ProxyError | undefined {
    if (this.#failed || this.#terminal) return undefined;
    const tail = this.#finishTail();
    if (this.#terminal) return tail;
    this.#carried = tail;
    return new ProxyError("WORKER_STREAM_BROKEN", 502, "Upstream stream ended before the response completed");
  }

  fail(error: ProxyError): Uint8Array {
    if (this.#failed) return EMPTY;
    this.#failed = true;
    const lead = this.#carried ?? (!this.#renumbering && this.#scanner.midFrame ? FRAME_END : undefined);
    // A stream that already ended its response gets nothing after its terminal event.
    if (this.#terminal) return lead ?? EMPTY;
    const sequence = this.#renumbering ? this.#nextSequence : this.#passThroughNext();
    const parts =
      this.#response !== undefined && error.code === "CONTEXT_OVERFLOW"
        ? [overflowEvent(this.#response, error, sequence)]
        : this.#failureEvents(error, sequence);
    return concatBytes(lead === undefined ? parts : [lead, ...parts]) ?? EMPTY;
  }

  /**
   * A prompt too long for the context, refused before anything was sent, is a whole stream
   * as OpenAI sends one (upstream #19457; the server tests' TestStreamedResponsesContextOverflow,
   * read_file id 70156702744): response.created, response.in_progress, response.failed coded
   * `context_length_exceeded`. Other early failures keep their HTTP status.
   */
  refusal(error: ProxyError): Uint8Array | undefined {
    if (error.code !== "CONTEXT_OVERFLOW") return undefined;
    const opening = this.opening();
    if (opening === undefined || this.#response === undefined) return undefined;
    this.#failed = true;
    return concatBytes([opening, overflowEvent(this.#response, error, this.#nextSequence++)]);
  }

  #failureEvents(error: ProxyError, sequence: number): Uint8Array[] {
    const code = this.#sentAnything ? "upstream_error" : "internal_error";
    const parts = [errorEvent(code, error.message, sequence)];
    if (this.#response !== undefined) parts.push(failedEvent(this.#response, error.message, sequence + 1));
    return parts;
  }

  /** Client bytes for one complete worker frame in renumbering mode. */
  #relay(frame: SseFrame, dropUnparsed: boolean): Uint8Array[] {
    // Our keepalives are the only ones: a worker comment would double them.
    if (frame.isComment) return [];
    const event = readWorkerEvent(frame);
    if (this.#opened && isOpeningEvent(event.type)) return [];
    this.#observe(event);
    const payload = event.payload();
    if (payload === undefined) return dropUnparsed ? [] : [frame.raw];
    return [renumbered(frame.event || undefined, payload, this.#nextSequence++)];
  }

  /** Pass-through: remembers what a keepalive or a failure of ours will need. */
  #watch(frame: SseFrame): void {
    if (frame.isComment) return;
    const event = readWorkerEvent(frame);
    this.#lastEvent = frame.raw;
    this.#eventCount++;
    this.#observe(event);
    if (event.type === "response.created" && this.#response === undefined) {
      const response = event.payload()?.["response"];
      if (isJsonObject(response)) this.#response = response;
    }
  }

  #observe(event: WorkerEvent): void {
    if (isTerminal(event.type)) this.#terminal = true;
    const message = failureEventMessage(event);
    if (message !== undefined) this.workerError = message;
  }

  /** The last event's bytes as a copy, when they are a view of the worker's chunk (once per chunk, not per frame). */
  #keepLastEvent(): void {
    const last = this.#lastEvent;
    if (last !== undefined && last.byteLength !== last.buffer.byteLength) this.#lastEvent = last.slice();
  }

  /** The number after the worker's last one; the count of its events if that has none. */
  #passThroughNext(): number {
    const bytes = this.#lastEvent;
    const payload = bytes === undefined ? undefined : readWorkerEvent(new ScannedFrame(bytes, 0, bytes.length, false)).payload();
    const last = readInteger(payload?.["sequence_number"]);
    return last === undefined ? this.#eventCount : Number(last) + 1;
  }

  /**
   * The upstream ended inside a frame. A frame whose data is complete but whose blank line
   * never came still counts (its terminal event ends the response); a frame cut inside its
   * data is not relayed when renumbering, since a client cannot parse it.
   */
  #finishTail(): Uint8Array | undefined {
    if (!this.#scanner.midFrame) return undefined;
    const frames = this.#scanner.push(FRAME_END);
    if (!this.#renumbering) {
      for (const frame of frames) this.#watch(frame);
      return FRAME_END;
    }
    return concatBytes(frames.flatMap((frame) => this.#relay(frame, true)));
  }
}
