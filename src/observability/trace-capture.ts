/**
 * What one traced request's client received, kept for its trace line: the stream's bytes as
 * they went out, or the whole answer (JSON, an error). Only built when TRTLLM_REQUEST_TRACE_DIR
 * is set; a request pays one optional call per chunk otherwise.
 *
 * Bounded: a stream keeps its first `maxBytes` less the tail's share, then only its last
 * TAIL_BYTES (pieces dropped from the front as new ones come), so a long stream's line still
 * ends with its terminal event (how a Responses reply ended is read from there) and says how
 * much was left out. Pieces are kept by reference, never copied.
 */

export type CapturedKind = "sse_text" | "answer";

/** What a cut stream keeps of its end. */
const TAIL_BYTES = 64 * 1024;

export class TraceCapture {
  readonly #headLimit: number;
  readonly #head: Uint8Array[] = [];
  #headBytes = 0;
  #tail: Uint8Array[] = [];
  #tailBytes = 0;
  #omitted = 0;
  #kind: CapturedKind | undefined;
  #answer: Promise<Uint8Array> | undefined;
  #answerBytes = 0;
  #upstream: Uint8Array | undefined;

  constructor(maxBytes: number) {
    this.#headLimit = Math.max(0, maxBytes - TAIL_BYTES);
  }

  /** Client bytes of a stream, in order. */
  streamed(bytes: Uint8Array): void {
    this.#kind ??= "sse_text";
    if (this.#tail.length === 0 && this.#headBytes + bytes.byteLength <= this.#headLimit) {
      this.#head.push(bytes);
      this.#headBytes += bytes.byteLength;
      return;
    }
    this.#tail.push(bytes);
    this.#tailBytes += bytes.byteLength;
    while (this.#tailBytes > TAIL_BYTES && this.#tail.length > 1) {
      const dropped = this.#tail.shift()!;
      this.#tailBytes -= dropped.byteLength;
      this.#omitted += dropped.byteLength;
    }
  }

  /** A whole answer (JSON or an error): read from a copy of the response, off the request's path. */
  answered(response: Response): void {
    this.#kind = "answer";
    this.#answer = response.clone().bytes();
    // A failed read is only a trace without its body; it must not be an unhandled rejection.
    this.#answer.catch(() => {});
  }

  /** A whole answer already in bytes. */
  answeredBytes(bytes: Uint8Array): void {
    this.#kind = "answer";
    this.#answer = Promise.resolve(bytes);
    this.#answerBytes = bytes.byteLength;
  }

  /** The worker's answer a route could not convert (kept as upstream keeps it). */
  unconverted(bytes: Uint8Array): void {
    this.#upstream = bytes;
  }

  get kind(): CapturedKind | undefined {
    return this.#kind;
  }

  /** The stream's bytes kept: its start, then (when cut) its last bytes. */
  get pieces(): readonly Uint8Array[] {
    return this.#tail.length === 0 ? this.#head : [...this.#head, ...this.#tail];
  }

  /** Stream bytes left out between the kept start and the kept end; 0 when none were. */
  get omittedBytes(): number {
    return this.#omitted;
  }

  /** What this capture holds in memory (known sizes: a response read from a copy counts 0 until read). */
  get heldBytes(): number {
    return this.#headBytes + this.#tailBytes + this.#answerBytes + (this.#upstream?.byteLength ?? 0);
  }

  get answer(): Promise<Uint8Array> | undefined {
    return this.#answer;
  }

  get upstream(): Uint8Array | undefined {
    return this.#upstream;
  }
}
