/**
 * What placement knows of a coordinator (disagg_coordinator_url): its client, which roles'
 * legs it places (only the stateful routers', as upstream's CoordinatorClient._maybe_delegate,
 * tensorrt_llm/serve/disagg_coordinator.py @ 0186c597), and the routing key each role sends.
 */

import type { ProxyConfig, Role, RouterOptions, RouterType } from "../config/types.ts";
import { CoordinatorClient, type CoordinatorEvents } from "./coordinator-client.ts";
import { TEXT_HASH_ALGO, TOKEN_HASH_ALGO, type ClusterInfo, type RoutingKey } from "./coordinator-wire.ts";
import { promptBlocks, routingKeyOf, type RoutingRequest } from "./routing-request.ts";

/** Which placed a leg: the request log's `placed_by`. */
export type PlacedBy = "coordinator" | "local";

export type CoordinationSettings = Pick<ProxyConfig, "contextRouter" | "generationRouter" | "coordinatorTimeoutMs"> & {
  readonly url: string;
  readonly routerOptions: Readonly<Record<Role, RouterOptions>>;
};

export interface CoordinationEvents extends CoordinatorEvents {
  /** The coordinator named a worker this proxy does not list or cannot use for the request (said once per worker). */
  readonly onUnusable?: (role: Role, server: string) => void;
}

export class Coordination {
  readonly client: CoordinatorClient;
  readonly #types: Readonly<Record<Role, RouterType>>;
  readonly #options: Readonly<Record<Role, RouterOptions>>;
  readonly #onUnusable: CoordinationEvents["onUnusable"];
  /** The coordinator's kv_cache_aware block size per role (its /cluster_info routing_key_configs), over ours. */
  readonly #tokensPerBlock: Partial<Record<Role, number>> = {};
  readonly #unusable = new Set<string>();

  constructor(settings: CoordinationSettings, events: CoordinationEvents) {
    this.client = new CoordinatorClient(
      { url: settings.url, timeoutMs: settings.coordinatorTimeoutMs },
      { ...events, onClusterInfo: (info) => this.#adopt(info) },
    );
    this.#types = { context: settings.contextRouter, generation: settings.generationRouter };
    this.#options = settings.routerOptions;
    this.#onUnusable = events.onUnusable;
  }

  /** round_robin and load_balancing place locally, as upstream's: they keep no state to share. */
  delegates(role: Role): boolean {
    const type = this.#types[role];
    return type === "conversation" || type === "kv_cache_aware";
  }

  /**
   * The key upstream's routers send (router.py `routing_key`): the conversation id for
   * conversation; for kv_cache_aware the prompt's block hashes, over token ids when known
   * (v1_block_key) or over its text (ours: TEXT_HASH_ALGO), with the conversation id.
   */
  keyFor(role: Role, routing: RoutingRequest | undefined): RoutingKey {
    const id = routing === undefined ? undefined : routingKeyOf(routing);
    const conversation = id === "" ? undefined : id;
    if (this.#types[role] !== "kv_cache_aware")
      return conversation === undefined ? { kind: "none" } : { kind: "conversation", id: conversation };
    if (routing === undefined) return { kind: "none" };
    const tokensPerBlock = this.#tokensPerBlock[role] ?? this.#options[role].tokensPerBlock ?? 32;
    const blocks = promptBlocks(routing, { tokensPerBlock, preferTokenIds: true, skipTokens: 0 });
    return {
      kind: "blocks",
      hashesByAlgo: new Map([[blocks.kind === "tokens" ? TOKEN_HASH_ALGO : TEXT_HASH_ALGO, [blocks.hashes]]]),
      convKey: undefined,
      numTokens: blocks.totalTokens,
      conversationId: conversation,
    };
  }

  /** Upstream's client takes the coordinator's key settings (disagg_coordinator.py _sync_delegating_router_configs). */
  #adopt(info: ClusterInfo): void {
    for (const role of ["context", "generation"] as const) {
      const size = info.routingKeyConfigs[role]?.["tokens_per_block"];
      if (this.#types[role] === "kv_cache_aware" && typeof size === "bigint" && size > 0n && size <= 1n << 20n)
        this.#tokensPerBlock[role] = Number(size);
    }
  }

  unusable(role: Role, server: string): void {
    const key = `${role} ${server}`;
    if (this.#unusable.has(key)) return;
    if (this.#unusable.size < 1024) this.#unusable.add(key);
    this.#onUnusable?.(role, server);
  }
}
