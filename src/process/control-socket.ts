/**
 * One proxy per port: the proxy serving a port holds a Unix socket named after it
 * (`disagg-proxy-<port>.sock`) in a runtime directory only its user may enter. A second copy
 * started on the port finds it and refuses to start, unless it was started to take over; then
 * the same socket carries the hand-over (process/take-over.ts).
 *
 * A socket rather than a lock or pid file: a connection answers only while its holder lives
 * (a crashed holder's socket refuses, so a stale one is told apart and replaced, where a pid
 * file can name a recycled pid), and the one channel also carries who runs, its registrations
 * and "stop listening now". A filesystem path rather than Linux's abstract namespace: the
 * directory's mode keeps other users from telling the proxy to stop listening.
 *
 * Messages are one JSON object per line, each way; a request gets one reply.
 */

import { chmodSync, lstatSync, rmSync, type Stats } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { isJsonObject } from "../json/json.ts";
import type { StorageCall } from "../routes/deps.ts";
import { fileDistrust } from "../security/private-paths.ts";

/** Registrations of a full cluster store fit (10,000 keys of a few hundred bytes); a larger reply ends the connection. */
const MAX_REPLY_BYTES = 64 * 1024 * 1024;

/** What the holder accepts from whatever can open its socket: requests are a line of a few bytes, and a take-over needs one connection at a time. */
export interface ControlLimits {
  /** Connections open at once; one more is closed at once. */
  readonly connections: number;
  /** A request line longer than this ends its connection. */
  readonly requestBytes: number;
  /** A connection with no request in this long is closed (a take-over connects anew for the release). */
  readonly idleMs: number;
}

/** The start of the one line a full holder writes before it closes a connection. */
const BUSY = "busy";

/** A forwarded /set (a 64 KiB value, escaped in a JSON string) fits a request line. */
export const CONTROL_LIMITS: ControlLimits = { connections: 8, requestBytes: 256 * 1024, idleMs: 10_000 };

/** A release names the process that is to serve the port: the holder lets go only if that process listens on it. */
export type ControlRequest =
  | { readonly op: "hello" }
  | { readonly op: "state" }
  | { readonly op: "release"; readonly pid?: number }
  /** A cluster storage call the process taking the port over received (routes/cluster-storage.ts, forwarded). */
  | { readonly op: "storage"; readonly call: StorageCall };
export type ControlHandler = (request: ControlRequest) => Promise<Record<string, unknown>>;

export function controlSocketPath(runtimeDir: string, port: number): string {
  return join(runtimeDir, `disagg-proxy-${port}.sock`);
}

/** Splits a byte stream into JSON lines, bounded. */
function lineReader(socket: net.Socket, maxBytes: number, onMessage: (message: unknown) => void): void {
  let held = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    held += chunk;
    if (held.length > maxBytes) {
      socket.destroy(new Error(`control message over ${maxBytes} bytes`));
      return;
    }
    let end = held.indexOf("\n");
    while (end >= 0) {
      const line = held.slice(0, end);
      held = held.slice(end + 1);
      try {
        onMessage(JSON.parse(line));
      } catch (error) {
        socket.destroy(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      end = held.indexOf("\n");
    }
  });
}

function isRequest(message: unknown): message is ControlRequest {
  if (!isJsonObject(message)) return false;
  const { op, pid, call } = message;
  if (op === "storage") return isStorageCall(call);
  return op === "hello" || op === "state" || (op === "release" && (pid === undefined || typeof pid === "number"));
}

function optionalText(value: unknown): boolean {
  return value === undefined || typeof value === "string";
}

function isStorageCall(call: unknown): call is StorageCall {
  if (!isJsonObject(call)) return false;
  const { method, target, body, from } = call;
  return typeof method === "string" && typeof target === "string" && target.startsWith("/") && optionalText(body) && optionalText(from);
}

export interface ControlServer {
  /** Requests that come before a handler is set are answered `{"error": "starting"}`. */
  serve(handler: ControlHandler): void;
  /** Stops accepting connections and removes the socket file; later calls do nothing. */
  close(): void;
}

