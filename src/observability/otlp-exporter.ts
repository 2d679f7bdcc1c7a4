/**
 * A small OTLP/HTTP exporter (JSON encoding, POST <endpoint>): spans wait in a bounded queue and
 * leave in batches, one export in flight at a time. Adding a span never blocks and never
 * throws; a full queue or a failed export drops spans, which are counted.
 */

import { dropWarned, type Logger } from "./logger.ts";

export const SPAN_KIND_SERVER = 2;
export const SPAN_KIND_CLIENT = 3;

export interface SpanRecord {
  readonly traceId: string;
  readonly spanId: string;
  /** Undefined for a root span. */
  readonly parentSpanId: string | undefined;
  readonly name: string;
  readonly kind: typeof SPAN_KIND_SERVER | typeof SPAN_KIND_CLIENT;
  /** Epoch milliseconds (fractions kept). */
  readonly startMs: number;
  readonly endMs: number;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
  /** Set when the operation failed (status ERROR with this message). */
  readonly error: string | undefined;
}

export interface OtlpExporterOptions {
  /** otlp_traces_endpoint; a URL without a path gets /v1/traces. */
  readonly endpoint: string;
  readonly serviceName: string;
  readonly serviceVersion: string;
  readonly logger: Logger;
  readonly fetch?: (url: string, init: RequestInit) => Promise<Response>;
  readonly maxQueue?: number;
  readonly batchSize?: number;
  readonly delayMs?: number;
  readonly timeoutMs?: number;
}

export class OtlpExporter {
  readonly url: string;
  readonly #options: OtlpExporterOptions;
  readonly #maxQueue: number;
  readonly #batchSize: number;
  #queue: SpanRecord[] = [];
  #timer: Timer | undefined;
  #inFlight: Promise<void> | undefined;
  #soon = false;
  #dropped = 0;
  #exported = 0;

  constructor(options: OtlpExporterOptions) {
    this.#options = options;
    this.#maxQueue = options.maxQueue ?? 2048;
    this.#batchSize = options.batchSize ?? 512;
    const url = new URL(options.endpoint);
    if (url.pathname === "/" || url.pathname === "") url.pathname = "/v1/traces";
    this.url = url.href;
  }

  get dropped(): number {
    return this.#dropped;
  }

  get exported(): number {
    return this.#exported;
  }

  add(span: SpanRecord): void {
    if (this.#queue.length >= this.#maxQueue) {
      this.#drop(1, "span queue full");
      return;
    }
    this.#queue.push(span);
    if (this.#queue.length >= this.#batchSize) this.#sendSoon();
    else this.#arm();
  }

  /** Exports everything queued; resolves when the last export ended. */
  async flush(): Promise<void> {
    while (this.#queue.length > 0 || this.#inFlight !== undefined) {
      this.#send();
      // oxlint-disable-next-line no-await-in-loop -- exports run one at a time
      await this.#inFlight;
    }
  }

  /** A full batch is serialised on the next turn of the event loop, not on the request's path. */
  #sendSoon(): void {
    if (this.#soon || this.#inFlight !== undefined) return;
    this.#soon = true;
    setImmediate(() => {
      this.#soon = false;
      this.#send();
    });
  }

  #arm(): void {
    if (this.#timer !== undefined || this.#inFlight !== undefined) return;
    this.#timer = setTimeout(() => this.#send(), this.#options.delayMs ?? 500);
    this.#timer.unref();
  }

  #send(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#inFlight !== undefined || this.#queue.length === 0) return;
    const batch = this.#queue.splice(0, this.#batchSize);
    this.#inFlight = this.#post(batch).finally(() => {
      this.#inFlight = undefined;
      if (this.#queue.length >= this.#batchSize) this.#send();
      else if (this.#queue.length > 0) this.#arm();
    });
  }

  async #post(batch: readonly SpanRecord[]): Promise<void> {
    const post = this.#options.fetch ?? ((url: string, init: RequestInit) => fetch(url, init));
    try {
      const response = await post(this.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(this.#payload(batch)),
        signal: AbortSignal.timeout(this.#options.timeoutMs ?? 10_000),
      });
      await response.body?.cancel();
      if (response.ok) this.#exported += batch.length;
      else this.#drop(batch.length, "span export refused", response.status);
    } catch (error) {
      this.#drop(batch.length, "span export failed", error);
    }
  }

  #payload(batch: readonly SpanRecord[]): object {
    const { serviceName, serviceVersion } = this.#options;
    return {
      resourceSpans: [
        {
          resource: { attributes: attributes({ "service.name": serviceName, "service.version": serviceVersion }) },
          scopeSpans: [{ scope: { name: serviceName, version: serviceVersion }, spans: batch.map(otlpSpan) }],
        },
      ],
    };
  }

  #drop(count: number, message: string, detail?: unknown): void {
    const before = this.#dropped;
    this.#dropped += count;
    if (dropWarned(before, this.#dropped)) {
      this.#options.logger.warn(message, { dropped_spans: this.#dropped, detail });
    }
  }
}

function otlpSpan(span: SpanRecord): object {
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    ...(span.parentSpanId === undefined ? {} : { parentSpanId: span.parentSpanId }),
    name: span.name,
    kind: span.kind,
    startTimeUnixNano: unixNanos(span.startMs),
    endTimeUnixNano: unixNanos(span.endMs),
    attributes: attributes(span.attributes),
    status: span.error === undefined ? { code: 1 } : { code: 2, message: span.error },
  };
}

function attributes(values: Readonly<Record<string, string | number | boolean>>): object[] {
  return Object.entries(values).map(([key, value]) => ({ key, value: anyValue(value) }));
}

function anyValue(value: string | number | boolean): object {
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
}

/** Epoch ms → decimal nanoseconds, without losing the sub-millisecond part to float rounding. */
function unixNanos(ms: number): string {
  const whole = Math.floor(ms);
  return (BigInt(whole) * 1_000_000n + BigInt(Math.round((ms - whole) * 1e6))).toString();
}
