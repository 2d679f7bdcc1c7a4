/**
 * The dashboard as one view when several event loops serve (num_workers > 1): the main loop's
 * recorder hears every loop's traffic (each extra loop sends its TrafficObserver events in
 * batches, one message per BATCH_MS at most), and only the main loop answers the dashboard's
 * routes. An extra loop checks a dashboard request as it checks any (Host, keys), then passes
 * it, headers included, to the main loop's private listener on loopback, which answers only
 * requests carrying the process's own token.
 */

import type { Role } from "../config/types.ts";
import type { DashboardHttp } from "../dashboard/http.ts";
import type { DashboardForward, WatcherOf } from "../server/loop-share.ts";
import type { EndedRequest, TrafficObserver } from "../observability/traffic-observer.ts";

/** One TrafficObserver call, as sent between threads. */
export type TrafficEvent =
  | readonly ["legAttempt", Role, string]
  | readonly ["legFailed", Role, string | undefined]
  | readonly ["legCompleted", Role, string | undefined, number, number]
  | readonly ["keepaliveSent", string]
  | readonly ["streamOpened"]
  | readonly ["streamClosed"]
  | readonly ["requestEnded", EndedRequest];

/** An extra loop's events wait at most this long before they go to the main loop. */
const BATCH_MS = 50;
/** A batch this large goes at once (a burst of ends), so no batch grows without bound. */
const BATCH_EVENTS = 4096;

/** The header that carries the process's token to the main loop's private dashboard listener. */
export const LOOP_TOKEN_HEADER = "x-disagg-proxy-loop";
/** Beside the token: the client's address as the extra loop saw it (the main loop caps streams per address). */
const LOOP_PEER_HEADER = "x-disagg-proxy-loop-peer";

/** An extra loop's observer: every call is queued and sent in batches through `send`. */
export function forwardingObserver(send: (events: TrafficEvent[]) => void): TrafficObserver {
  let batch: TrafficEvent[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const events = batch;
    batch = [];
    if (events.length > 0) send(events);
  };
  const push = (event: TrafficEvent): void => {
    batch.push(event);
    if (batch.length >= BATCH_EVENTS) flush();
    else timer ??= setTimeout(flush, BATCH_MS);
  };
  return {
    legAttempt: (role, origin) => push(["legAttempt", role, origin]),
    legFailed: (role, origin) => push(["legFailed", role, origin]),
    legCompleted: (role, origin, first, complete) => push(["legCompleted", role, origin, first, complete]),
    keepaliveSent: (route) => push(["keepaliveSent", route]),
    streamOpened: () => push(["streamOpened"]),
    streamClosed: () => push(["streamClosed"]),
    requestEnded: (request) => push(["requestEnded", request]),
  };
}

/** The main loop replays an extra loop's batch into its own recorder. */
export function replay(events: readonly TrafficEvent[], into: TrafficObserver): void {
  for (const event of events) {
    switch (event[0]) {
      case "legAttempt":
        into.legAttempt(event[1], event[2]);
        break;
      case "legFailed":
        into.legFailed(event[1], event[2]);
        break;
      case "legCompleted":
        into.legCompleted(event[1], event[2], event[3], event[4]);
        break;
      case "keepaliveSent":
        into.keepaliveSent(event[1]);
        break;
      case "streamOpened":
        into.streamOpened();
        break;
      case "streamClosed":
        into.streamClosed();
        break;
      case "requestEnded":
        into.requestEnded(event[1]);
    }
  }
}

/** The main loop's private listener: the dashboard's three answers, for the extra loops only. */
export function privateDashboard(http: DashboardHttp, token: string, watcherOf: WatcherOf): Bun.Server<undefined> {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    development: false,
    fetch(request, server) {
      if (request.headers.get(LOOP_TOKEN_HEADER) !== token) return new Response("Not found\n", { status: 404 });
      const path = new URL(request.url).pathname;
      if (path === "/dashboard") return http.page();
      if (path === "/dashboard/data") return http.data(request);
      if (path === "/dashboard/events")
        return http.events(
          request,
          () => server.timeout(request, 0),
          watcherOf(request, request.headers.get(LOOP_PEER_HEADER) ?? undefined),
        );
      return new Response("Not found\n", { status: 404 });
    },
  });
}

/** An extra loop's way to the main loop's dashboard: the request as it came, with the token and the client's address. */
export function dashboardForwarder(url: string, token: string): DashboardForward {
  return async (request, address) => {
    const target = new URL(request.url, "http://host");
    const headers = new Headers(request.headers);
    headers.set(LOOP_TOKEN_HEADER, token);
    if (address === undefined) headers.delete(LOOP_PEER_HEADER);
    else headers.set(LOOP_PEER_HEADER, address);
    const answer = await fetch(`${url}${target.pathname}${target.search}`, { headers, signal: request.signal, timeout: false });
    // The runtime decoded nothing (no compression here); its framing headers are the relay's own.
    const relayed = new Headers(answer.headers);
    relayed.delete("content-length");
    relayed.delete("transfer-encoding");
    return new Response(answer.body, { status: answer.status, headers: relayed });
  };
}
