/**
 * Connection-level faults of a worker's HTTP server, which Bun.serve cannot play: a TCP front
 * on the worker's port relays each connection to the emulator's own server, and
 *
 * - closes a kept-alive connection exactly as uvicorn (trtllm-serve's server) does: a timer of
 *   `timeout_keep_alive` starts when a response completes and is cancelled by the next byte the
 *   client sends; when it fires the connection is closed (a FIN). encode/uvicorn
 *   uvicorn/protocols/http/h11_impl.py @ 00c46484ba372f9e2bbb95eff50a7846d94bb5c1 (read_file id
 *   16736750102): `on_response_complete` → `loop.call_later(self.timeout_keep_alive, …)`,
 *   `data_received` cancels it, `timeout_keep_alive_handler` → `transport.close()`; uvicorn's
 *   default is 5 s, and trtllm-serve keeps it (tensorrt_llm/serve/openai_server.py
 *   `TIMEOUT_KEEP_ALIVE = 5`, read_file id 36409600292);
 * - resets (RST) the next request of every kept-alive connection before the worker reads it,
 *   the race a proxy loses when it reuses a connection the worker is closing;
 * - or, as a middlebox (sidecar, L4 balancer) can, forwards the next request of every
 *   kept-alive connection whole and resets the client's side a while later, before any answer
 *   byte: the worker read the request and had started it.
 *
 * The emulator's own calls between workers (/emulator/…) are never reset.
 */

import type { Socket, TCPSocketListener } from "bun";
import { ResponseFraming } from "../http/response-framing.ts";

export interface ConnectionFaults {
  /** uvicorn's timeout_keep_alive, in ms: an idle kept-alive connection is closed after it. */
  readonly keepAliveTimeoutMs?: number | undefined;
  /** The next request on a connection that already served one is reset unread. */
  readonly resetKeptAlive?: boolean | undefined;
  /** The next request on a connection that already served one is forwarded, and the client's side reset this many ms later. */
  readonly resetKeptAliveAfterMs?: number | undefined;
}

/** What the front did, for tests and soaks. */
export interface ConnectionFaultCounts {
  /** Connections accepted. */
  readonly opened: number;
  readonly idleClosed: number;
  readonly resets: number;
}

interface Relay {
  backend: Socket<BackendData> | undefined;
  /** Client bytes waiting for the backend connection, or for it to drain. */
  readonly toBackend: Uint8Array[];
  /** Worker bytes waiting for the client to drain. */
  readonly toClient: Uint8Array[];
  readonly framing: ResponseFraming;
  /** A request is between its first byte and its response's end. */
  inRequest: boolean;
  /** The worker sent bytes since the current request began. */
  answered: boolean;
  served: number;
  idleTimer: ReturnType<typeof setTimeout> | undefined;
  closed: boolean;
  /** The worker closed: the client's connection closes once what the worker sent is written. */
  endOnDrain: boolean;
}

interface BackendData {
  readonly client: Socket<Relay>;
}

const OWN_PATH = /^[A-Z]+ \/emulator\//;

export class ConnectionFront {
  readonly #listener: TCPSocketListener<Relay>;
  readonly #faults: ConnectionFaults;
  readonly #backendPort: number;
  #opened = 0;
  #idleClosed = 0;
  #resets = 0;

