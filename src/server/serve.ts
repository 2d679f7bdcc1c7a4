import { answerStorageCall } from "../routes/cluster-storage.ts";
import type { StorageAnswer, StorageCall, StorageHolder } from "../routes/deps.ts";
import { hostname, networkInterfaces } from "node:os";
import type { ProxyConfig, Role } from "../config/types.ts";
import type { Logger } from "../observability/logger.ts";
import { pause, waitUntil, withDeadline } from "../timers.ts";
import { HealthMonitor } from "../workers/health-monitor.ts";
import { monitorWorkers, waitForWorkers } from "../workers/startup.ts";
import { pollWorkerLoads } from "../routing/load-polling.ts";
import { createApp, type App } from "./app.ts";
import type { LoopShare, WatcherOf } from "./loop-share.ts";
import { startDiscovery, type RunningDiscovery } from "../routing/worker-discovery.ts";
import { createDispatch, mayCall, showsKey, type RouteEntry, type RouteTable } from "./dispatch.ts";
import { KeepAlive, keepAliveBound } from "./keep-alive.ts";
import { listen } from "./listener.ts";
import { dashboardHttp } from "../dashboard/http.ts";
import { dashboardRoutes, forwardedDashboardRoutes, ROUTES } from "./route-table.ts";
import type { HandedItem } from "../discovery/index.ts";

/** After the drain, hand-off settles still running get this long before the proxy stops. */
const SETTLE_GRACE_MS = 2000;

/**
 * An upgrade's old side answers with `Connection: close` this long before it stops listening:
 * a kept-alive client that sends in that time moves to a new connection, so it is not caught
 * by the close of idle connections (a request already sent on one is reset by it).
 */
export const CONNECTION_CLOSE_PHASE_MS = 1000;

export interface ServerOptions {
  /** Overrides the idle bound, in the runtime's own seconds (tests shorten it to prove slow routes are exempt). */
  readonly idleTimeoutS?: number;
  /** Cluster storage items handed over by the process this one replaces, in the store before discovery starts. */
  readonly registrations?: readonly HandedItem[];
  /**
   * An upgrade's new side: listen only when `listen()` is called, once the workers are ready,
   * so that no request meets a process that would answer 503 beside one that is ready.
   */
  readonly deferListen?: boolean;
  /** num_workers > 1: this loop's share of what the process's event loops have in common. */
  readonly loop?: LoopShare | undefined;
  /** The port is this proxy's alone (the demo): listening where anything serves fails (ListenError). */
  readonly exclusivePort?: boolean;
}

export interface RunningProxy {
  /** Where it listens (throws before `listen()` with deferListen). */
  readonly url: URL;
  /** With deferListen: starts listening (throws ListenError); otherwise it already listens. */
  listen(): void;
  readonly app: App;
  /** Polls the workers until all are ready or the start timeout passed, then keeps checking them. */
  waitForWorkers(): Promise<boolean>;
  /** Re-reads the TLS certificate and key (SIGHUP) without dropping a connection. */
  reloadTls(): boolean;
  /** New worker lists (SIGHUP reload): added workers join after a healthy check. */
  replaceWorkers(context: readonly string[], generation: readonly string[]): WorkerChanges;
  /** Refuses new work, lets in-flight requests finish up to `timeoutMs`, aborts the rest, stops. */
  drain(timeoutMs: number): Promise<void>;
  /**
   * An upgrade's old side: answers with `Connection: close` for CONNECTION_CLOSE_PHASE_MS,
   * then stops listening (idle kept-alive connections close at once), lets requests in flight
   * run up to `timeoutMs`, aborts the rest in-band, stops. Requests are never refused: after
   * the listener closed only a request racing its connection's close can still come, and it
   * is served.
   */
  handOver(timeoutMs: number): { readonly listenerClosed: Promise<void>; readonly finished: Promise<void> };
  /** The HTTP cluster storage's items (registered workers), for the process taking over. */
  registrations(): HandedItem[];
  /**
   * The old process's registrations when it stopped listening, all of them: those new since the
   * first hand-over are added, those it no longer holds (deregistered meanwhile) removed.
   */
  adoptRegistrations(items: readonly HandedItem[]): { readonly added: number; readonly gone: number };
  /** Sends every cluster storage call to `forward` (undefined: answers them itself again). */
  forwardStorage(forward: StorageHolder["forward"]): void;
  /** A call another process forwarded, answered from this one's cluster storage. */
  storageCall(call: StorageCall): Promise<StorageAnswer>;
  /** Stops at once, dropping open connections. */
  stop(): Promise<void>;
}

