import type { RouteDeps } from "./deps.ts";

/**
 * GET /health (readiness): 200 once a context and a generation worker are ready; 503 while
 * draining. `?model=NAME`: whether that model (or alias) has a ready worker of each role.
 */
export function health(deps: RouteDeps, request?: Request): Response {
  const model = request === undefined ? null : new URL(request.url, "http://host").searchParams.get("model");
  const ready = model === null ? deps.workersReady() : deps.modelReady(model);
  return new Response(null, { status: ready && !deps.draining ? 200 : 503 });
}

/** GET /prometheus/metrics and /metrics: Prometheus text exposition. */
export async function metrics(deps: RouteDeps): Promise<Response> {
  const { contentType, text } = await deps.metricsText();
  return new Response(text, { headers: { "content-type": contentType } });
}

/** GET /livez (liveness): the process answers. */
export function livez(): Response {
  return new Response(null, { status: 200 });
}

/** GET /version */
export function version(deps: RouteDeps): Response {
  return Response.json({ version: deps.version });
}

/** GET /cluster_info: server lists, readiness and in-flight load per worker. */
export function clusterInfo(deps: RouteDeps): Response {
  return Response.json(deps.clusterInfo());
}

/** GET /perf_metrics (reference §5.2): workers' records joined per completed request; [] unless perf_metrics_max_requests > 0. */
export async function perfMetrics(deps: RouteDeps): Promise<Response> {
  return new Response(JSON.stringify(await deps.perfMetrics()), { headers: { "content-type": "application/json" } });
}
