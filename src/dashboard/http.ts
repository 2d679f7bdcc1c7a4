import { dashboardPage } from "./page.ts";
import type { DashboardRecorder } from "./recorder.ts";
import { StreamSlots, type StreamLimits, type Watcher } from "./stream-slots.ts";

const NO_STORE = { "cache-control": "no-store", "x-content-type-options": "nosniff" } as const;

export interface DashboardHttp {
  /** GET /dashboard */
  page(): Response;
  /** GET /dashboard/data[?after=<ms>]: one snapshot (chart points after `after` only). */
  data(request: Request): Response;
  /**
   * GET /dashboard/events: a snapshot now, then one after every tick (SSE, event "snapshot"),
   * within the watchers' caps (stream-slots.ts; beyond them a 429).
   */
  events(request: Request, keepOpen: () => void, watcher?: EventWatcher): Response;
}

/** Who watches: its address and key, and whether its key still opens the dashboard. */
export interface EventWatcher extends Watcher {
  /** Asked before each snapshot: a key removed on SIGHUP ends the streams it opened at the next tick (within a second). */
  readonly stillAllowed: () => boolean;
}

const ANONYMOUS: EventWatcher = { address: "unknown", operator: false, stillAllowed: () => true };

/** The dashboard's three answers over one recorder. */
export function dashboardHttp(recorder: DashboardRecorder, limits?: StreamLimits): DashboardHttp {
  const page = dashboardPage();
  const slots = new StreamSlots(limits);
  return {
    page() {
      return new Response(page.html, {
        headers: {
          ...NO_STORE,
          "content-type": "text/html; charset=utf-8",
          "content-security-policy": page.contentSecurityPolicy,
          "referrer-policy": "no-referrer",
          "x-frame-options": "DENY",
        },
      });
    },
    data(request) {
      const after = Number(new URL(request.url, "http://host").searchParams.get("after") ?? Number.NaN);
      const body = JSON.stringify(recorder.snapshot(Number.isFinite(after) ? after : undefined));
      return new Response(body, { headers: { ...NO_STORE, "content-type": "application/json" } });
    },
    events(request, keepOpen, watcher = ANONYMOUS) {
      let endStream: (() => void) | undefined;
      const slot = slots.take(watcher, () => endStream?.());
      if (typeof slot === "string") return new Response(`${slot}\n`, { status: 429, headers: { ...NO_STORE, "retry-after": "5" } });
      keepOpen();
      const encoder = new TextEncoder();
      let lastAt: number | undefined;
      let close: (() => void) | undefined;
      const body = new ReadableStream<Uint8Array>(
        {
          start(controller) {
            const send = (): void => {
              if (!watcher.stillAllowed()) {
                onAbort();
                return;
              }
              // A browser that stopped reading is skipped; it gets the points it missed next time.
              if ((controller.desiredSize ?? 0) <= 0) return;
              const snapshot = recorder.snapshot(lastAt);
              lastAt = snapshot.series.at.at(-1) ?? lastAt;
              controller.enqueue(encoder.encode(`event: snapshot\ndata: ${JSON.stringify(snapshot)}\n\n`));
            };
            const off = recorder.onTick(send);
            close = () => {
              off();
              request.signal.removeEventListener("abort", onAbort);
              slot.release();
              close = undefined;
            };
            const onAbort = (): void => {
              close?.();
              try {
                controller.close();
              } catch {
                // Already closed by the client going away.
              }
            };
            endStream = onAbort;
            request.signal.addEventListener("abort", onAbort, { once: true });
            controller.enqueue(encoder.encode("retry: 2000\n\n"));
            send();
          },
          cancel() {
            close?.();
          },
        },
        { highWaterMark: 4 },
      );
      return new Response(body, { headers: { ...NO_STORE, "content-type": "text/event-stream", "x-accel-buffering": "no" } });
    },
  };
}

/** A refused dashboard request: a 401 asks the browser for the API key as a Basic password. */
export function dashboardErrorResponse(status: number, message: string): Response {
  const headers: Record<string, string> = { ...NO_STORE, "content-type": "text/plain; charset=utf-8" };
  if (status === 401) headers["www-authenticate"] = 'Basic realm="disagg-proxy dashboard", charset="UTF-8"';
  return new Response(`${message}\n`, { status, headers });
}
