/**
 * What one traced request's client received, kept for its trace line: the stream's bytes as
 * they went out, or the whole answer (JSON, an error). Only built when TRTLLM_REQUEST_TRACE_DIR
 * is set; a request pays one optional call per chunk otherwise. Bounded: past `maxBytes` the
 * rest of a stream is not kept and the line says it was cut.
 */

export type CapturedKind = "sse_text" | "answer";

export class TraceCapture {
  readonly #maxBytes: number;
  #pieces: Uint8Array[] = [];
  #bytes = 0;
  #truncated = false;
  #kind: CapturedKind | undefined;
  #answer: Promise<Uint8Array> | undefined;
  #upstream: Uint8Array | undefined;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Client bytes of a stream, in order. The pieces are kept by reference, never copied. */
  streamed(bytes: Uint8Array): void {
    this.#kind ??= "sse_text";
    if (this.#truncated) return;
    if (this.#bytes + bytes.byteLength > this.#maxBytes) {
      this.#truncated = true;
      return;
    }
    this.#pieces.push(bytes);
    this.#bytes += bytes.byteLength;
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
  }

  /** The worker's answer a route could not convert for its client (kept as upstream keeps it). */
  unconverted(bytes: Uint8Array): void {
    this.#upstream = bytes;
  }

  get kind(): CapturedKind | undefined {
    return this.#kind;
  }

  get truncated(): boolean {
    return this.#truncated;
  }

  get pieces(): readonly Uint8Array[] {
    return this.#pieces;
  }

  get answer(): Promise<Uint8Array> | undefined {
    return this.#answer;
  }

  get upstream(): Uint8Array | undefined {
    return this.#upstream;
  }
}
