import { writeSync } from "node:fs";
import type { LogLevel } from "../config/types.ts";

/** Structured JSON lines on stdout (journald-friendly); one object per line. */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /**
   * A lifecycle line (listening, took over, drained): written whatever the level, as an operator
   * running at warn or error still needs to know the process listens and when it exits.
   */
  notice(message: string, fields?: LogFields): void;
}
export type LogFields = Readonly<Record<string, unknown>>;

const RANK: Record<LogLevel | "notice", number> = { debug: 10, info: 20, warn: 30, error: 40, notice: Number.POSITIVE_INFINITY };

export type Sink = (line: string) => void;

/** Causes followed this deep at most (a cycle or a long chain stays one bounded line). */
const MAX_CAUSE_DEPTH = 4;

/**
 * An error as a log field: its name, message and causes; its stack only on an error-level line
 * (an internal failure, for whoever fixes the code). A warning (a collector down, a worker gone)
 * is the operator's to read, and a stack there says nothing to them.
 */
function describe(value: unknown, withStack: boolean, depth = 0): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Error) {
    // The stack and the cause are for the operator's log, never for a client's reply.
    const cause = value.cause === undefined || depth >= MAX_CAUSE_DEPTH ? undefined : describe(value.cause, withStack, depth + 1);
    return withStack
      ? { name: value.name, message: value.message, stack: value.stack, cause }
      : { name: value.name, message: value.message, cause };
  }
  return value;
}

/** Lines held for one write at most; a burst larger than this is written at once. */
const BATCH_BYTES = 64 * 1024;

/** Lines held for one event-loop turn, then handed to one write. */
export interface TurnBatch {
  readonly sink: Sink;
  /** Hands what is held to `to` now (the batch's own write unless told): before a drain is reported, or on exit. */
  flush(to?: (text: string) => void): void;
}

/**
 * Lines held and handed to `write` once per event-loop turn: under load the request lines of
 * every request that ended in one turn share one write (a write per line was ~6 µs of CPU per
 * request). A burst of BATCH_BYTES is written at once, so what is held stays bounded.
 */
export function turnBatched(write: (text: string) => void): TurnBatch {
  let held = "";
  let scheduled = false;
  const flush = (to: (text: string) => void = write): void => {
    scheduled = false;
    if (held === "") return;
    const text = held;
    held = "";
    to(text);
  };
  return {
    sink(line) {
      held += line;
      if (held.length >= BATCH_BYTES) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(() => flush());
      }
    },
    flush,
  };
}

/** Stdout, batched per turn; lines still held when the process exits are written synchronously on the way out. */
export function batchedStdout(): Sink {
  const batch = turnBatched((text) => process.stdout.write(text));
  process.once("exit", () => batch.flush((text) => writeSync(1, text)));
  return batch.sink;
}

/**
 * Whether a count of lost records (spans, trace lines, metrics lines) that went from `before` to
 * `after` is warned: at the first loss and at every 1000th, as trtllm-serve does, so a steady
 * loss is not a line per record.
 */
export function dropWarned(before: number, after: number): boolean {
  return before === 0 || Math.floor(before / 1000) !== Math.floor(after / 1000);
}

/**
 * Whether every field is written as it is: no id or error to describe, no key the line sets
 * itself (ts, level, msg: such a field goes the slow way, where it replaces the line's own).
 */
function plain(fields: LogFields): boolean {
  for (const key in fields) {
    const value = fields[key];
    if (typeof value === "bigint" || (typeof value === "object" && value !== null)) return false;
    if (key === "ts" || key === "level" || key === "msg") return false;
  }
  return true;
}

export function createLogger(level: LogLevel, sink: Sink = batchedStdout()): Logger {
  const threshold = RANK[level];
  // Lines written within one millisecond share its timestamp text (many requests end together).
  let stampedMs = Number.NaN;
  let stamp = "";
  const now = (): string => {
    const ms = Date.now();
    if (ms !== stampedMs) {
      stampedMs = ms;
      stamp = new Date(ms).toISOString();
    }
    return stamp;
  };
  const write = (lvl: LogLevel | "notice", msg: string, fields?: LogFields): void => {
    if (RANK[lvl] < threshold) return;
    // Fields of plain values (a request's line) are written as they are, not copied into a record first.
    if (fields !== undefined && plain(fields)) {
      const tail = JSON.stringify(fields);
      const head = `{"ts":"${now()}","level":"${lvl}","msg":${JSON.stringify(msg)}`;
      sink(tail.length === 2 ? `${head}}\n` : `${head},${tail.slice(1)}\n`);
      return;
    }
    const record: Record<string, unknown> = { ts: now(), level: lvl, msg };
    // Only ids and errors need describing.
    if (fields)
      for (const key of Object.keys(fields)) {
        const value = fields[key];
        record[key] = typeof value === "bigint" || (typeof value === "object" && value !== null) ? describe(value, lvl === "error") : value;
      }
    sink(`${JSON.stringify(record)}\n`);
  };

  return {
    debug: (msg, fields) => write("debug", msg, fields),
    info: (msg, fields) => write("info", msg, fields),
    warn: (msg, fields) => write("warn", msg, fields),
    error: (msg, fields) => write("error", msg, fields),
    notice: (msg, fields) => write("notice", msg, fields),
  };
}

/** A logger that drops everything, for tests that assert on behaviour, not logs. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {}, notice() {} };

/** A logger that keeps records in memory, for tests that assert on log lines. */
export function memoryLogger(): Logger & { readonly records: Record<string, unknown>[] } {
  const records: Record<string, unknown>[] = [];
  const logger = createLogger("debug", (line) => {
    const record: Record<string, unknown> = JSON.parse(line);
    records.push(record);
  });
  return { ...logger, records };
}
