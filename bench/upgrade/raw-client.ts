/**
 * A minimal HTTP/1.1 client over node:net, so the upgrade run sees exactly what happens to a
 * connection (refused at connect, reset, closed before an answer) where fetch would retry or
 * blur it. Answers framed by Content-Length, chunked encoding, or the connection's close.
 */

import net from "node:net";

/** Why an exchange did not give a whole answer: refused at connect, reset or closed before any answer byte, or anything else. */
export type ExchangeFailure = "refused" | "reset" | "failed";

export class ExchangeError extends Error {
  readonly kind: ExchangeFailure;
  constructor(kind: ExchangeFailure, message: string) {
    super(message);
    this.kind = kind;
  }
}

export interface Answer {
  readonly status: number;
  readonly headers: ReadonlyMap<string, string>;
  /** The body after de-chunking, latin1 (bytes kept one to one). */
  readonly body: string;
  /** The server closes the connection after this answer. */
  readonly closes: boolean;
}

/** Body bytes an answer may have; an answer past it is a failure (the run's streams are far smaller). */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

export class RawHttpConnection {
  readonly #socket: net.Socket;
  #received = "";
  #closed = false;
  #error: string | undefined;
  #wake: (() => void) | undefined;

  private constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      this.#received += chunk;
      this.#wake?.();
    });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      this.#error = error.code ?? error.message;
      this.#closed = true;
      this.#wake?.();
    });
    socket.on("close", () => {
      this.#closed = true;
      this.#wake?.();
    });
  }

  static open(host: string, port: number, timeoutMs: number): Promise<RawHttpConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.createConnection({ host, port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new ExchangeError("failed", `connect timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.removeAllListeners("error");
        resolve(new RawHttpConnection(socket));
      });
      socket.once("error", (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(
          new ExchangeError(
            error.code === "ECONNREFUSED" ? "refused" : error.code === "ECONNRESET" ? "reset" : "failed",
            `connect: ${error.code ?? error.message}`,
          ),
        );
      });
    });
  }

  /** The server closed it (or it broke): open another before the next request. */
  get closed(): boolean {
    return this.#closed;
  }

  close(): void {
    this.#socket.destroy();
  }

  /** Sends one request and reads its whole answer. */
  async exchange(request: string, timeoutMs: number): Promise<Answer> {
    this.#received = "";
    this.#socket.write(request, "latin1");
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const answer = this.#parse();
      if (answer !== undefined) return answer;
      if (this.#closed) {
        const got = this.#received.length;
        const why = this.#error ?? "closed";
        // Nothing of an answer came: the connection was reset or closed under the request.
        if (got === 0)
          throw new ExchangeError(
            why === "closed" || why === "ECONNRESET" || why === "EPIPE" ? "reset" : "failed",
            `${why} before any answer byte`,
          );
        throw new ExchangeError("failed", `${why} after ${got} bytes of the answer`);
      }
      if (this.#received.length > MAX_ANSWER_BYTES) throw new ExchangeError("failed", "answer too large");
      const left = deadline - performance.now();
      if (left <= 0) {
        this.#socket.destroy();
        throw new ExchangeError("failed", `no whole answer within ${timeoutMs} ms (${this.#received.length} bytes)`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 1000));
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  /** The answer once it is whole, else undefined. */
  #parse(): Answer | undefined {
    const text = this.#received;
    const headEnd = text.indexOf("\r\n\r\n");
    if (headEnd < 0) return undefined;
    const [statusLine = "", ...lines] = text.slice(0, headEnd).split("\r\n");
    const status = Number(statusLine.split(" ")[1]);
    const headers = new Map<string, string>();
    for (const line of lines) {
      const colon = line.indexOf(":");
      if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const closes = (headers.get("connection") ?? "").toLowerCase() === "close";
    const rest = text.slice(headEnd + 4);
    const length = headers.get("content-length");
    if (length !== undefined)
      return rest.length >= Number(length) ? { status, headers, body: rest.slice(0, Number(length)), closes } : undefined;
    if ((headers.get("transfer-encoding") ?? "").toLowerCase() === "chunked") {
      const body = dechunk(rest);
      return body === undefined ? undefined : { status, headers, body, closes };
    }
    return this.#closed && this.#error === undefined ? { status, headers, body: rest, closes: true } : undefined;
  }
}

/** The body of a whole chunked encoding, or undefined while its last chunk has not come. */
function dechunk(text: string): string | undefined {
  let body = "";
  let at = 0;
  for (;;) {
    const lineEnd = text.indexOf("\r\n", at);
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(text.slice(at, lineEnd), 16);
    if (Number.isNaN(size)) throw new ExchangeError("failed", `bad chunk size ${JSON.stringify(text.slice(at, lineEnd))}`);
    if (size === 0) return text.indexOf("\r\n", lineEnd + 2) >= 0 ? body : undefined;
    const start = lineEnd + 2;
    if (text.length < start + size + 2) return undefined;
    body += text.slice(start, start + size);
    at = start + size + 2;
  }
}

/** A POST with a JSON body, kept alive or not. */
export function postRequest(host: string, port: number, path: string, body: string, keepAlive: boolean): string {
  return (
    `POST ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `Connection: ${keepAlive ? "keep-alive" : "close"}\r\n\r\n${body}`
  );
}

export function getRequest(host: string, port: number, path: string): string {
  return `GET ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\nConnection: close\r\n\r\n`;
}
