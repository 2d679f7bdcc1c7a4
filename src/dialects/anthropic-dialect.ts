/**
 * The Anthropic Messages stream dialect (reference §3.5.3, seed #21388): the worker's OpenAI
 * chat SSE reframed into Anthropic events. No opening — message_start comes from the first
 * upstream chunk — and `ping` events as keepalives, before message_start too.
 */
import * as v from "valibot";
import { ProxyError } from "../errors.ts";
import { isJsonObject, type JsonObject, parseJsonOrUndefined } from "../json/json.ts";
import { concatBytes } from "../bytes.ts";
import { encodeEvent } from "../sse/encode.ts";
import { type SseFrame, SseFrameScanner } from "../sse/frame-scanner.ts";
import type { DialectStream } from "../streaming/dialect.ts";
import { ChatChunk } from "./anthropic-chat.ts";
import type { AnthropicIds } from "./anthropic-ids.ts";
import { type AnthropicEvent, AnthropicReframer } from "./anthropic-reframer.ts";
import { anthropicErrorMessage, workerErrorMessage } from "./anthropic-response.ts";

export interface AnthropicDialectOptions extends AnthropicIds {
  /** The request's model, reported only if the stream fails before a chunk names one. */
  readonly model?: string;
  /** Bound on one worker event (hostile or broken workers); the scanner's default when unset. */
  readonly maxEventBytes?: number;
}

const MALFORMED = "Malformed upstream stream chunk";
const EMPTY = new Uint8Array(0);

/** One streamed Messages request's state: chat chunks in, Anthropic events out. */
export function anthropicStream(options: AnthropicDialectOptions): DialectStream {
  return new AnthropicStream(options);
}

function encodeEvents(events: readonly AnthropicEvent[]): Uint8Array | undefined {
  return concatBytes(events.map((event) => encodeEvent(event.type, JSON.stringify(event))));
}

/** An OpenAI-style error the worker wrote into its stream: `{"error":…}` or `{"object":"error",…}`. */
function inBandError(value: JsonObject): { status: number; message: string } | undefined {
  const error = value["error"] ?? (value["object"] === "error" ? value : undefined);
  if (error === undefined || error === null) return undefined;
  const code = isJsonObject(error) ? error["code"] : undefined;
  const status = typeof code === "number" && code >= 400 && code < 600 ? code : 500;
  return { status, message: workerErrorMessage(value) ?? "The generation worker reported an error in its stream" };
}

type State = "streaming" | "done" | "failed";

class AnthropicStream implements DialectStream {
  readonly #scanner: SseFrameScanner;
  readonly #reframer: AnthropicReframer;
  #state: State = "streaming";
  #workerError: string | undefined;

  constructor(options: AnthropicDialectOptions) {
    this.#scanner = new SseFrameScanner(options.maxEventBytes === undefined ? {} : { maxFrameBytes: options.maxEventBytes });
    this.#reframer = new AnthropicReframer(options, options.model);
  }

  get workerError(): string | undefined {
    return this.#workerError;
  }

  get delivered(): boolean {
    return this.#state !== "streaming";
  }

  opening(): Uint8Array | undefined {
    return undefined;
  }

  push(chunk: Uint8Array): Uint8Array | undefined {
    if (this.#state !== "streaming") return undefined;
    const events: AnthropicEvent[] = [];
    for (const frame of this.#scanner.push(chunk)) {
      if (this.#state !== "streaming") break; // nothing follows [DONE] or an error
      events.push(...this.#frame(frame));
    }
    return encodeEvents(events);
  }

  // Only whole events are ever written, so a ping fits between any two.
  keepalive(): Uint8Array | undefined {
    return this.#state === "streaming" ? encodeEvent("ping", '{"type":"ping"}') : undefined;
  }

  end(): Uint8Array | ProxyError | undefined {
    if (this.#state !== "streaming") return undefined;
    // Closing with message_stop would hand the client a truncated answer as a finished one.
    return new ProxyError("WORKER_STREAM_BROKEN", 502, "Upstream stream ended before [DONE]; the response is incomplete");
  }

  fail(error: ProxyError): Uint8Array {
    // After message_stop or an error event the message is over: nothing may follow.
    if (this.#state !== "streaming") return EMPTY;
    this.#state = "failed";
    return encodeEvents(this.#reframer.error(error.status, anthropicErrorMessage(error))) ?? EMPTY;
  }

  #frame(frame: SseFrame): AnthropicEvent[] {
    // Named events (e.g. trtllm.perf_metrics) and comments are not chat chunks.
    if (frame.isComment || (frame.event !== undefined && frame.event !== "message")) return [];
    const data = frame.data?.trim();
    if (!data) return [];
    if (data === "[DONE]") {
      this.#state = "done";
      return this.#reframer.finish();
    }
    const value = parseJsonOrUndefined(data);
    const error = isJsonObject(value) ? inBandError(value) : undefined;
    if (error !== undefined) return this.#failInBand(error.status, error.message);
    const chunk = v.safeParse(ChatChunk, value);
    if (!chunk.success) return this.#failInBand(500, MALFORMED);
    return this.#reframer.chunk(chunk.output);
  }

  /** The worker broke its own stream: recorded for the log, reported to the client. */
  #failInBand(status: number, message: string): AnthropicEvent[] {
    this.#state = "failed";
    this.#workerError = message;
    return this.#reframer.error(status, message);
  }
}
