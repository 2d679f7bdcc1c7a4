/**
 * The workers discovery knows, keyed by etcd key, turned into add/remove events per
 * (role, origin). Two keys may name one worker (a worker re-registered under a new id while
 * its old key has not expired yet): it is added with the first key and removed with the last.
 */

import type { DiscoveryEvent, RegisteredWorker, Role } from "./types.ts";

export interface WorkerEntry {
  readonly role: Role;
  readonly origin: string;
  /** The registration as the worker wrote it (disagg_cluster layouts only). */
  readonly registered?: RegisteredWorker;
  /** The release the registration announced (metadata `version`), if any. */
  readonly version?: string | undefined;
}

export class WorkerSet {
  readonly #byKey = new Map<string, WorkerEntry>();
  readonly #keysPerWorker = new Map<string, number>();
  readonly #emit: (event: DiscoveryEvent) => void;

  constructor(emit: (event: DiscoveryEvent) => void) {
    this.#emit = emit;
  }

  /** A key was put (entry) or deleted or no longer names a worker (undefined). */
  set(key: string, entry: WorkerEntry | undefined): void {
    const old = this.#byKey.get(key);
    if (old !== undefined && entry !== undefined && sameWorker(old, entry)) return;
    if (old !== undefined) {
      this.#byKey.delete(key);
      this.#release(old);
    }
    if (entry !== undefined) {
      this.#byKey.set(key, entry);
      this.#hold(entry);
    }
  }

  /** The whole listing as read again: removes for what is gone first, then adds, in key order. */
  replaceAll(entries: ReadonlyMap<string, WorkerEntry>): void {
    // Deleting the entry being visited is safe while iterating a Map.
    for (const key of this.#byKey.keys()) {
      const entry = entries.get(key);
      if (entry === undefined || !sameWorker(entry, this.#byKey.get(key) ?? entry)) this.set(key, undefined);
    }
    for (const [key, entry] of entries) this.set(key, entry);
  }

  /** Every registration, one per key (as upstream's /cluster_info lists current_workers). */
  registered(): RegisteredWorker[] {
    return [...this.#byKey.values()].flatMap((entry) => entry.registered ?? []);
  }

  /** The known workers, each once. */
  workers(): WorkerEntry[] {
    const unique = new Map<string, WorkerEntry>();
    for (const entry of this.#byKey.values()) unique.set(idOf(entry), entry);
    return [...unique.values()];
  }

  #hold(entry: WorkerEntry): void {
    const id = idOf(entry);
    const count = this.#keysPerWorker.get(id) ?? 0;
    this.#keysPerWorker.set(id, count + 1);
    if (count === 0) this.#emit({ kind: "add", role: entry.role, origin: entry.origin, version: entry.version });
  }

  #release(entry: WorkerEntry): void {
    const id = idOf(entry);
    const count = this.#keysPerWorker.get(id) ?? 0;
    if (count <= 1) {
      this.#keysPerWorker.delete(id);
      this.#emit({ kind: "remove", role: entry.role, origin: entry.origin });
    } else {
      this.#keysPerWorker.set(id, count - 1);
    }
  }
}

function idOf(entry: WorkerEntry): string {
  return `${entry.role} ${entry.origin}`;
}

function sameWorker(a: WorkerEntry, b: WorkerEntry): boolean {
  return a.role === b.role && a.origin === b.origin;
}