/** Listens on the path; rejects with EADDRINUSE when another process holds it. */
export function holdControlSocket(path: string, limits: ControlLimits = CONTROL_LIMITS): Promise<ControlServer> {
  let handler: ControlHandler | undefined;
  let open = 0;
  const server = net.createServer((socket) => {
    socket.on("error", () => socket.destroy());
    if (open >= limits.connections) {
      // Said before closing, so that a take-over can tell its user why (take-over.ts).
      socket.end(`${JSON.stringify({ error: `${BUSY}: ${limits.connections} connections open, the most at once` })}\n`);
      return;
    }
    open += 1;
    socket.once("close", () => {
      open -= 1;
    });
    // Idle only while no request waits for its answer (a release is answered after a second).
    let answering = 0;
    socket.setTimeout(limits.idleMs, () => {
      if (answering === 0) socket.destroy();
    });
    lineReader(socket, limits.requestBytes, (message) => {
      const reply = !isRequest(message)
        ? Promise.resolve({ error: "unknown request" })
        : handler === undefined
          ? Promise.resolve({ error: "starting" })
          : handler(message);
      answering += 1;
      reply
        .then(
          (body) => socket.write(`${JSON.stringify(body)}\n`),
          (error: unknown) => socket.write(`${JSON.stringify({ error: error instanceof Error ? error.message : String(error) })}\n`),
        )
        .finally(() => {
          answering -= 1;
        });
    });
  });
  let closed = false;
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => {
      server.off("error", reject);
      // Only this user may connect, whatever the umask and the directory's mode (systemd makes it 0755).
      chmodSync(path, 0o600);
      resolve({
        serve(next) {
          handler = next;
        },
        close() {
          // Once only: after a hand-over the path is the new process's.
          if (closed) return;
          closed = true;
          // Stops accepting now; a connection still open (the one asking for the release) is
          // answered and ends with its peer, so this does not wait for it.
          server.close();
          rmSync(path, { force: true });
        },
      });
    });
  });
}

export interface ControlClient {
  /** The holder's reply; rejects when it does not answer within `timeoutMs` or the connection ends. */
  request(request: ControlRequest, timeoutMs: number): Promise<Record<string, unknown>>;
  close(): void;
}

/**
 * A connection to the holder, or undefined when nobody holds the path (no file, or a dead
 * holder's). A socket file another user made is never spoken to: it rejects, naming its owner.
 */
export function connectControlSocket(path: string): Promise<ControlClient | undefined> {
  const stat = lstatOrUndefined(path);
  const distrust = stat === undefined ? undefined : fileDistrust("control socket", path, stat, process.getuid?.());
  if (distrust !== undefined) {
    return Promise.reject(
      new Error(`${distrust}: it was not made by a disagg-proxy of this user; remove it, and check who can write its directory`),
    );
  }
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(path);
    const waiting: { resolve(body: Record<string, unknown>): void; reject(error: Error): void }[] = [];
    // A line before any request (a full holder's busy) answers the next one; once gone, requests fail at once.
    const early: Record<string, unknown>[] = [];
    let gone: Error | undefined;
    const failAll = (error: Error): void => {
      gone ??= error;
      for (const pending of waiting.splice(0)) pending.reject(error);
    };
    socket.once("connect", () => {
      socket.off("error", onConnectError);
      socket.on("error", (error) => failAll(error));
      socket.on("close", () => failAll(new Error("the control connection closed")));
      lineReader(socket, MAX_REPLY_BYTES, (message) => {
        const body = isJsonObject(message) ? message : { error: "not an object" };
        const waiter = waiting.shift();
        if (waiter === undefined) early.push(body);
        else waiter.resolve(body);
      });
      resolve({
        request(request, timeoutMs) {
          const answered = early.shift();
          if (answered !== undefined) return Promise.resolve(answered);
          if (gone !== undefined) return Promise.reject(gone);
          return new Promise((done, fail) => {
            const timer = setTimeout(() => fail(new Error(`no answer to ${request.op} within ${timeoutMs} ms`)), timeoutMs);
            waiting.push({
              resolve: (body) => {
                clearTimeout(timer);
                done(body);
              },
              reject: (error) => {
                clearTimeout(timer);
                fail(error);
              },
            });
            socket.write(`${JSON.stringify(request)}\n`);
          });
        },
        close: () => socket.end(),
      });
    });
    const onConnectError = (error: NodeJS.ErrnoException): void => {
      if (error.code === "ENOENT" || error.code === "ECONNREFUSED") resolve(undefined);
      else reject(error);
    };
    socket.once("error", onConnectError);
  });
}

/**
 * The port's control socket: held by this process, or the holder's connection. A stale file
 * (its holder died) is removed and the path held.
 */
export async function claimControlSocket(path: string): Promise<{ readonly held: ControlServer } | { readonly holder: ControlClient }> {
  for (let attempt = 0; ; attempt += 1) {
    const holder = await connectControlSocket(path);
    if (holder !== undefined) return { holder };
    rmSync(path, { force: true });
    try {
      return { held: await holdControlSocket(path) };
    } catch (error) {
      // Another process started at the same moment and won the path: look again, once.
      const code = typeof error === "object" && error !== null && "code" in error ? error.code : undefined;
      if (code !== "EADDRINUSE" || attempt > 0) throw error;
    }
  }
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}
