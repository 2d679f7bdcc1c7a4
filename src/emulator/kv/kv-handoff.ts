/**
 * The context side of the generation-first KV hand-off. A generation worker long-polls
 * `GET /emulator/kv/<disagg_request_id>` on the context worker; the answer comes once that
 * id's context_only request finished (its first token and prompt tokens), or as a miss when it
 * never finished within the TTL (a failed context phase is never announced, as on a real
 * engine). Records are dropped once fetched or
 * after the TTL, so the table stays bounded whatever the proxy does.
 */

export interface KvHandoff {
  readonly firstGenTokens: readonly number[];
  readonly promptTokenIds: readonly number[];
}

type Outcome = KvHandoff | undefined;

interface Entry {
  state: "pending" | "ready";
  handoff: KvHandoff | undefined;
  readonly waiters: Set<(outcome: Outcome) => void>;
  timer: ReturnType<typeof setTimeout> | undefined;
}

export class KvHandoffTable {
  readonly #entries = new Map<string, Entry>();
  readonly #ttlMs: number;

  constructor(ttlMs: number) {
    this.#ttlMs = ttlMs;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** A context_only request for this id started. */
  expect(id: string): void {
    const entry = this.#entry(id);
    entry.state = "pending";
    this.#restartTimer(id, entry);
  }

  /** The context phase finished: hand the KV over to every waiter, or to the first later fetch. */
  complete(id: string, handoff: KvHandoff): void {
    const entry = this.#entry(id);
    if (entry.waiters.size > 0) {
      this.#drop(id, handoff);
      return;
    }
    entry.state = "ready";
    entry.handoff = handoff;
    this.#restartTimer(id, entry);
  }

  /** Long-poll for the hand-off; a fetched hand-off is dropped. Resolves undefined on a miss. */
  take(id: string, signal: AbortSignal): Promise<Outcome> {
    const entry = this.#entry(id);
    if (entry.state === "ready") {
      this.#drop(id, entry.handoff);
      return Promise.resolve(entry.handoff);
    }
    return new Promise((resolve) => {
      const onAbort = (): void => {
        entry.waiters.delete(settle);
        resolve(undefined);
      };
      const settle = (outcome: Outcome): void => {
        signal.removeEventListener("abort", onAbort);
        resolve(outcome);
      };
      entry.waiters.add(settle);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** The worker stops: every waiter gets a miss and every timer is cleared. */
  close(): void {
    for (const id of this.#entries.keys()) this.#drop(id, undefined);
  }

  /** A lookup that creates a pending entry: a generation request may arrive before its context. */
  #entry(id: string): Entry {
    const existing = this.#entries.get(id);
    if (existing !== undefined) return existing;
    const entry: Entry = { state: "pending", handoff: undefined, waiters: new Set(), timer: undefined };
    this.#entries.set(id, entry);
    this.#restartTimer(id, entry);
    return entry;
  }

  #restartTimer(id: string, entry: Entry): void {
    clearTimeout(entry.timer);
    entry.timer = setTimeout(() => this.#drop(id, undefined), this.#ttlMs);
  }

  #drop(id: string, outcome: Outcome): void {
    const entry = this.#entries.get(id);
    if (entry === undefined) return;
    clearTimeout(entry.timer);
    this.#entries.delete(id);
    this.#settleWaiters(entry, outcome);
  }

  #settleWaiters(entry: Entry, outcome: Outcome): void {
    for (const settle of entry.waiters) settle(outcome);
    entry.waiters.clear();
  }
}
