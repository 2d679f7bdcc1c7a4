/**
 * The coordinator's HTTP API, as upstream's CoordinatorServer serves it (coordinator_server.py
 * [id 56726411408]): POST /select, POST /finish, GET /cluster_info, GET /version in MessagePack
 * (any request content type is read as msgpack, as upstream reads it), GET /health with no body
 * (200 ready, 503 not); ours beside them, GET /metrics (Prometheus text, metrics.ts). A bad body is a 400 `{error}` in upstream's words, logged, and places
 * nothing. Like upstream's, it has no authentication: serve it on a trusted network only
 * (docs/cluster.md); beyond upstream, a POST a browser marks as another site's is refused (403).
 */

import type { Logger } from "../observability/logger.ts";
import {
  encodeWire,
  isRefusal,
  MSGPACK_CONTENT_TYPE,
  readFinishRequest,
  readSelectRequest,
  readWireBody,
  type WireMap,
} from "../routing/coordinator-wire.ts";
import { crossSiteReason } from "../security/browser-guard.ts";
import type { CoordinatorService } from "./service.ts";

/** Extra routes served beside the API (the HTTP cluster storage), by path. */
export type ExtraRoutes = ReadonlyMap<string, (request: Request, peer: string | undefined) => Response | Promise<Response>>;

export interface CoordinatorHttp {
  handle(request: Request, peer: string | undefined): Promise<Response>;
}

const METHODS: Readonly<Record<string, string>> = {
  "/metrics": "GET",
  "/prometheus/metrics": "GET",
  "/select": "POST",
  "/finish": "POST",
  "/cluster_info": "GET",
  "/health": "GET",
  "/version": "GET",
};

export function coordinatorHttp(
  service: CoordinatorService,
  version: string,
  logger: Logger,
  extra: ExtraRoutes = new Map(),
): CoordinatorHttp {
  const routes = async (request: Request, path: string): Promise<Response> => {
    if (path === "/health") return new Response(null, { status: service.ready() ? 200 : 503 });
    if (path === "/version") return msgpack({ version });
    if (path === "/metrics" || path === "/prometheus/metrics") {
      const { contentType, text } = await service.metrics.text();
      return new Response(text, { headers: { "content-type": contentType } });
    }
    if (path === "/cluster_info") return msgpack(service.clusterInfo(version));
    const read = await readWireBody(request.body);
    if (!read.ok) return refused(path, read.error);
    if (path === "/select") {
      const select = readSelectRequest(read.value);
      if (isRefusal(select)) return refused(path, select.error);
      const answer = service.select(select);
      // One line per placement: debug when placed, info when refused (a full fleet refuses many).
      const fields = { role: select.role, req_id: select.reqId?.toString() ?? null, status: answer.status };
      if (answer.status === 200) logger.debug("coordinator placed", { ...fields, server: answer.body["server"] });
      else logger.info("coordinator placement refused", { ...fields, error: answer.body["error"] });
      return msgpack(answer.body, answer.status);
    }
    const finish = readFinishRequest(read.value);
    if (isRefusal(finish)) return refused(path, finish.error);
    service.finish(finish);
    logger.debug("coordinator finished", { role: finish.role, req_id: finish.reqId.toString(), success: finish.success });
    return msgpack({});
  };
  const refused = (path: string, error: string): Response => {
    logger.warn("coordinator request refused", { path, error });
    return msgpack({ error }, 400);
  };
  return {
    async handle(request, peer) {
      const path = new URL(request.url, "http://host").pathname;
      const route = extra.get(path);
      if (route !== undefined) return route(request, peer);
      const method = METHODS[path];
      // FastAPI's answers for a path or method it has no route for.
      if (method === undefined) return Response.json({ detail: "Not Found" }, { status: 404 });
      if (request.method !== method) return Response.json({ detail: "Method Not Allowed" }, { status: 405, headers: { allow: method } });
      // A web page may POST here without a preflight (text/plain): what a browser marks as another site's is refused.
      const crossSite = method === "POST" ? crossSiteReason(request.headers, new URL(request.url, "http://host").origin) : undefined;
      if (crossSite !== undefined) {
        logger.warn("coordinator request refused", { path, error: crossSite });
        return msgpack({ error: "Forbidden: a cross-origin request (web page)" }, 403);
      }
      try {
        return await routes(request, path);
      } catch (error) {
        logger.error("coordinator request failed", { path, error });
        return msgpack({ error: error instanceof Error ? error.message : String(error) }, 500);
      }
    },
  };
}

function msgpack(body: WireMap, status = 200): Response {
  return new Response(encodeWire(body), { status, headers: { "content-type": MSGPACK_CONTENT_TYPE } });
}
