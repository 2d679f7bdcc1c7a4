import { dashboardPage } from "./page.ts";
import type { DashboardRecorder } from "./recorder.ts";

/** Browsers watching at once; each costs one snapshot a second. More get a 429. */
export const MAX_EVENT_STREAMS = 32;

const NO_STORE = { "cache-control": "no-store", "x-content-type-options": "nosniff" } as const;

export interface DashboardHttp {
  /** GET /dashboard */
  page(): Response;
  /** GET /dashboard/data[?after=<ms>]: one snapshot (chart points after `after` only). */
  data(request: Request): Response;
  /**
   * GET /dashboard/events: a snapshot now, then one after every tick (SSE, event "snapshot").
   * `stillAllowed` is asked before each: a key removed on SIGHUP ends the streams it opened
   * at the next tick (within a second), as it refuses new requests at once.
   */
  events(request: Request, keepOpen: () => void, stillAllowed?: () => boolean): Response;
}

/** The dashboard's three answers over one recorder. */
export function dashboardHttp(recorder: DashboardRecorder): DashboardHttp {
  const page = dashboardPage();
  let streams = 0;
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
      const after = Number(new URL(request.url).searchParams.get("after") ?? Number.NaN);
      const body = JSON.stringify(recorder.snapshot(Number.isFinite(after) ? after : undefined));
      return new Response(body, { headers: { ...NO_STORE, "content-type": "application/json" } });
    },
    events(request, keepOpen, stillAllowed = () => true) {
      if (streams >= MAX_EVENT_STREAMS) {
        return new Response(`At most ${MAX_EVENT_STREAMS} dashboards may watch at once\n`, {
          status: 429,
          headers: { ...NO_STORE, "retry-after": "5" },
        });
      }
      streams++;
      keepOpen();
      const encoder = new TextEncoder();
      let lastAt: number | undefined;
      let close: (() => void) | undefined;
      const body = new ReadableStream<Uint8Array>(
        {
          start(controller) {
            const send = (): void => {
              if (!stillAllowed()) {
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
              streams--;
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
