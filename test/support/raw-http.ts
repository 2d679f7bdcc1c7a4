/**
 * Raw HTTP over TCP, for what a client library would hide or refuse to send: malformed
 * framing, pipelining, HTTP/1.0 without Host, stalled bodies, idle keep-alive sockets.
 */
export interface RawConnection extends AsyncDisposable {
  write(data: string | Uint8Array): void;
  /** Everything the server sent so far (latin1, so byte counts stay exact). */
  readonly received: string;
  /** Resolves when the server closed the connection. */
  readonly closed: Promise<void>;
  readonly isClosed: boolean;
  /** Resolves once `received` satisfies `check`, or rejects after `timeoutMs`. */
  until(check: (received: string) => boolean, timeoutMs?: number): Promise<string>;
  end(): void;
}

export async function rawConnect(url: string | URL): Promise<RawConnection> {
  const target = new URL(url);
  let received = "";
  let isClosed = false;
  const waiters = new Set<() => void>();
  const wake = (): void => {
    for (const waiter of waiters) waiter();
  };
  let markClosed!: () => void;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  const decoder = new TextDecoder("latin1");
  const socket = await Bun.connect({
    hostname: target.hostname,
    port: Number(target.port),
    socket: {
      data(_socket, data) {
        received += decoder.decode(data);
        wake();
      },
      close() {
        isClosed = true;
        markClosed();
        wake();
      },
      error() {
        isClosed = true;
        markClosed();
        wake();
      },
    },
  });
  const connection: RawConnection = {
    write(data) {
      socket.write(data);
    },
    get received() {
      return received;
    },
    closed,
    get isClosed() {
      return isClosed;
    },
    until(check, timeoutMs = 5000) {
      if (check(received)) return Promise.resolve(received);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`raw HTTP: condition not met in ${timeoutMs} ms; received ${JSON.stringify(received.slice(0, 600))}`));
        }, timeoutMs);
        const waiter = (): void => {
          if (check(received)) {
            clearTimeout(timer);
            waiters.delete(waiter);
            resolve(received);
          } else if (isClosed) {
            clearTimeout(timer);
            waiters.delete(waiter);
            reject(new Error(`raw HTTP: closed before the condition held; received ${JSON.stringify(received.slice(0, 600))}`));
          }
        };
        waiters.add(waiter);
      });
    },
    end() {
      socket.end();
    },
    async [Symbol.asyncDispose]() {
      socket.end();
    },
  };
  return connection;
}

/** The status codes of every response head in `received`, in order. */
export function statuses(received: string): number[] {
  return [...received.matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((match) => Number(match[1]));
}

/** One request head (and body) in HTTP/1.1 wire form. */
export function rawRequest(method: string, path: string, headers: Record<string, string>, body = ""): string {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `${method} ${path} HTTP/1.1\r\n${lines.join("")}\r\n${body}`;
}

/** A JSON POST with Host and Content-Length set. */
export function rawJsonPost(path: string, body: string, headers: Record<string, string> = {}): string {
  return rawRequest(
    "POST",
    path,
    { host: "proxy", "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), ...headers },
    body,
  );
}
