import { hostname, networkInterfaces } from "node:os";
import type { ProxyConfig } from "../config/types.ts";
import { ProxyError } from "../errors.ts";
import type { Logger } from "../observability/logger.ts";
import { pause } from "../timers.ts";
import { HealthMonitor } from "../workers/health-monitor.ts";
import { monitorWorkers, waitForWorkers } from "../workers/startup.ts";
import { pollWorkerLoads } from "./load-polling.ts";
import { createApp, type App } from "./app.ts";
import { startDiscovery } from "./discovery.ts";
import { createDispatch, mayCall, type RouteEntry } from "./dispatch.ts";
import { listen, type ListenerOptions } from "./listener.ts";
import { dashboardHttp } from "../dashboard/http.ts";
import { dashboardRoutes, ROUTES } from "./route-table.ts";

/** After the drain timeout, aborted streams get this long to write their in-band error. */
const ABORT_GRACE_MS = 1000;

export type ServerOptions = ListenerOptions;

export interface RunningProxy {
  readonly url: URL;
  readonly app: App;
  /** Polls the workers until all are ready or the start timeout passed, then keeps checking them. */
  waitForWorkers(): Promise<boolean>;
  /** Re-reads the TLS certificate and key (SIGHUP) without dropping a connection. */
  reloadTls(): void;
  /** New worker lists (SIGHUP reload): added workers join after a healthy check. */
  replaceWorkers(context: readonly string[], generation: readonly string[]): void;
  /** Refuses new work, lets in-flight requests finish up to `timeoutMs`, aborts the rest, stops. */
  drain(timeoutMs: number): Promise<void>;
  /** Stops at once, dropping open connections. */
  stop(): Promise<void>;
}

/** Starts listening at once; /health says 503 until the workers are found ready. */
export function startProxy(config: ProxyConfig, logger: Logger, appVersion: string, options: ServerOptions = {}): RunningProxy {
  const app = createApp(config, logger, appVersion);
  const allowed = (access: RouteEntry["access"], request: Request): boolean => mayCall(app, access, request);
  const routes = app.dashboard === undefined ? ROUTES : { ...ROUTES, ...dashboardRoutes(dashboardHttp(app.dashboard), allowed) };
  const dispatch = createDispatch(app, routes);
  const servers = [listen(config, config.port, dispatch, logger, options)];
  const current = (): Bun.Server<undefined> => servers.at(-1) ?? servers[0]!;
  app.boundPort = current().port;
  const stopping = new AbortController();
  const dashboard = app.dashboard;
  const monitor = new HealthMonitor(app.placement.pool, config, logger, app.workerFetch, dashboard && ((origin, ok, ready, starting) => dashboard.healthChecked(origin, ok, ready, starting)));
  const workersChanged = (): void => {
    dashboard?.workersChanged();
    void monitor.checkAll(stopping.signal);
  };
  const addressRules = { allowLinkLocal: config.allowLinkLocalWorkers, ownPort: current().port ?? config.port, ownHosts: ownHosts([config.host, ...(config.bindHost === undefined ? [] : [config.bindHost])]) };
  const discovery = config.discovery === undefined ? undefined : startDiscovery(config.discovery, app.clusterStorage?.store, app.placement.pool, workersChanged, logger, addressRules);
  dashboard?.start();
  app.discoveryStatus = discovery === undefined ? undefined : () => discovery.status();
  app.discoveredWorkers = discovery?.registered === undefined ? undefined : () => discovery.registered?.() ?? [];
  if (app.clusterStorage !== undefined) logger.info(`serving the HTTP cluster storage (disagg_cluster.cluster_uri): ${app.clusterStorage.access.describe()}`);
  const stop = async (): Promise<void> => {
    stopping.abort();
    dashboard?.stop();
    await Promise.all([...servers.map((server) => server.stop(true)), discovery?.stop()]);
    // Spans still queued and perf records still being written go out before exit.
    await app.telemetry.flush();
    await app.requestTrace?.close();
  };
  return {
    url: current().url,
    app,
    async waitForWorkers() {
      const settings = { ...config, discovered: config.discovery !== undefined };
      const ready = await waitForWorkers(app.placement.pool, monitor, settings, logger, stopping.signal);
      void monitorWorkers(monitor, config.healthCheckIntervalMs, stopping.signal);
      void pollWorkerLoads(app.placement, app.workerFetch, config.workerLoadIntervalMs, config.healthCheckTimeoutMs, stopping.signal);
      return ready;
    },
    reloadTls() {
      if (config.tlsCertFile === undefined) return;
      const previous = current();
      servers.push(listen(config, previous.port ?? config.port, dispatch, logger, options));
      // The old listener stops accepting; the requests it is serving run to their end.
      void previous.stop();
      logger.info("TLS certificate reloaded");
    },
    replaceWorkers(context, generation) {
      const pool = app.placement.pool;
      for (const [role, origins] of [["context", context], ["generation", generation]] as const) {
        const { added, removed } = pool.replace(role, origins);
        if (added.length === 0 && removed.length === 0) continue;
        logger.info("workers reloaded", { role, added, removed });
        dashboard?.workersChanged();
      }
      void monitor.checkAll(stopping.signal);
    },
    async drain(timeoutMs) {
      app.startDraining();
      logger.info("draining", { in_flight: app.active.size, timeout_ms: timeoutMs });
      await untilIdle(app, timeoutMs);
      const left = app.active.size;
      if (left > 0) {
        logger.warn("drain timeout: aborting in-flight requests", { in_flight: left });
        const reason = new ProxyError("DRAINING", 503, "The proxy shut down before the request finished");
        for (const ctx of app.active) ctx.abortLegs(reason);
        await untilIdle(app, ABORT_GRACE_MS);
      }
      await stop();
    },
    stop,
  };
}

async function untilIdle(app: App, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  const never = new AbortController().signal;
  while (app.active.size > 0 && performance.now() < deadline) {
    await pause(Math.min(20, deadline - performance.now()), never);
  }
}

/** What reaches this machine besides loopback and wildcards: hostname and bind_host, its name, every interface's address. */
function ownHosts(configured: readonly string[]): string[] {
  const addresses = Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((info) => info.address));
  return [...configured, hostname(), ...addresses];
}
