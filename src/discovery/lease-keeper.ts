/**
 * Holds an etcd lease and the keys attached to it: refreshes the lease every interval, and when
 * it is lost (expired while etcd was out of reach, or revoked) grants a new one and attaches the
 * keys again. stop() revokes the lease, which deletes its keys at once.
 */

import type { Logger } from "../observability/logger.ts";
import { delay } from "../timers.ts";
import { Backoff, messageOf } from "./backoff.ts";
import type { EtcdClient } from "./etcd-client.ts";
import type { ReconnectOptions } from "./types.ts";

export interface LeaseKeeperOptions {
  client: EtcdClient;
  /** Lease TTL; etcd counts whole seconds (and raises very short TTLs to its minimum). */
  ttlMs: number;
  /** Refresh period; 0, or not below the TTL, disables refreshing (upstream's rule), so the keys expire after one TTL. */
  intervalMs: number;
  logger: Logger;
  /** What the lease holds, for log lines. */
  fields: Readonly<Record<string, unknown>>;
  /** Puts the keys under a lease; throws when it could not. */
  attach(lease: string): Promise<void>;
  reconnect?: ReconnectOptions;
  /** A lease already granted and attached by the caller. */
  lease?: string;
}

const REVOKE_TIMEOUT_MS = 2000;

export function ttlSeconds(ttlMs: number): number {
  return Math.max(1, Math.ceil(ttlMs / 1000));
}

export class LeaseKeeper {
  readonly #options: LeaseKeeperOptions;
  readonly #controller = new AbortController();
  readonly #backoff: Backoff;
  readonly #task: Promise<void>;
  #lease: string | undefined;

  constructor(options: LeaseKeeperOptions) {
    this.#options = options;
    this.#lease = options.lease;
    this.#backoff = new Backoff({ maxMs: Math.max(100, options.intervalMs || options.ttlMs), ...options.reconnect });
    const refreshes = options.intervalMs > 0 && options.intervalMs < options.ttlMs;
    if (!refreshes) {
      options.logger.warn("Heartbeat interval is not positive or not below the TTL; heartbeat is disabled", {
        ...options.fields,
        heartbeat_ms: options.intervalMs,
        ttl_ms: options.ttlMs,
      });
    }
    this.#task = this.#run(refreshes, this.#controller.signal).catch((error: unknown) =>
      options.logger.error("etcd lease keeper stopped on an unexpected error", { ...options.fields, error: messageOf(error) }),
    );
  }

  /** Stops refreshing and revokes the lease (best effort: an unreachable etcd lets it expire). */
  async stop(): Promise<void> {
    this.#controller.abort();
    await this.#task;
    const lease = this.#lease;
    this.#lease = undefined;
    if (lease === undefined) return;
    try {
      await this.#options.client.revoke(lease, REVOKE_TIMEOUT_MS);
    } catch (error) {
      this.#options.logger.warn("Could not revoke the etcd lease; its keys expire with its TTL", {
        ...this.#options.fields,
        error: messageOf(error),
      });
    }
  }

  async #run(refreshes: boolean, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      if (this.#lease === undefined) {
        await this.#acquire(signal);
        if (!refreshes) return;
        continue;
      }
      await delay(this.#options.intervalMs, signal);
      if (!signal.aborted) await this.#refresh(this.#lease);
    }
  }

  /** Grants and attaches, retrying with backoff until it worked or stop() was called. */
  async #acquire(signal: AbortSignal): Promise<void> {
    const { client, logger, fields } = this.#options;
    while (!signal.aborted) {
      let lease: string | undefined;
      try {
        lease = (await client.grantLease(ttlSeconds(this.#options.ttlMs))).id;
        await this.#options.attach(lease);
        this.#lease = lease;
        this.#backoff.reset();
        logger.info("Registered in etcd", { ...fields, lease });
        return;
      } catch (error) {
        if (lease !== undefined) await client.revoke(lease, REVOKE_TIMEOUT_MS).catch(() => undefined);
        logger.warn("Registration in etcd failed; retrying", { ...fields, error: messageOf(error) });
        await delay(this.#backoff.next(), signal);
      }
    }
  }

  async #refresh(lease: string): Promise<void> {
    const { client, logger, fields } = this.#options;
    try {
      if ((await client.keepAlive(lease)) > 0) return;
      logger.warn("etcd lease lost; registering again", { ...fields, lease });
      this.#lease = undefined;
    } catch (error) {
      // Keep the lease: etcd may be back before it expires. The next refresh tells.
      logger.warn("etcd lease refresh failed", { ...fields, lease, error: messageOf(error) });
    }
  }
}
