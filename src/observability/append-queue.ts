/**
 * Lines appended to files off the requests' path, for the JSONL writers (request-trace.ts,
 * perf-jsonl.ts): items wait in a queue bounded in number (and in bytes, when told), and one
 * drain at a time takes them in batches, builds each batch's lines by file and appends each
 * file's lines in one write, batches in order. An item that cannot be queued, or lines that
 * cannot be written, are reported lost, never thrown.
 */

export type LostReason = "queue_full" | "write_error";

export interface AppendQueueOptions<Item> {
  readonly limit: number;
  /** What the queued items may hold in all; past it an item is lost (default: no bound). */
  readonly maxBytes?: number;
  readonly bytesOf?: (item: Item) => number;
  readonly batchSize: number;
  /**
   * A drain starts on a later turn of the event loop, so the lines are built after the
   * request's own work, and the lines of requests ending together go out in one append.
   */
  readonly startLater?: boolean;
  /** A batch's lines by file (an item it cannot make a line of, it reports itself). */
  readonly lines: (batch: readonly Item[]) => Map<string, string[]> | Promise<Map<string, string[]>>;
  readonly append: (path: string, data: string) => Promise<void>;
  readonly lost: (reason: LostReason, count: number, error?: unknown) => void;
}

export class AppendQueue<Item> {
  readonly #options: AppendQueueOptions<Item>;
  readonly #items: Item[] = [];
  #bytes = 0;
  #written = 0;
  #draining: Promise<void> | undefined;

  constructor(options: AppendQueueOptions<Item>) {
    this.#options = options;
  }

  /** Lines appended so far. */
  get written(): number {
    return this.#written;
  }

  /** Queues one item, or reports it lost (queue_full); never blocks, never throws. */
  push(item: Item): void {
    const { limit, maxBytes = Number.POSITIVE_INFINITY, bytesOf } = this.#options;
    const bytes = bytesOf?.(item) ?? 0;
    if (this.#items.length >= limit || this.#bytes + bytes > maxBytes) {
      this.#options.lost("queue_full", 1);
      return;
    }
    this.#items.push(item);
    this.#bytes += bytes;
    this.#draining ??= this.#start().finally(() => {
      this.#draining = undefined;
    });
  }

  /** Resolves once every queued item was written or lost. */
  async flush(): Promise<void> {
    while (this.#draining !== undefined) await this.#draining;
  }

  /** Empties the queue; how many items were still waiting (for the caller to count as it counts them). */
  clear(): number {
    this.#bytes = 0;
    return this.#items.splice(0).length;
  }

  #start(): Promise<void> {
    if (this.#options.startLater !== true) return this.#drain();
    return new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.#drain());
  }

  async #drain(): Promise<void> {
    const { batchSize, bytesOf } = this.#options;
    while (this.#items.length > 0) {
      const batch = this.#items.splice(0, batchSize);
      if (bytesOf !== undefined) for (const item of batch) this.#bytes -= bytesOf(item);
      // oxlint-disable-next-line no-await-in-loop -- batches go out in order, one at a time
      const groups = await this.#options.lines(batch);
      for (const [path, lines] of groups) {
        if (lines.length === 0) continue;
        try {
          // oxlint-disable-next-line no-await-in-loop -- one append per file, in order
          await this.#options.append(path, lines.join(""));
          this.#written += lines.length;
        } catch (error) {
          this.#options.lost("write_error", lines.length, error);
        }
      }
    }
  }
}
