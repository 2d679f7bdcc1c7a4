/** Byte helpers: joining pieces, a finished stream of given chunks, and a byte stream's first read. */
import type { ReadableStreamReadResult } from "node:stream/web";

/** The parts joined into one array; undefined when there is nothing to send. */
export function concatBytes(parts: readonly [Uint8Array, ...Uint8Array[]]): Uint8Array;
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array | undefined;
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array | undefined {
  if (parts.length === 0) return undefined;
  if (parts.length === 1) return parts[0];
  let length = 0;
  for (const part of parts) length += part.length;
  const joined = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  return joined;
}

/** A finished byte stream of the given chunks (the type lib lacks ReadableStream.from). */
export function streamOf(chunks: readonly Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

/** The part of a byte stream's reader the relay uses: the runtime's own reader is one. */
export interface ByteReader {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  cancel(reason?: unknown): Promise<void>;
}

/** A byte stream whose first read was made already: its reader, and that read or why it threw. */
export type FirstRead = { readonly reader: ByteReader } & (
  | { readonly read: ReadableStreamReadResult<Uint8Array> }
  | { readonly failure: unknown }
);

/** A reader as a pull stream (a worker's stream handed on whole, with no first read made). */
export function readableOf(reader: ByteReader): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const read = await reader.read();
      if (read.done) controller.close();
      else controller.enqueue(read.value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}
