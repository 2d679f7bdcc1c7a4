/**
 * What one event loop of `num_workers` knows of the others, declared here as routes/deps.ts
 * declares the routes' needs: the server uses it, loops/ implements it.
 */

import type { DashboardHttp, EventWatcher } from "../dashboard/http.ts";
import type { LoopMetrics } from "../observability/metrics.ts";
import type { TrafficObserver } from "../observability/traffic-observer.ts";
import type { SharedLoad } from "../routing/shared-load.ts";

/** What one event loop knows of the others. */
export interface LoopShare {
  /** 0 for the main thread's loop. */
  readonly index: number;
  readonly shared: SharedLoad;
  /** This loop's own metrics, read whenever any loop renders the process's. */
  provideMetrics(values: () => Promise<LoopMetrics>): void;
  /** The process's metrics: every loop's values added up. */
  metricsText(): Promise<string>;
  /** The main loop: its dashboard, which hears every loop's traffic and answers for them all (loops/loop-dashboard.ts). */
  provideDashboard?(recorder: TrafficObserver, http: DashboardHttp, watcherOf: WatcherOf): void;
  /** An extra loop with the dashboard on: where its traffic goes instead of a recorder of its own. */
  readonly traffic?: TrafficObserver | undefined;
  /** An extra loop with the dashboard on: answers a dashboard request from the main loop. */
  readonly forwardDashboard?: DashboardForward | undefined;
}

/** Who opens a dashboard event stream, from its request and the client's address. */
export type WatcherOf = (request: Request, address: string | undefined) => EventWatcher;

/** An extra loop's dashboard request sent to the main loop, with the client's address. */
export type DashboardForward = (request: Request, address: string | undefined) => Promise<Response>;