/** Starts listening at once; /health says 503 until the workers are found ready. */
export function startProxy(config: ProxyConfig, logger: Logger, appVersion: string, options: ServerOptions = {}): RunningProxy {
  const servers: Bun.Server<undefined>[] = [];
  let discovery: RunningDiscovery | undefined;
  const app = createApp(config, logger, appVersion, { loop: options.loop, boundPort: () => servers[0]?.port, discovery: () => discovery });
  const allowed = (access: RouteEntry["access"], request: Request): boolean => mayCall(app, access, request);
  const routes = routesOf(app, allowed, options.loop);
  const keepAlive = new KeepAlive(keepAliveBound(config.serverKeepAliveTimeoutS, options.idleTimeoutS));
  const dispatch = createDispatch(app, routes, keepAlive);
  const listenerSettings = { ...config, exclusivePort: options.exclusivePort };
  if (options.deferListen !== true) servers.push(listen(listenerSettings, config.port, dispatch, logger));
  const current = (): Bun.Server<undefined> => {
    const server = servers.at(-1);
    if (server === undefined) throw new Error("not listening yet");
    return server;
  };
  const stopping = new AbortController();
  const dashboard = app.dashboard;
  const monitor = new HealthMonitor(app.placement.pool, config, logger, app.workerFetch, (origin, ok, ready, starting) => {
    // A passing check brings an ejected worker back once its ejection is over.
    app.outliers.checked(origin, ok);
    dashboard?.healthChecked(origin, ok, ready, starting);
  });
  const workersChanged = (): void => {
    dashboard?.workersChanged();
    void monitor.checkAll(stopping.signal);
  };
  if (options.registrations !== undefined) app.clusterStorage?.store.adopt(options.registrations);
  // Taking over, it listens later, on the configured port (never 0: port 0 takes over nothing).
  discovery = discoveryOf(config, app, logger, servers[0]?.port ?? config.port, workersChanged);
  dashboard?.start();
  if (app.clusterStorage !== undefined)
    logger.info(`serving the HTTP cluster storage (disagg_cluster.cluster_uri): ${app.clusterStorage.access.describe()}`);
  const stop = async (): Promise<void> => {
    stopping.abort();
    app.placement.coordinator?.client.close();
    dashboard?.stop();
    app.handoffs.stop();
    await Promise.all([...servers.map((server) => server.stop(true)), discovery?.stop()]);
    // Spans still queued and perf records still being written go out before exit.
    await app.telemetry.flush();
    await app.requestTrace?.close();
  };
  return {
    get url() {
      return current().url;
    },
    listen() {
      if (servers.length > 0) return;
      servers.push(listen(listenerSettings, config.port, dispatch, logger));
    },
    app,
    async waitForWorkers() {
      const settings = { ...config, discovered: config.discovery !== undefined };
      const ready = await waitForWorkers(app.placement.pool, monitor, settings, logger, stopping.signal);
      void monitorWorkers(monitor, config.healthCheckIntervalMs, stopping.signal);
      void pollWorkerLoads(app.placement, app.workerFetch, config.workerLoadIntervalMs, config.healthCheckTimeoutMs, stopping.signal);
      app.placement.coordinator?.client.start();
      return ready;
    },
    reloadTls() {
      if (config.tlsCertFile === undefined) return false;
      const previous = current();
      servers.push(listen(listenerSettings, previous.port ?? config.port, dispatch, logger));
      // The old listener stops accepting; the requests it is serving run to their end.
      void previous.stop();
      return true;
    },
    replaceWorkers(context, generation) {
      const changes = replacePoolWorkers(app, context, generation);
      void monitor.checkAll(stopping.signal);
      return changes;
    },
    async drain(timeoutMs) {
      await drained(app, logger, timeoutMs);
      await stop();
    },
    handOver(timeoutMs) {
      keepAlive.closeConnections();
      return handedOver(app, logger, servers, timeoutMs, stop);
    },
    ...storageHandOver(app),
    stop,
  };
}

/** What a reload changed in each role's worker list (the reload's line says it: process/reload.ts). */
export type WorkerChanges = Readonly<Record<Role, { readonly added: readonly string[]; readonly removed: readonly string[] }>>;

function replacePoolWorkers(app: App, context: readonly string[], generation: readonly string[]): WorkerChanges {
  const changes = {
    context: app.placement.pool.replace("context", context),
    generation: app.placement.pool.replace("generation", generation),
  };
  if (Object.values(changes).some(({ added, removed }) => added.length + removed.length > 0)) app.dashboard?.workersChanged();
  return changes;
}

