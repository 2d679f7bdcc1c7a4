/**
 * Keeps a local copy of one etcd prefix: reads it, then watches from the next revision. A
 * broken watch resumes from the last revision seen + 1, so no change is missed; when that
 * revision was compacted away (or etcd came back with an older history) the prefix is read
 * again and replaces the copy. While etcd is unreachable the copy is kept as it was.
 */

import type { Logger } from "../observability/logger.ts";
import { delay } from "../timers.ts";
import { Backoff, messageOf } from "./backoff.ts";
import type { EtcdClient, KeyValue, WatchMessage } from "./etcd-client.ts";
import type { DiscoveryStatus, ReconnectOptions } from "./types.ts";

export interface MirrorHandlers {
  /** The whole prefix as just read (first, and after a compaction): replaces the copy. */
  reset(kvs: readonly KeyValue[]): void;
  put(key: string, value: string): void;
  delete(key: string): void;
}

export interface MirrorOptions {
  client: EtcdClient;
  prefix: string;
  logger: Logger;
  reconnect?: ReconnectOptions;
  /** How often a quiet watch checks that etcd still answers (default 5000 ms). */
  livenessIntervalMs?: number;
}

const DEFAULT_LIVENESS_MS = 5000;

export class PrefixMirror {
  readonly #options: MirrorOptions;
  readonly #backoff: Backoff;
  #connected = false;
  #revision: bigint | undefined;
  #lastError: string | undefined;
  #mustRead = true;

  constructor(options: MirrorOptions) {
    this.#options = options;
    this.#backoff = new Backoff(options.reconnect);
  }

  status(): DiscoveryStatus {
    return { connected: this.#connected, revision: this.#revision?.toString(), lastError: this.#lastError };
  }

  /** Runs until `signal` aborts; `onFirstRead` is called once the first listing was handed over. */
  async run(handlers: MirrorHandlers, signal: AbortSignal, onFirstRead: () => void): Promise<void> {
    while (!signal.aborted) {
      try {
        if (this.#mustRead) {
          await this.#read(handlers);
          onFirstRead();
        }
        await this.#watch(handlers, signal);
      } catch (error) {
        if (signal.aborted) return;
        this.#failed(error);
        await delay(this.#backoff.next(), signal);
      }
    }
  }

  async #read(handlers: MirrorHandlers): Promise<void> {
    const { revision, kvs } = await this.#options.client.range(this.#options.prefix);
    this.#succeeded();
    this.#revision = revision;
    this.#mustRead = false;
    handlers.reset(kvs);
    this.#options.logger.debug("etcd prefix read", { prefix: this.#options.prefix, revision, keys: kvs.length });
  }

  /** One watch stream, until it breaks (throws) or has to be replaced by a fresh read (returns). */
  async #watch(handlers: MirrorHandlers, signal: AbortSignal): Promise<void> {
    const { client, prefix } = this.#options;
    const session = new AbortController();
    const watchSignal = AbortSignal.any([signal, session.signal]);
    const probe = setInterval(() => {
      client.ping(this.#livenessMs()).catch((error: unknown) => session.abort(error));
    }, this.#livenessMs());
    try {
      for await (const message of client.watch(prefix, (this.#revision ?? 0n) + 1n, watchSignal)) {
        if (!this.#apply(message, handlers)) return;
      }
      throw new Error("etcd closed the watch stream");
    } catch (error) {
      // An aborted fetch throws the abort's reason: report why the session was cut.
      throw session.signal.aborted && !signal.aborted ? session.signal.reason : error;
    } finally {
      clearInterval(probe);
      session.abort();
    }
  }

  /** False when the watch must end and the prefix be read again. */
  #apply(message: WatchMessage, handlers: MirrorHandlers): boolean {
    const { logger, prefix } = this.#options;
    if (message.kind === "canceled") throw new Error(`etcd canceled the watch: ${message.reason}`);
    switch (message.kind) {
      case "created":
        this.#succeeded();
        if (message.revision < (this.#revision ?? 0n)) {
          logger.warn("etcd's revision went back (restored or replaced); reading the prefix again", { prefix, revision: message.revision });
          this.#mustRead = true;
          return false;
        }
        return true;
      case "compacted":
        logger.info("etcd compacted the watched revisions; reading the prefix again", {
          prefix,
          compact_revision: message.compactRevision,
        });
        this.#mustRead = true;
        return false;
      case "progress":
        if (message.revision > (this.#revision ?? 0n)) this.#revision = message.revision;
        return true;
      default:
        for (const change of message.changes) {
          if (change.modRevision > (this.#revision ?? 0n)) this.#revision = change.modRevision;
          if (change.type === "put") handlers.put(change.key, change.value);
          else handlers.delete(change.key);
        }
        return true;
    }
  }

  #livenessMs(): number {
    return this.#options.livenessIntervalMs ?? DEFAULT_LIVENESS_MS;
  }

  #succeeded(): void {
    if (!this.#connected) this.#options.logger.info("etcd connected", { prefix: this.#options.prefix });
    this.#connected = true;
    this.#lastError = undefined;
    this.#backoff.reset();
  }

  #failed(error: unknown): void {
    const message = messageOf(error);
    if (this.#connected || this.#lastError !== message) {
      this.#options.logger.warn("etcd unreachable; keeping the last known workers", { prefix: this.#options.prefix, error: message });
    }
    this.#connected = false;
    this.#lastError = message;
  }
}
