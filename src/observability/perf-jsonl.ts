/**
 * perf_metrics_output_dir (reference §5.3): one JSON line per completed request in
 * `perf_metrics-disagg-<hostname>-<pid>-<UTC yyyymmddThhmmssZ>.jsonl`. Best effort and never in
 * a request's way: records wait in a bounded queue (1024) and are appended in batches of 64; a
 * full queue, a record that cannot be written or a failed write drops records, which are counted.
 */

import { appendFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { JsonObject } from "../json/json.ts";
import { AppendQueue } from "./append-queue.ts";
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
  readonly #queue: AppendQueue<JsonObject>;
  readonly #ready: Promise<boolean>;
  #dropped = 0;

  constructor(options: PerfJsonlOptions) {
    this.#options = options;
    this.path = join(options.dir, `perf_metrics-disagg-${options.hostname}-${options.pid}-${utcStamp(options.startedAt)}.jsonl`);
    this.#ready = mkdir(options.dir, { recursive: true }).then(
      () => true,
      (error: unknown) => {
        options.logger.error("perf_metrics_output_dir cannot be created: per-request metrics are not written", { dir: options.dir, error });
        return false;
      },
    );
    this.#queue = new AppendQueue<JsonObject>({
      limit: QUEUE_SIZE,
      batchSize: BATCH_SIZE,
      lines: (batch) => this.#lines(batch),
      append: options.append ?? ((path, data) => appendFile(path, data, "utf8")),
      lost: (reason, count, error) =>
        this.#drop(count, reason === "queue_full" ? "perf metrics queue full" : "perf metrics write failed", error),
    });
  }

  /** Records lost: queue full, unserialisable, or not written. */
  get dropped(): number {
    return this.#dropped;
  }

  get written(): number {
    return this.#queue.written;
  }

  /** Queues one record; never blocks, never throws. */
  submit(record: JsonObject): void {
    this.#queue.push(record);
  }

  /** Resolves once every queued record was written (or dropped). */
  flush(): Promise<void> {
    return this.#queue.flush();
  }

  async #lines(batch: readonly JsonObject[]): Promise<Map<string, string[]>> {
    if (!(await this.#ready)) {
      this.#dropped += batch.length;
      return new Map();
    }
    return new Map([[this.path, batch.flatMap((record) => this.#line(record))]]);
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
  return date
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
}
