/**
 * The coordinator's Prometheus metrics (GET /metrics, GET /prometheus/metrics): placements by
 * role and status, finishes, leases that expired, the leases held and each worker's in-flight
 * legs. Upstream's coordinator has none (it logs latencies); these are ours, in a registry of
 * the coordinator's own (never prom-client's global one).
 */

import { Counter, Gauge, Registry } from "prom-client";
import type { Role } from "../config/types.ts";
import type { Placement } from "../routing/placement.ts";

export interface CoordinatorMetrics {
  placed(role: Role, status: number): void;
  finished(role: Role, success: boolean, known: boolean): void;
  expired(role: Role): void;
  text(): Promise<{ readonly contentType: string; readonly text: string }>;
}

export function coordinatorMetrics(placement: Placement, leases: () => number): CoordinatorMetrics {
  const registry = new Registry();
  const registers = [registry];
  const placements = new Counter({
    name: "disagg_proxy_coordinator_placements_total",
    help: "POST /select answers, by role and HTTP status",
    labelNames: ["role", "status"],
    registers,
  });
  const finishes = new Counter({
    name: "disagg_proxy_coordinator_finishes_total",
    help: "POST /finish calls, by role, success and whether they named a held placement",
    labelNames: ["role", "success", "known"],
    registers,
  });
  const expired = new Counter({
    name: "disagg_proxy_coordinator_leases_expired_total",
    help: "Placements released by the reservation timeout, with no /finish",
    labelNames: ["role"],
    registers,
  });
  registry.registerMetric(
    new Gauge({
      name: "disagg_proxy_coordinator_leases",
      help: "Placements held until their /finish",
      registers: [],
      collect() {
        this.set(leases());
      },
    }),
  );
  registry.registerMetric(
    new Gauge({
      name: "disagg_proxy_coordinator_worker_in_flight",
      help: "Legs held on each worker, by role",
      labelNames: ["role", "worker"],
      registers: [],
      collect() {
        this.reset();
        for (const role of ["context", "generation"] as const) {
          for (const worker of placement.pool.all(role))
            this.set({ role, worker: worker.origin }, placement.table.load(role, worker.origin));
        }
      },
    }),
  );
  return {
    placed: (role, status) => placements.inc({ role, status: String(status) }),
    finished: (role, success, known) => finishes.inc({ role, success: String(success), known: String(known) }),
    expired: (role) => expired.inc({ role }),
    text: async () => ({ contentType: registry.contentType, text: await registry.metrics() }),
  };
}
