import { ProxyError } from "../errors.ts";
import type { RouteDeps } from "./deps.ts";
import { openAiErrorResponse } from "./errors.ts";
import { withinRequest } from "./proxied.ts";

/**
 * GET /health (readiness): 200 once a context and a generation worker are ready; 503 while
 * draining. `?model=NAME`: whether that model (or alias) has a ready worker of each role.
 */
export function health(deps: RouteDeps, request?: Request): Response {
  const model = request === undefined ? null : new URL(request.url).searchParams.get("model");
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

/**
 * GET /v1/models: in a fleet of several models (or with aliases) the proxy lists what its workers
 * serve and the aliases; otherwise a context worker answers, as trtllm-serve's proxy asks one.
 * Either way admitted and logged like every request; a worker's status kept.
 */
export async function models(deps: RouteDeps, request: Request): Promise<Response> {
  const ctx = await deps.startRequest("/v1/models", false, request);
  return withinRequest(
    ctx,
    request,
    (error) => openAiErrorResponse(error),
    async () => {
      const listed = deps.modelList();
      if (listed !== undefined) {
        const bytes = new TextEncoder().encode(JSON.stringify(listed));
        ctx.sent(bytes.byteLength);
        return {
          response: new Response(bytes, { headers: { "content-type": "application/json" } }),
          ended: Promise.resolve({ status: 200, error: undefined }),
        };
      }
      const answer = await deps.callWorker(ctx, { role: "context", method: "GET", path: "/v1/models" });
      ctx.sent(answer.body.byteLength);
      const status = answer.status;
      const response = new Response(answer.body, { status, headers: { "content-type": "application/json" } });
      const error = status >= 400 ? new ProxyError("WORKER_HTTP_ERROR", status, "The context worker rejected the request") : undefined;
      return { response, ended: Promise.resolve({ status, error }) };
    },
  );
}
