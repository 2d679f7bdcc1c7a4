/**
 * A reply body pulled from an async iterator of byte chunks: nothing is produced before the
 * client (the proxy) asks for it, so a stalled reader holds the engine back. With chunkBytes
 * set, the bytes are re-split into pieces of exactly that size across event boundaries, and each
 * piece leaves in its own socket write. A ConnectionCut from the source closes the connection
 * abruptly once the bytes already produced have gone out.
 */

import { ConnectionCut } from "../engine/engine.ts";
import { isAbortError } from "./worker-error.ts";

export interface BodyHooks {
  readonly chunkBytes: number | undefined;
  /** The body ended: completely, or cut on purpose. */
  readonly onEnd: () => void;
  /** The client went away first. */
  readonly onCancel: () => void;
  /** Sees each piece as it is handed to the socket. */
  readonly onPiece: ((piece: Uint8Array) => void) | undefined;
}

/** Bun writes the chunks enqueued within one turn together; a macrotask between pieces splits them. */
function nextMacrotask(): Promise<"later"> {
  return new Promise((resolve) => setImmediate(() => resolve("later")));
}

/**
 * Erroring the stream drops what is enqueued but not yet written, and setImmediate is not
 * always late enough for that write (measured on Bun 1.4.5); a short timer is.
 */
const FLUSH_BEFORE_CUT_MS = 10;

export function bodyStream(source: AsyncIterator<Uint8Array, void>, hooks: BodyHooks): ReadableStream<Uint8Array> {
  const pieces = new PieceReader(source, hooks.chunkBytes);
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const piece = await pieces.next();
          if (piece === undefined) {
            controller.close();
            hooks.onEnd();
            return;
          }
          hooks.onPiece?.(piece);
          controller.enqueue(piece);
        } catch (error) {
          // An abort means the client left or the worker stops: the request is settled
          // elsewhere, and erroring a stream that cancel() already closed is a no-op.
          if (isAbortError(error)) return controller.error(error);
          if (error instanceof ConnectionCut) await Bun.sleep(FLUSH_BEFORE_CUT_MS);
          controller.error(error);
          hooks.onEnd();
        }
      },
      cancel() {
        // Never throws: a throwing cancel() becomes an unhandled rejection in Bun (style §3.7).
        hooks.onCancel();
        source.return?.().catch(() => undefined);
      },
    },
    { highWaterMark: 0 },
  );
}

/** Turns the source's chunks into the pieces to send: whole chunks, or chunkBytes-sized pieces. */
class PieceReader {
  readonly #source: AsyncIterator<Uint8Array, void>;
  readonly #size: number | undefined;
  #pending: Uint8Array = new Uint8Array(0);
  #inflight: Promise<IteratorResult<Uint8Array, void>> | undefined;
  #sourceDone = false;
  #piecesSent = 0;

  constructor(source: AsyncIterator<Uint8Array, void>, size: number | undefined) {
    this.#source = source;
    this.#size = size;
  }

  /** The next piece, or undefined at the end. */
  async next(): Promise<Uint8Array | undefined> {
    const size = this.#size;
    if (size === undefined) {
      const next = await this.#source.next();
      return next.done === true ? undefined : next.value;
    }
    await this.#fill(size);
    if (this.#pending.length === 0) return undefined;
    if (this.#piecesSent++ > 0) await nextMacrotask();
    const piece = this.#pending.subarray(0, size);
    this.#pending = this.#pending.subarray(size);
    return piece;
  }

  /**
   * Gathers bytes until a whole piece is ready. Bytes the source produces at once are joined
   * across events; when the source goes quiet (the engine waits for its next token), a short
   * piece leaves now rather than holding produced bytes back for the next token.
   */
  async #fill(size: number): Promise<void> {
    while (this.#pending.length < size && !this.#sourceDone) {
      this.#inflight ??= this.#source.next();
      // oxlint-disable-next-line no-await-in-loop -- one chunk at a time is the point of pulling
      const next = this.#pending.length === 0 ? await this.#inflight : await Promise.race([this.#inflight, nextMacrotask()]);
      if (next === "later") return;
      this.#inflight = undefined;
      if (next.done === true) this.#sourceDone = true;
      else this.#pending = join(this.#pending, next.value);
    }
  }
}

function join(first: Uint8Array, second: Uint8Array): Uint8Array {
  const joined = new Uint8Array(first.length + second.length);
  joined.set(first);
  joined.set(second, first.length);
  return joined;
}

/** A whole body delivered at once (subject to the chunk fault), optionally cut halfway. */
export async function* wholeBody(bytes: Uint8Array, cut: ConnectionCut | undefined): AsyncGenerator<Uint8Array, void> {
  if (cut === undefined) {
    yield bytes;
    return;
  }
  yield bytes.subarray(0, Math.floor(bytes.length / 2));
  throw cut;
}
