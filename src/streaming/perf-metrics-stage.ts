/**
 * The relay stage of a stream whose perf metrics were asked for (reference §5.3): the
 * generation worker's own trailing `trtllm.perf_metrics` event is withheld (its data kept for
 * the merge), and the proxy's merged event follows the last byte when the client asked for it.
 * This is the one place the relay waits for frame boundaries, and only for such requests.
 */

import { ProxyError } from "../errors.ts";
import { PERF_EVENT_NAME } from "../observability/perf-format.ts";
import type { RequestPerf } from "../observability/request-perf.ts";
import { concatBytes } from "../bytes.ts";
import { SseFrameScanner, type SseFrame } from "../sse/frame-scanner.ts";
import type { DialectStream } from "./dialect.ts";

const EVENT_FIELD = new TextEncoder().encode("event:");
const CR = 0x0d;
const LF = 0x0a;

export function withPerfMetricsEvent(inner: DialectStream, perf: RequestPerf, maxEventBytes?: number): DialectStream {
  const scanner = new SseFrameScanner(maxEventBytes === undefined ? {} : { maxFrameBytes: maxEventBytes });
  return {
    opening: () => inner.opening(),
    // The request context marks the first and the last token (client-relay.ts); this stage
    // only withholds the worker's event and appends the merged one.
    push(chunk) {
      const kept: Uint8Array[] = [];
      for (const frame of scanner.push(chunk)) {
        if (isPerfEvent(frame)) perf.workerEvent("gen", frame.data ?? "");
        else kept.push(frame.raw);
      }
      const joined = concatBytes(kept);
      return joined === undefined ? undefined : inner.push(joined);
    },
    keepalive: () => inner.keepalive(),
    end() {
      const tail = inner.end();
      if (tail instanceof ProxyError) return tail;
      const event = perf.exposed ? perf.clientEvent() : undefined;
      return event === undefined ? tail : concatBytes(tail === undefined ? [event] : [tail, event]);
    },
    fail: (error) => inner.fail(error),
    refusal: (error) => inner.refusal?.(error),
    get workerError() {
      return inner.workerError;
    },
    get delivered() {
      return inner.delivered;
    },
  };
}

/** Only frames opening with an `event:` line are decoded; token frames are judged by one byte compare. */
function isPerfEvent(frame: SseFrame): boolean {
  const raw = frame.raw;
  let at = 0;
  while (at < raw.length && (raw[at] === CR || raw[at] === LF)) at++;
  for (let i = 0; i < EVENT_FIELD.length; i++) if (raw[at + i] !== EVENT_FIELD[i]) return false;
  return frame.event === PERF_EVENT_NAME;
}
