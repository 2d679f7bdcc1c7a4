/**
 * `disagg-proxy coordinator`: one process owns what every serving process would otherwise keep
 * apart, the worker pool, its health checks and discovery (etcd, or the HTTP cluster storage it
 * serves on its own port: storage.ts), the workers' load reports,
 * the routers and their KV-block index fed by each worker's /kv_cache_events (polled here only:
 * a worker's buffer drains on read, so one reader sees every event), and answers upstream's
 * coordinator API (http.ts). It listens at once; /health says 503 until the workers are ready.
 */

import { hostname, networkInterfaces } from "node:os";
import type { ProxyConfig } from "../config/types.ts";
import type { Logger } from "../observability/logger.ts";
import { Placement } from "../routing/placement.ts";
import { startDiscovery } from "../routing/worker-discovery.ts";
import { ListenError } from "../server/listener.ts";
import { pollWorkerLoads } from "../routing/load-polling.ts";
import { HealthMonitor } from "../workers/health-monitor.ts";
import { monitorWorkers, waitForWorkers } from "../workers/startup.ts";
import { createWorkerFetch } from "../workers/transport.ts";
import { coordinatorHttp } from "./http.ts";
import { CoordinatorService } from "./service.ts";
import { coordinatorStorage } from "./storage.ts";

export interface CoordinatorOptions {
  /** Where it listens (the config's port is the serving processes'). */
  readonly port: number;
  /** A placement with no /finish is released after this long. */
  readonly reservationTimeoutMs: number;
  /** A Unix socket served beside the port (serving processes on this host skip the TCP stack). */
  readonly socketPath?: string | undefined;
}

export interface RunningCoordinator {
  readonly url: URL;
  readonly service: CoordinatorService;
  /** Polls the workers until all are ready or the start timeout passed, then keeps checking them. */
  waitForWorkers(): Promise<boolean>;
  /** New worker lists (SIGHUP): added workers join after a healthy check. */
  replaceWorkers(context: readonly string[], generation: readonly string[]): void;
  stop(): Promise<void>;
}

/** Throws ListenError when the port cannot be bound. */
export function startCoordinator(config: ProxyConfig, options: CoordinatorOptions, logger: Logger, version: string): RunningCoordinator {
  const workerFetch = createWorkerFetch(config);
  const placement = new Placement(config, {
    fetch: workerFetch,
    onWarning: (message, fields) => logger.warn(message, fields),
    onLoadReporting: (origin, reporting) =>
      logger.info(reporting ? "worker reports its load" : "worker stopped reporting its load", { worker: origin }),
  });
  const service = new CoordinatorService(placement, { ...config, reservationTimeoutMs: options.reservationTimeoutMs }, logger);
  const storage = coordinatorStorage(config, logger);
  const http = coordinatorHttp(service, version, logger, storage?.routes);
  const handle = (request: Request, peer: string | undefined): Promise<Response> => http.handle(request, peer);
  const server = listenOn(config, { port: options.port }, handle, logger);
  let socket: Bun.Server<undefined> | undefined;
  try {
    socket = options.socketPath === undefined ? undefined : listenOn(config, { unix: options.socketPath }, handle, logger);
  } catch (error) {
    void server.stop(true);
    throw error;
  }
  const stopping = new AbortController();
  const monitor = new HealthMonitor(placement.pool, config, logger, workerFetch);
  const workersChanged = (): void => void monitor.checkAll(stopping.signal);
  const rules = {
    allowLinkLocal: config.allowLinkLocalWorkers,
    ownPort: server.port ?? options.port,
    ownHosts: [config.host, ...(config.bindHost === undefined ? [] : [config.bindHost]), hostname(), ...ownAddresses()],
  };
  const discovery =
    config.discovery === undefined
      ? undefined
      : startDiscovery(config.discovery, storage?.store, placement.pool, workersChanged, logger, rules);
  return {
    url: server.url,
    service,
    async waitForWorkers() {
      const ready = await waitForWorkers(
        placement.pool,
        monitor,
        { ...config, discovered: config.discovery !== undefined },
        logger,
        stopping.signal,
      );
      void monitorWorkers(monitor, config.healthCheckIntervalMs, stopping.signal);
      void pollWorkerLoads(placement, workerFetch, config.workerLoadIntervalMs, config.healthCheckTimeoutMs, stopping.signal);
      return ready;
    },
    replaceWorkers(context, generation) {
      for (const [role, origins] of [
        ["context", context],
        ["generation", generation],
      ] as const) {
        const { added, removed } = placement.pool.replace(role, origins);
        if (added.length > 0 || removed.length > 0) logger.info("workers reloaded", { role, added, removed });
      }
      workersChanged();
    },
    async stop() {
      stopping.abort();
      service.stop();
      await Promise.all([server.stop(true), socket?.stop(true), discovery?.stop()]);
    },
  };
}

/** A TCP port on the configured address, or a Unix socket (Bun removes its file when it stops). */
function listenOn(
  config: ProxyConfig,
  where: { readonly port: number } | { readonly unix: string },
  handle: (request: Request, peer: string | undefined) => Promise<Response>,
  logger: Logger,
): Bun.Server<undefined> {
  const host = config.bindHost ?? config.host;
  // Upstream's coordinator keeps idle connections server_keep_alive_timeout (10 s) too; Bun's bound is 255 s at most.
  const idleTimeout = Math.min(Math.max(Math.round(config.serverKeepAliveTimeoutS), 1), 255);
  const fetch = (request: Request, server: Bun.Server<undefined>): Promise<Response> => handle(request, server.requestIP(request)?.address);
  const onError = (failure: Error): Response => {
    logger.error("unhandled coordinator error", { error: failure });
    return Response.json({ detail: "Internal Server Error" }, { status: 500 });
  };
  try {
    // A Unix socket keeps Bun's default idle bound, 10 s (its options take no idleTimeout).
    if ("unix" in where) return Bun.serve({ unix: where.unix, development: false, fetch, error: onError });
    return Bun.serve({ hostname: host, port: where.port, development: false, idleTimeout, fetch, error: onError });
  } catch (error) {
    const code = typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : undefined;
    throw new ListenError("unix" in where ? `unix:${where.unix}` : host, "unix" in where ? 0 : where.port, code, error);
  }
}

function ownAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((info) => info.address));
}
