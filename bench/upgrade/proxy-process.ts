/** One proxy process of an upgrade run: its JSON log lines kept (and written to a file), waited on by content. */

import { appendFileSync } from "node:fs";

export type LogRecord = Readonly<Record<string, unknown>>;

export class ProxyProcess {
  readonly child: Bun.Subprocess<"ignore", "pipe", "pipe">;
  readonly records: LogRecord[] = [];
  /** Resolves once both of its output streams ended and every line was written to the log file. */
  readonly drained: Promise<void>;
  readonly #waiters = new Set<() => void>();
  #stderr = "";

  constructor(command: readonly string[], args: readonly string[], logFile: string, env?: Record<string, string | undefined>) {
    this.child = Bun.spawn([...command, ...args], {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      ...(env === undefined ? {} : { env }),
    });
    const stdout = this.#read(this.child.stdout, (line) => {
      appendFileSync(logFile, `${line}\n`);
      try {
        this.records.push(JSON.parse(line) as LogRecord);
      } catch {
        this.records.push({ msg: line });
      }
    });
    const stderr = this.#read(this.child.stderr, (line) => {
      appendFileSync(logFile, `stderr: ${line}\n`);
      this.#stderr += `${line}\n`;
    });
    this.drained = Promise.all([stdout, stderr]).then(() => undefined);
  }

  get pid(): number {
    return this.child.pid;
  }

  get stderr(): string {
    return this.#stderr;
  }

  /** The first record `match` accepts; rejects after `timeoutMs` or when the process exits first. */
  async waitFor(match: (record: LogRecord) => boolean, timeoutMs: number, what: string): Promise<LogRecord> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const found = this.records.find(match);
      if (found !== undefined) return found;
      if (this.child.exitCode !== null)
        throw new Error(`pid ${this.pid} exited (${this.child.exitCode}) before ${what}: ${this.#stderr.trim()}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`pid ${this.pid}: no ${what} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 100));
        const wake = (): void => {
          clearTimeout(timer);
          this.#waiters.delete(wake);
          resolve();
        };
        this.#waiters.add(wake);
      });
    }
  }

  async #read(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
    const decoder = new TextDecoder();
    let held = "";
    for await (const chunk of stream) {
      held += decoder.decode(chunk, { stream: true });
      const lines = held.split("\n");
      held = lines.pop() ?? "";
      for (const line of lines) onLine(line);
      for (const wake of this.#waiters) wake();
    }
    if (held !== "") onLine(held);
    for (const wake of this.#waiters) wake();
  }
}
