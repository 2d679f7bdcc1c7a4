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

  /** Ready when at least one worker of each role is. */
  isReady(): boolean {
    return this.ready("context").length > 0 && this.ready("generation").length > 0;
  }
}
