import type { Socket, SocketHandler } from "bun";
import { concatBytes, type ByteReader } from "../../bytes.ts";
import type { ReadableStreamReadResult } from "node:stream/web";
import { AnswerParser, type AnswerHead, type AnswerSink } from "./answer-parser.ts";

/** What one request needs of its connection's answer: its head, its body bytes, its end, or why it failed. */
export interface Exchange extends AnswerSink {
  /** The connection failed (closed, reset, a framing error) before the answer ended. */
  fail(error: Error): void;
}

// Bun's TCP sockets pause and resume reading; bun-types 1.4.5 declares it for WebSockets only.
declare module "bun" {
  interface Socket<Data = undefined> {
    pause(): boolean;
    resume(): boolean;
  }
}

/** A request body: text, bytes, bytes in parts (written in order, never joined), or a stream with its length declared. */
export type RawBody = string | Uint8Array | readonly Uint8Array[] | ReadableStream<Uint8Array> | undefined;

/** fetch's options, whose body may also be given in parts (workers/body-codec.ts PartsBody). */
export interface RawInit extends Omit<BunFetchRequestInit, "body"> {
  readonly body?: BunFetchRequestInit["body"] | readonly Uint8Array[];
}

/** A socket's data: its connection, set once the socket is connected. */
export interface ConnectionSlot {
  connection: WorkerConnection | undefined;
}

/** Where a connection goes when its answer is done and it may carry another request. */
export interface ConnectionHome {
  release(connection: WorkerConnection): void;
}

const encoder = new TextEncoder();

/** A body part at least this large is written by itself rather than copied next to its neighbours. */
const OWN_WRITE_BYTES = 32 * 1024;

/**
 * One keep-alive connection to a worker, carrying one request at a time: it writes the request
 * (waiting for `drain` when the socket's buffer is full), parses the answer as it arrives, and
 * goes back to its pool once the answer is done, the request was written whole, and both sides
 * keep it open. Anything else closes it.
 */
export class WorkerConnection {
  readonly #socket: Socket<ConnectionSlot>;
  readonly #home: ConnectionHome;
  readonly #maxHeadBytes: number;
  #exchange: Exchange | undefined;
  #parser: AnswerParser | undefined;
  /** Bytes the socket has not taken yet, in order: written on `drain`. */
  readonly #unsent: Uint8Array[] = [];
  #pendingBody: ByteReader | undefined;
  #written = true;
  #paused = false;
  /**
   * performance.now() when reading first paused during this answer: the worker may have written its end from then
   * on, unread in the socket (a later pause cannot say when; a stream that paused is reused less, never too late).
   */
  #pausedAt: number | undefined;
  /** Whether an answer came back on it before (a request lost on it is the keep-alive race). */
  answered = false;
  /** performance.now() from when the worker may see it idle: its answer's end, or the first pause during that answer. */
  idleSince = 0;
  closed = false;

  constructor(socket: Socket<ConnectionSlot>, home: ConnectionHome, maxHeadBytes: number) {
    this.#socket = socket;
    this.#home = home;
    this.#maxHeadBytes = maxHeadBytes;
    socket.data.connection = this;
  }

  /** Sends one request: `head` (ASCII), then the body; `exchange` hears of the answer. */
  send(head: string, body: RawBody, exchange: Exchange): void {
    this.#exchange = exchange;
    this.#parser = new AnswerParser(this.#answerSink, this.#maxHeadBytes);
    this.#written = false;
    this.#pausedAt = undefined;
    // Header values are ByteStrings (fetch's rule): a head with a character past ASCII goes out as Latin-1 bytes.
    const latin1 = NOT_ASCII.test(head);
    if (body instanceof ReadableStream) {
      this.#write(latin1 ? withHead(head, undefined) : head);
      this.#pendingBody = body.getReader();
      this.#pump();
    } else if (typeof body === "string" && !latin1) this.#writeAll(head + body);
    else if (body === undefined && !latin1) this.#writeAll(head);
    else if (body instanceof Uint8Array && body.byteLength >= OWN_WRITE_BYTES) this.#writeParts(head, [body]);
    else if (typeof body === "string" || body === undefined || body instanceof Uint8Array)
      // One buffer, one write: two would cost two system calls (a loopback write is a fifth of a request's CPU).
      this.#writeAll(withHead(head, typeof body === "string" ? encoder.encode(body) : body));
    else this.#writeParts(head, body);
  }

