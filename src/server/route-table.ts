import { clusterDelete, clusterExpire, clusterGet, clusterGetPrefix, clusterSet, storageErrorResponse } from "../routes/cluster-storage.ts";
import { clusterInfo, health, livez, metrics, perfMetrics, version } from "../routes/info.ts";
import { model, models } from "../routes/models.ts";
import { anthropicErrorResponse, countTokens, messages } from "../routes/messages.ts";
import { chatCompletions, completions } from "../routes/openai.ts";
import { responses } from "../routes/responses.ts";
import { dashboardErrorResponse, type DashboardHttp } from "../dashboard/http.ts";
import type { DashboardForward, WatcherOf } from "./loop-share.ts";
import type { RouteEntry, RouteTable } from "./dispatch.ts";

export const ROUTES: RouteTable = {
  "/v1/completions": { methods: { POST: completions } },
  "/v1/chat/completions": { methods: { POST: chatCompletions } },
  "/v1/responses": { methods: { POST: responses } },
  "/v1/messages": { methods: { POST: messages }, renderError: anthropicErrorResponse },
  "/v1/messages/count_tokens": { methods: { POST: countTokens }, renderError: anthropicErrorResponse },
  "/v1/models": { methods: { GET: models } },
  // A model id may hold slashes: every path under /v1/models/ is one (dispatch.ts, prefix routes).
  "/v1/models/*": { methods: { GET: model } },
  "/health": { methods: { GET: health }, access: "open" },
  "/livez": { methods: { GET: livez }, access: "open" },
  "/version": { methods: { GET: version }, access: "open" },
  "/cluster_info": { methods: { GET: clusterInfo }, checkHost: true },
  "/perf_metrics": { methods: { GET: perfMetrics } },
  "/prometheus/metrics": { methods: { GET: metrics }, access: "metrics" },
  "/metrics": { methods: { GET: metrics }, access: "metrics" },
  // Upstream's HTTP cluster storage: workers have no client key; the routes check callers themselves.
  "/set": { methods: { POST: clusterSet }, access: "open", checkHost: true, renderError: storageErrorResponse },
  "/get": { methods: { GET: clusterGet }, access: "open", checkHost: true, renderError: storageErrorResponse },
  "/expire": { methods: { GET: clusterExpire }, access: "open", checkHost: true, renderError: storageErrorResponse },
  "/get_prefix": { methods: { GET: clusterGetPrefix }, access: "open", checkHost: true, renderError: storageErrorResponse },
  "/delete": { methods: { DELETE: clusterDelete }, access: "open", checkHost: true, renderError: storageErrorResponse },
};

type DashboardHandler = (request: Request, keepOpen: () => void, peer: () => string | undefined) => Response;

const DASHBOARD_ACCESS = "dashboard";

function dashboardEntry(handler: DashboardHandler): RouteEntry {
  return {
    methods: {
      GET: (_deps, request, connection) =>
        handler(
          request,
          () => void connection.keepOpen(),
          () => connection.peer(),
        ),
    },
    access: DASHBOARD_ACCESS,
    checkHost: true,
    renderError: (error) => dashboardErrorResponse(error.status, error.message),
  };
}

/**
 * An extra event loop's dashboard routes (num_workers > 1): checked here as any, answered by
 * the main loop (`forward`, loops/loop-dashboard.ts), whose recorder hears every loop.
 */
export function forwardedDashboardRoutes(forward: DashboardForward): RouteTable {
  const entry: RouteEntry = {
    methods: {
      GET: (_deps, request, connection) => {
        // The event stream stays open as long as the main loop's does.
        if (new URL(request.url, "http://host").pathname.endsWith("/events")) connection.keepOpen();
        return forward(request, connection.peer());
      },
    },
    access: DASHBOARD_ACCESS,
    checkHost: true,
    renderError: (error) => dashboardErrorResponse(error.status, error.message),
  };
  return { "/dashboard": entry, "/dashboard/data": entry, "/dashboard/events": entry };
}

/**
 * The live status page, protected as /metrics is (--protect-metrics also takes the key as a
 * Basic password). `watcherOf` says who opens an event stream: its address, whether it showed a
 * key, and a re-check of its request against the current keys.
 */
export function dashboardRoutes(http: DashboardHttp, watcherOf: WatcherOf): RouteTable {
  return {
    "/dashboard": dashboardEntry(() => http.page()),
    "/dashboard/data": dashboardEntry((request) => http.data(request)),
    "/dashboard/events": dashboardEntry((request, keepOpen, peer) => http.events(request, keepOpen, watcherOf(request, peer()))),
  };
}
