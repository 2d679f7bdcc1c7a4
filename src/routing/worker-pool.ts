import type { JsonObject } from "../json.ts";

export type Role = "context" | "generation";

/** One worker as one role sees it. A URL in both lists is two entries with the same origin. */
export interface WorkerEntry {
  readonly origin: string;
  readonly role: Role;
  ready: boolean;
  /** GET /server_info, fetched once the worker is ready (generation-first needs it). */
  serverInfo: JsonObject | undefined;
}

function entries(origins: readonly string[], role: Role): WorkerEntry[] {
  return origins.map((origin) => ({ origin, role, ready: false, serverInfo: undefined }));
}

/** The worker lists of both roles and their readiness. */
export class WorkerPool {
  readonly #byRole: Record<Role, WorkerEntry[]>;

  constructor(contextOrigins: readonly string[], generationOrigins: readonly string[]) {
    this.#byRole = { context: entries(contextOrigins, "context"), generation: entries(generationOrigins, "generation") };
  }

  all(role: Role): readonly WorkerEntry[] {
    return this.#byRole[role];
  }

  ready(role: Role): WorkerEntry[] {
    return this.#byRole[role].filter((worker) => worker.ready);
  }

  /**
   * Replaces a role's list (reload, discovery): workers still listed keep their state;
   * new ones start not ready and join after their first healthy check; removed ones take
   * no new requests (what they are serving runs to its end).
   */
  replace(role: Role, origins: readonly string[]): { added: string[]; removed: string[] } {
    const current = this.#byRole[role];
    const kept = new Map(current.map((worker) => [worker.origin, worker]));
    const next = origins.map((origin) => kept.get(origin) ?? { origin, role, ready: false, serverInfo: undefined });
    const added = origins.filter((origin) => !kept.has(origin));
    const removed = current.filter((worker) => !origins.includes(worker.origin)).map((worker) => worker.origin);
    this.#byRole[role] = next;
    return { added, removed };
  }

  /** Every distinct origin of either role (a URL in both lists once). */
  origins(): string[] {
    return [...new Set([...this.#byRole.context, ...this.#byRole.generation].map((worker) => worker.origin))];
  }

  /** The entries of an origin in both roles. */
  entriesOf(origin: string): WorkerEntry[] {
    return [...this.#byRole.context, ...this.#byRole.generation].filter((worker) => worker.origin === origin);
  }

  /** Ready when at least one worker of each role is. */
  isReady(): boolean {
    return this.ready("context").length > 0 && this.ready("generation").length > 0;
  }
}
