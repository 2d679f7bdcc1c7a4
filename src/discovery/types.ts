/** Public types of worker discovery. Everything else in src/discovery is private to it. */

import type { Role } from "../config/types.ts";

export type { Role };

/** A worker's registration as upstream's /cluster_info lists it (WorkerInfo, disagg_auto_scaling.py @ 00184339). */
export interface RegisteredWorker {
  readonly worker_id: string;
  readonly host: string;
  readonly port: number;
  /** 0 context, 1 generation (upstream's ServerRole). */
  readonly role: number;
}

/** `origin` is canonical (`http://host:port`, as src/config/urls.ts spells it), so it compares equal to a static list's entry. */
export type DiscoveryEvent =
  /** `version`: the TensorRT-LLM release its registration announced, when it names one. */
  { kind: "add"; role: Role; origin: string; version?: string | undefined } | { kind: "remove"; role: Role; origin: string };

export interface DiscoveryStatus {
  /** Whether the last call to etcd (read, watch or poll) succeeded. */
  connected: boolean;
  /** The etcd revision the worker list reflects. */
  revision: string | undefined;
  /** The last failure's message; cleared once etcd answers again. */
  lastError: string | undefined;
}

export interface Discovery {
  /**
   * Starts reading then watching; events for the existing keys first. Resolves once the first
   * listing has been delivered (retrying with backoff while etcd is unreachable), or on stop().
   */
  start(onEvent: (event: DiscoveryEvent) => void): Promise<void>;
  status(): DiscoveryStatus;
  /** Ends the watch or poll; no event is delivered after it resolves. */
  stop(): Promise<void>;
}

/** How often to retry a failed call to etcd: from initialMs, doubling, up to maxMs. */
export interface ReconnectOptions {
  initialMs?: number;
  maxMs?: number;
}
