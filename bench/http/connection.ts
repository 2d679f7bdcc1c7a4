/**
 * One keep-alive HTTP/1.1 client connection on a raw Bun socket, one request at a time.
 *
 * Why not fetch: Bun's fetch costs the load generator tens of µs per request on its own HTTP
 * thread, caps concurrent requests at 256 (style §3.13) and hides when the status line
 * arrived. A raw socket writes pre-built request bytes and sees every byte as it lands.
 */

import type { Socket } from "bun";
import { ResponseParser, type ResponseEvents } from "./response-parser.ts";

export interface ResponseHandler extends ResponseEvents {
  /** The connection broke before the response was complete (or the request was never sent). */
  failed(error: Error): void;
}

interface Slot {
  conn: HttpConnection | undefined;
}

export class HttpConnection {
  readonly #socket: Socket<Slot>;
  #parser: ResponseParser | undefined;
  #handler: ResponseHandler | undefined;
  #unsent: Uint8Array | undefined;
  #closed = false;

  private constructor(socket: Socket<Slot>) {
    this.#socket = socket;
  }

  static async open(hostname: string, port: number): Promise<HttpConnection> {
    const slot: Slot = { conn: undefined };
    const socket = await Bun.connect<Slot>({
      hostname,
      port,
      data: slot,
      socket: {
        data: (s, bytes) => s.data.conn?.onData(bytes),
        drain: (s) => s.data.conn?.onDrain(),
        close: (s) => s.data.conn?.onClose(new Error("Connection closed")),
        error: (s, error) => s.data.conn?.onClose(error),
      },
    });
    socket.setNoDelay(true);
    const conn = new HttpConnection(socket);
    slot.conn = conn;
    return conn;
  }

  get busy(): boolean {
    return this.#handler !== undefined;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Sends one complete request (head and body bytes); the handler hears about its response. */
  send(request: Uint8Array, handler: ResponseHandler): void {
    if (this.#closed) return handler.failed(new Error("Connection closed"));
    if (this.#handler) throw new Error("A request is already in flight on this connection");
    this.#handler = handler;
    this.#parser = new ResponseParser({
      head: (status) => handler.head(status),
      body: (bytes) => handler.body(bytes),
      end: (reusable) => this.#ended(reusable),
    });
    this.#write(request);
  }

  /** Graceful close (FIN): what a client that leaves normally does. */
  close(): void {
    if (!this.#closed) this.#socket.end();
  }

  /** Abrupt close (RST): a client that crashes or is killed. */
  abort(): void {
    if (!this.#closed) this.#socket.terminate();
  }

  onData(bytes: Uint8Array): void {
    try {
      this.#parser?.push(bytes);
    } catch (error) {
      this.#fail(error instanceof Error ? error : new Error(String(error)));
      this.abort();
    }
  }

  onDrain(): void {
    const unsent = this.#unsent;
    this.#unsent = undefined;
    if (unsent) this.#write(unsent);
  }

  onClose(error: Error): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#parser?.closed() !== true) this.#fail(error);
  }

  #write(bytes: Uint8Array): void {
    const written = this.#socket.write(bytes);
    // A short write leaves the rest for the drain callback.
    if (written < bytes.length) this.#unsent = bytes.subarray(Math.max(0, written));
  }

  #ended(reusable: boolean): void {
    const handler = this.#handler;
    this.#handler = undefined;
    this.#parser = undefined;
    if (!reusable) this.close();
    handler?.end(reusable);
  }

  #fail(error: Error): void {
    const handler = this.#handler;
    this.#handler = undefined;
    this.#parser = undefined;
    handler?.failed(error);
  }
}