/** New requests refused; those in flight get `timeoutMs`, then are aborted in-band; their hand-offs are claimed. */
async function drained(app: App, logger: Logger, timeoutMs: number): Promise<void> {
  const { requests } = app;
  requests.startDraining();
  logger.info("draining", { in_flight: requests.active.size, timeout_ms: timeoutMs });
  await requests.settled(timeoutMs);
  if (requests.active.size > 0) await requests.abortLeft();
  // The hand-offs the drained requests left are claimed before the proxy goes.
  await waitUntil(() => app.handoffs.pending === 0, SETTLE_GRACE_MS);
}

/** RunningProxy.handOver, once its answers say `Connection: close`: the listeners close after the phase, then the proxy stops. */
function handedOver(
  app: App,
  logger: Logger,
  servers: readonly Bun.Server<undefined>[],
  timeoutMs: number,
  stop: () => Promise<void>,
): { readonly listenerClosed: Promise<void>; readonly finished: Promise<void> } {
  const closing = (async () => {
    await pause(CONNECTION_CLOSE_PHASE_MS, new AbortController().signal);
    const connectionsClosed = Promise.all(servers.map((server) => server.stop(false)));
    logger.info("stopped listening: the new process serves the port; requests in flight run on", {
      in_flight: app.requests.active.size,
      timeout_ms: timeoutMs,
    });
    // Wrapped: awaiting `closing` must not wait for every connection.
    return { connectionsClosed };
  })();
  const listenerClosed = closing.then(() => undefined);
  const finished = (async () => {
    const { connectionsClosed } = await closing;
    if ((await withDeadline(connectionsClosed, timeoutMs)) === "late") await app.requests.abortLeft();
    await stop();
  })();
  return { listenerClosed, finished };
}

/** Discovery, when configured: registered workers join the pool after a healthy check, none at this proxy's own address. */
function discoveryOf(config: ProxyConfig, app: App, logger: Logger, ownPort: number, changed: () => void): RunningDiscovery | undefined {
  if (config.discovery === undefined) return undefined;
  const addressRules = {
    allowLinkLocal: config.allowLinkLocalWorkers,
    ownPort,
    ownHosts: ownHosts([config.host, ...(config.bindHost === undefined ? [] : [config.bindHost])]),
  };
  const client = app.placement.coordinator?.client;
  const coordinatorLists = client && { clusterInfo: () => client.clusterInfo(), intervalMs: config.healthCheckIntervalMs };
  const { pool } = app.placement;
  return startDiscovery(config.discovery, app.clusterStorage?.store, pool, changed, logger, addressRules, coordinatorLists);
}

/**
 * The HTTP cluster storage's part in an upgrade: its items handed to the process taking over
 * and adopted there, and its calls forwarded to the old process while both listen.
 */
function storageHandOver(app: App): Pick<RunningProxy, "registrations" | "adoptRegistrations" | "forwardStorage" | "storageCall"> {
  return {
    registrations: () => app.clusterStorage?.store.handOver() ?? [],
    adoptRegistrations(items) {
      const store = app.clusterStorage?.store;
      if (store === undefined) return { added: 0, gone: 0 };
      const gone = store.forgetHandedExcept(new Set(items.map((item) => item.key)));
      return { added: store.adopt(items), gone };
    },
    forwardStorage(forward) {
      if (app.clusterStorage?.holder !== undefined) app.clusterStorage.holder.forward = forward;
    },
    storageCall: (call) => answerStorageCall(app, call),
  };
}

/** What reaches this machine besides loopback and wildcards: hostname and bind_host, its name, every interface's address. */
function ownHosts(configured: readonly string[]): string[] {
  const addresses = Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((info) => info.address));
  return [...configured, hostname(), ...addresses];
}

/**
 * The route table with the dashboard's routes when it is on: its own, or (an extra event loop)
 * the main loop's, forwarded; the main loop of several also answers the extra loops' forwards.
 */
function routesOf(app: App, allowed: (access: RouteEntry["access"], request: Request) => boolean, loop: LoopShare | undefined): RouteTable {
  const forward = loop?.forwardDashboard;
  if (forward !== undefined) return { ...ROUTES, ...forwardedDashboardRoutes(forward) };
  if (app.dashboard === undefined) return ROUTES;
  const http = dashboardHttp(app.dashboard);
  const watcherOf: WatcherOf = (request, address) => ({
    address: address ?? "unknown",
    operator: showsKey(app, request),
    stillAllowed: () => allowed("dashboard", request),
  });
  loop?.provideDashboard?.(app.dashboard, http, watcherOf);
  return { ...ROUTES, ...dashboardRoutes(http, watcherOf) };
}
