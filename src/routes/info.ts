import { ProxyError } from "../errors.ts";
import type { App } from "../server/app.ts";
import { openAiErrorResponse } from "./errors.ts";
import type { Role } from "../config/types.ts";

const MODELS_TIMEOUT_MS = 10_000;

/** GET /health (readiness): 200 once a context and a generation worker are ready; 503 while draining. */
export function health(app: App): Response {
  return new Response(null, { status: app.placement.pool.isReady() && !app.draining ? 200 : 503 });
}

/** GET /prometheus/metrics and /metrics: Prometheus text exposition. */
export async function metrics(app: App): Promise<Response> {
  return new Response(await app.metrics.render(), { headers: { "content-type": app.metrics.contentType } });
}

/** GET /livez (liveness): the process answers. */
export function livez(): Response {
  return new Response(null, { status: 200 });
}

/** GET /version */
export function version(app: App): Response {
  return Response.json({ version: app.version });
}

/** GET /cluster_info: server lists, readiness and in-flight load per worker. */
export function clusterInfo(app: App): Response {
  const { pool, table } = app.placement;
  const describe = (role: Role) =>
    pool.all(role).map((w) => ({ url: w.origin, ready: w.ready, in_flight: table.load(role, w.origin) }));
  return Response.json({
    is_ready: pool.isReady(),
    server_lists: { context: pool.all("context").map((w) => w.origin), generation: pool.all("generation").map((w) => w.origin) },
    workers: { context: describe("context"), generation: describe("generation") },
    minimal_instances: { context_servers: pool.minimal.context, generation_servers: pool.minimal.generation },
    ...(app.discoveryStatus === undefined ? {} : { discovery: app.discoveryStatus() }),
  });
}

/** GET /perf_metrics (reference §5.2): workers' records joined per completed request; [] unless perf_metrics_max_requests > 0. */
export async function perfMetrics(app: App): Promise<Response> {
  return new Response(JSON.stringify(await app.telemetry.perfMetrics()), { headers: { "content-type": "application/json" } });
}

/** GET /v1/models, answered by a ready context worker. */
export async function models(app: App, request: Request): Promise<Response> {
  const worker = app.placement.pool.ready("context")[0];
  if (!worker) return openAiErrorResponse(new ProxyError("NOT_READY", 503, "No context worker is ready"));
  try {
    const signal = AbortSignal.any([request.signal, AbortSignal.timeout(MODELS_TIMEOUT_MS)]);
    const upstream = await app.workerFetch(`${worker.origin}/v1/models`, { signal });
    const body = await upstream.arrayBuffer();
    return new Response(body, { status: upstream.status, headers: { "content-type": "application/json" } });
  } catch (cause) {
    return openAiErrorResponse(new ProxyError("WORKER_UNREACHABLE", 502, "The context worker is unreachable", { cause }));
  }
}