  /**
   * The head and a body in parts: a part of OWN_WRITE_BYTES or more is written as it is, the
   * rest joined with what comes before it. A large body copied next to its head cost more than
   * the system call it saves (100 KB prompts: ~10 % of a request's CPU in the copies).
   */
  #writeParts(head: string, parts: readonly Uint8Array[]): void {
    let run: Uint8Array[] = [Buffer.from(head, "latin1")];
    for (const part of parts) {
      if (part.byteLength < OWN_WRITE_BYTES) {
        run.push(part);
        continue;
      }
      if (run.length > 0) this.#write(concatBytes(run) ?? part);
      run = [];
      this.#write(part);
    }
    if (run.length > 0) this.#write(concatBytes(run) ?? new Uint8Array());
    this.#written = this.#unsent.length === 0;
  }

  /** Stops reading the answer until `resume` (its consumer is behind). */
  pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    this.#pausedAt ??= performance.now();
    this.#socket.pause();
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#socket.resume();
  }

  /** The request is abandoned (aborted, or its body no longer wanted): the connection cannot carry another. */
  abandon(): void {
    this.#exchange = undefined;
    this.destroy();
  }

  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.#pendingBody?.cancel().catch(() => {});
    this.#pendingBody = undefined;
    this.#unsent.length = 0;
    this.#socket.terminate();
  }

  /** The parser's sink, made once per connection (not closures per request): it forwards to the request's exchange. */
  readonly #answerSink: AnswerSink = {
    head: (head: AnswerHead) => {
      this.answered = true;
      this.#exchange?.head(head);
    },
    body: (bytes) => this.#exchange?.body(bytes),
    end: () => this.#answerEnded(this.#exchange),
  };

  #answerEnded(exchange: Exchange | undefined): void {
    const reusable = this.#parser?.reusable === true && this.#written && !this.closed;
    // A worker's keep-alive clock starts when it writes the end, which may have waited unread in the socket while paused.
    this.idleSince = this.#pausedAt ?? performance.now();
    this.#exchange = undefined;
    this.#parser = undefined;
    // Paused for a consumer that fell behind, whose stream has now closed: the next answer must be heard.
    this.resume();
    if (reusable) this.#home.release(this);
    else this.destroy();
    exchange?.end();
  }

  /** Writes what the socket takes now, after anything still waiting; the rest waits for `drain`. False when something waits. */
  #write(data: string | Uint8Array): boolean {
    if (this.#unsent.length > 0) {
      this.#unsent.push(typeof data === "string" ? encoder.encode(data) : data);
      return false;
    }
    const taken = this.#socket.write(data);
    const size = typeof data === "string" ? Buffer.byteLength(data) : data.byteLength;
    if (taken >= size) return true;
    this.#unsent.push((typeof data === "string" ? encoder.encode(data) : data).subarray(Math.max(0, taken)));
    return false;
  }

  #writeAll(bytes: string | Uint8Array): void {
    if (this.#write(bytes)) this.#written = true;
  }

  /** A body given as a stream: a piece at a time, each when the socket has taken the last. */
  #pump(): void {
    const reader = this.#pendingBody;
    if (reader === undefined || this.#unsent.length > 0) return;
    reader.read().then(
      (read) => this.#pumped(reader, read),
      (error: unknown) => this.#failed(error instanceof Error ? error : new Error(String(error))),
    );
  }

  #pumped(reader: ByteReader, read: ReadableStreamReadResult<Uint8Array>): void {
    if (this.closed || this.#pendingBody !== reader) return;
    if (read.done) {
      this.#pendingBody = undefined;
      this.#written = this.#unsent.length === 0;
    } else if (this.#write(read.value)) this.#pump();
  }

  onDrain(): void {
    if (this.#unsent.length === 0) return;
    for (let next = this.#unsent.shift(); next !== undefined; next = this.#unsent.shift()) {
      const taken = this.#socket.write(next);
      if (taken < next.byteLength) {
        this.#unsent.unshift(next.subarray(Math.max(0, taken)));
        return;
      }
    }
    if (this.#pendingBody !== undefined) this.#pump();
    else this.#written = true;
  }

  onData(bytes: Uint8Array): void {
    const parser = this.#parser;
    // Bytes no request asked for: the worker is out of step with the connection.
    if (parser === undefined) {
      this.destroy();
      return;
    }
    try {
      parser.push(bytes);
    } catch (error) {
      this.#failed(error instanceof Error ? error : new Error(String(error)));
    }
  }

  onClose(error: Error | undefined): void {
    const parser = this.#parser;
    const exchange = this.#exchange;
    this.closed = true;
    if (parser === undefined || exchange === undefined) return;
    // A body framed by the connection's close ends at a clean close; a reset cuts it, as it cuts anything else.
    if (error === undefined && parser.closed()) return;
    this.#failed(connectionLost(error, parser.untouched));
  }

  #failed(error: Error): void {
    const exchange = this.#exchange;
    this.#exchange = undefined;
    this.#parser = undefined;
    this.destroy();
    exchange?.fail(error);
  }
}

/**
 * A connection lost before or during its answer. Lost before any byte of it: ECONNRESET, as fetch
 * codes it, which workers/worker-call.ts translateFailure reads as possibly unread (the keep-alive race).
 * Lost once the worker began answering, even within the head: it read the request, so never that.
 */
function connectionLost(cause: Error | undefined, beforeAnswer: boolean): Error {
  if (!beforeAnswer) return Object.assign(new Error("The connection closed during the answer", { cause }), { code: "ERR_ANSWER_CUT" });
  return Object.assign(new Error("The connection closed before the answer", { cause }), { code: "ECONNRESET" });
}

/** The socket events of every worker connection, which find their connection in the socket's data. */
export const CONNECTION_EVENTS: SocketHandler<ConnectionSlot> = {
  data: (socket, bytes) => socket.data.connection?.onData(bytes),
  drain: (socket) => socket.data.connection?.onDrain(),
  end: (socket) => {
    socket.data.connection?.onClose(undefined);
    socket.end();
  },
  close: (socket, error) => socket.data.connection?.onClose(error),
  error: (socket, error) => socket.data.connection?.onClose(error),
};

const NOT_ASCII = /[\u0080-\uffff]/;

/** The head (as Latin-1 bytes) and the body in one buffer. */
function withHead(head: string, body: Uint8Array | undefined): Uint8Array {
  const out = Buffer.allocUnsafe(head.length + (body?.byteLength ?? 0));
  out.write(head, 0, "latin1");
  if (body !== undefined) out.set(body, head.length);
  return out;
}