  constructor(hostname: string, port: number, backendPort: number, faults: ConnectionFaults) {
    this.#faults = faults;
    this.#backendPort = backendPort;
    this.#listener = Bun.listen<Relay>({
      hostname,
      port,
      socket: {
        open: (client) => this.#open(client),
        data: (client, bytes) => this.#fromClient(client, bytes),
        drain: (client) => this.#drained(client),
        close: (client) => this.#close(client),
        error: (client) => this.#close(client),
      },
    });
  }

  get port(): number {
    return this.#listener.port;
  }

  get counts(): ConnectionFaultCounts {
    return { opened: this.#opened, idleClosed: this.#idleClosed, resets: this.#resets };
  }

  stop(): void {
    this.#listener.stop(true);
  }

  #open(client: Socket<Relay>): void {
    this.#opened++;
    client.data = {
      backend: undefined,
      toBackend: [],
      toClient: [],
      framing: new ResponseFraming(),
      inRequest: false,
      answered: false,
      served: 0,
      idleTimer: undefined,
      closed: false,
      endOnDrain: false,
    };
    void Bun.connect<BackendData>({
      hostname: "127.0.0.1",
      port: this.#backendPort,
      data: { client },
      socket: {
        data: (backend, bytes) => this.#fromWorker(backend.data.client, bytes),
        drain: (backend) => flush(backend, backend.data.client.data.toBackend),
        close: (backend) => this.#workerClosed(backend.data.client),
        error: (backend) => this.#workerClosed(backend.data.client),
      },
    }).then(
      (backend) => this.#connected(client, backend),
      () => this.#close(client),
    );
  }

  #connected(client: Socket<Relay>, backend: Socket<BackendData>): void {
    if (client.data.closed) {
      backend.end();
      return;
    }
    client.data.backend = backend;
    flush(backend, client.data.toBackend);
  }

  #fromClient(client: Socket<Relay>, bytes: Uint8Array): void {
    const relay = client.data;
    clearTimeout(relay.idleTimer);
    if (!relay.inRequest) {
      if (this.#faults.resetKeptAlive === true && relay.served > 0 && !OWN_PATH.test(new TextDecoder().decode(bytes.subarray(0, 64)))) {
        this.#resets++;
        relay.closed = true;
        client.terminate();
        relay.backend?.end();
        return;
      }
      relay.inRequest = true;
      relay.answered = false;
      const afterMs = this.#faults.resetKeptAliveAfterMs;
      if (afterMs !== undefined && relay.served > 0 && !OWN_PATH.test(new TextDecoder().decode(bytes.subarray(0, 64)))) {
        setTimeout(() => this.#resetForwarded(client), afterMs);
      }
    }
    relay.toBackend.push(bytes.slice());
    if (relay.backend !== undefined) flush(relay.backend, relay.toBackend);
  }

  /** A forwarded request's client side reset before any answer byte (one came: left alone). */
  #resetForwarded(client: Socket<Relay>): void {
    const relay = client.data;
    if (relay.closed || relay.answered) return;
    this.#resets++;
    relay.closed = true;
    client.terminate();
    relay.backend?.end();
  }

  #fromWorker(client: Socket<Relay>, bytes: Uint8Array): void {
    const relay = client.data;
    if (relay.closed) return;
    relay.answered = true;
    relay.toClient.push(bytes.slice());
    flush(client, relay.toClient);
    const ended = relay.framing.feed(bytes);
    if (ended === 0) return;
    relay.served += ended;
    relay.inRequest = false;
    const timeoutMs = this.#faults.keepAliveTimeoutMs;
    if (timeoutMs !== undefined) relay.idleTimer = setTimeout(() => this.#closeIdle(client), timeoutMs);
  }

  #drained(client: Socket<Relay>): void {
    flush(client, client.data.toClient);
    if (client.data.endOnDrain && client.data.toClient.length === 0) this.#close(client);
  }

  #workerClosed(client: Socket<Relay>): void {
    if (client.data.toClient.length === 0) this.#close(client);
    else client.data.endOnDrain = true;
  }

  #closeIdle(client: Socket<Relay>): void {
    const relay = client.data;
    if (relay.closed || relay.inRequest) return;
    this.#idleClosed++;
    this.#close(client);
  }

  #close(client: Socket<Relay>): void {
    const relay = client.data;
    clearTimeout(relay.idleTimer);
    if (relay.closed) return;
    relay.closed = true;
    client.end();
    relay.backend?.end();
  }
}

/** Writes what is queued as far as the socket takes it; the rest waits for its drain. */
function flush<T>(socket: Socket<T>, queue: Uint8Array[]): void {
  while (queue.length > 0) {
    const next = queue[0]!;
    const written = socket.write(next);
    if (written >= next.length) {
      queue.shift();
      continue;
    }
    if (written > 0) queue[0] = next.subarray(written);
    return;
  }
}
