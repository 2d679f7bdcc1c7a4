import type { RouterType } from "../config/types.ts";
import { ProxyError } from "../errors.ts";
import { ConversationRouter } from "./conversation-router.ts";
import { KvCacheAwareRouter } from "./kv-cache-aware-router.ts";
import { inFlightOf, type Router, type RouterContext } from "./router-contract.ts";
import { leastLoaded, roundRobin } from "./simple-routers.ts";

export type { Router, RouterContext, RouterPick } from "./router-contract.ts";
export type { RoutingRequest } from "./routing-request.ts";

const ROUTERS: Readonly<Record<RouterType, (context: RouterContext) => Router>> = {
  round_robin: (context) => roundRobin(context.turn),
  // use_tokens: the least prompt tokens in flight, as upstream's LoadBalancingRouter(use_tokens=True).
  load_balancing: (context) =>
    leastLoaded(
      (worker) =>
        context.options.useTokens === true ? context.table.weight(context.role, worker.origin) : inFlightOf(context, worker.origin),
      context.turn,
    ),
  conversation: (context) => new ConversationRouter(context),
  kv_cache_aware: (context) => new KvCacheAwareRouter(context),
  // Runs as kv_cache_aware, polling the workers' events instead of taking them over ZMQ (config/router-block.ts warns so).
  centralized_kv_cache_aware: (context) => new KvCacheAwareRouter(context),
  // Its legs are placed by its router server (remote-placement.ts, before any router here): a
  // local pick for that role is a caller's mistake.
  remote_http: (context) => ({
    pick: () => {
      throw new ProxyError("INTERNAL", 500, `The ${context.role} router is remote_http: its legs are placed by the router server`);
    },
  }),
};

/** The router of a role, by the type its config names (trtllm-serve's `router.type`). */
export function createRouter(type: RouterType, context: RouterContext): Router {
  return ROUTERS[type](context);
}
