/**
 * perf_metrics_output_dir (reference §5.3): one JSON line per completed request in
 * `perf_metrics-disagg-<hostname>-<pid>-<UTC yyyymmddThhmmssZ>.jsonl`. Best effort and never in
 * a request's way: records wait in a bounded queue (1024) and are appended in batches of 64; a
 * full queue, a record that cannot be written or a failed write drops records, which are counted.
 */

import { appendFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { JsonObject } from "../json.ts";
import { dropWarned, type Logger } from "./logger.ts";

const QUEUE_SIZE = 1024;
const BATCH_SIZE = 64;

export interface PerfJsonlOptions {
  readonly dir: string;
  readonly hostname: string;
  readonly pid: number;
  readonly startedAt: Date;
  readonly logger: Logger;
  /** For tests: where the lines go (default: appended to the file). */
  readonly append?: (path: string, data: string) => Promise<void>;
}

export class PerfJsonlWriter {
  readonly path: string;
  readonly #options: PerfJsonlOptions;
  readonly #append: (path: string, data: string) => Promise<void>;
  readonly #queue: JsonObject[] = [];
  readonly #ready: Promise<boolean>;
  #draining: Promise<void> | undefined;
  #dropped = 0;
  #written = 0;

  constructor(options: PerfJsonlOptions) {
    this.#options = options;
    this.#append = options.append ?? ((path, data) => appendFile(path, data, "utf8"));
    this.path = join(options.dir, `perf_metrics-disagg-${options.hostname}-${options.pid}-${utcStamp(options.startedAt)}.jsonl`);
    this.#ready = mkdir(options.dir, { recursive: true }).then(
      () => true,
      (error: unknown) => {
        options.logger.error("perf_metrics_output_dir cannot be created: per-request metrics are not written", { dir: options.dir, error });
        return false;
      },
    );
  }

  /** Records lost: queue full, unserialisable, or not written. */
  get dropped(): number {
    return this.#dropped;
  }

  get written(): number {
    return this.#written;
  }

  /** Queues one record; never blocks, never throws. */
  submit(record: JsonObject): void {
    if (this.#queue.length >= QUEUE_SIZE) {
      this.#drop(1, "perf metrics queue full");
      return;
    }
    this.#queue.push(record);
    this.#draining ??= this.#drain().finally(() => {
      this.#draining = undefined;
    });
  }

  /** Resolves once every queued record was written (or dropped). */
  async flush(): Promise<void> {
    while (this.#draining !== undefined) await this.#draining;
  }

  async #drain(): Promise<void> {
    const usable = await this.#ready;
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, BATCH_SIZE);
      if (!usable) {
        this.#dropped += batch.length;
        continue;
      }
      const lines = batch.flatMap((record) => this.#line(record));
      if (lines.length === 0) continue;
      try {
        // oxlint-disable-next-line no-await-in-loop -- batches are appended in order, one at a time
        await this.#append(this.path, lines.join(""));
        this.#written += lines.length;
      } catch (error) {
        this.#drop(lines.length, "perf metrics write failed", error);
      }
    }
  }

  #line(record: JsonObject): string[] {
    try {
      return [`${JSON.stringify(record)}\n`];
    } catch (error) {
      this.#drop(1, "perf metrics record cannot be serialised", error);
      return [];
    }
  }

  #drop(count: number, message: string, error?: unknown): void {
    const before = this.#dropped;
    this.#dropped += count;
    if (dropWarned(before, this.#dropped)) {
      this.#options.logger.warn(message, { dropped_records: this.#dropped, error });
    }
  }
}

function utcStamp(date: Date): string {
  return date.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
}
