/**
 * What placing one disaggregated request costs the proxy with 8, 64 and 512 workers per role,
 * for every router. Run: `npx bun bench/micro/routing-cost.ts` (about a minute).
 *
 * One request: the context leg placed, released and reported finished, then the generation leg
 * likewise (Placement.place, the reservation's release, Placement.finished: what the pipeline
 * does around the worker calls). Prompts are 2,000 characters (a shared 1,000-character system
 * prompt, then text of their own) in 1,000 conversations named by id, so the conversation and
 * kv_cache_aware routers hold real state. Workers serve one model (a fleet of two models is
 * measured too: every placement then filters by model). kv_cache_aware's KV event polls are
 * answered at once with no events (its learning from them is not what is measured). Figures are
 * µs per request, the minimum over rounds (the machine is shared: the minimum is the least noisy).
 */

import { Placement, type PlacementConfig } from "../../src/routing/placement.ts";
import type { RoutingRequest } from "../../src/routing/routing-request.ts";
import type { RouterType } from "../../src/config/types.ts";

// A short run of one change: ROUTERS=load_balancing,conversation SIZES=512 SETUPS=one,two,reports.
const SIZES: readonly number[] = (process.env["SIZES"] ?? "8,64,512").split(",").map(Number);
const ALL_ROUTERS: readonly RouterType[] = ["round_robin", "load_balancing", "conversation", "kv_cache_aware"];
const ROUTERS = new Set(ALL_ROUTERS.filter((router) => process.env["ROUTERS"]?.split(",").includes(router) ?? true));
const SETUPS = process.env["SETUPS"]?.split(",");
const REQUESTS = Number(process.env["N"] ?? 4000);
const ROUNDS = Number(process.env["ROUNDS"] ?? 5);
const CONVERSATIONS = 1000;
const SYSTEM = "You are a careful assistant. ".repeat(35).slice(0, 1000);

const noEvents = (): Promise<Response> => Promise.resolve(new Response("[]", { headers: { "content-type": "application/json" } }));

function placement(router: RouterType, size: number, models: number, reports: boolean): Placement {
  const origins = (role: string): string[] => Array.from({ length: size }, (_, i) => `http://${role}-${i}:8000`);
  const config: PlacementConfig = {
    contextServers: origins("ctx"),
    generationServers: origins("gen"),
    contextRouter: router,
    generationRouter: router,
    ...(reports ? { workerLoadIntervalMs: 1000 } : {}),
  };
  const p = new Placement(config, { fetch: noEvents });
  for (const role of ["context", "generation"] as const) {
    p.pool.all(role).forEach((worker, i) => {
      p.pool.learnModels(worker.origin, [`model-${i % models}`]);
      worker.ready = true;
      p.loads?.record(worker.origin, { running: i % 7, waiting: i % 3, kvUtilization: 0.5 });
    });
  }
  return p;
}

function requests(models: number): RoutingRequest[] {
  return Array.from({ length: CONVERSATIONS }, (_, i) => {
    const own = `conversation ${i} asks about ${"topic ".repeat(200)}`.slice(0, 1000);
    return { conversationId: `c${i}`, promptText: SYSTEM + own, promptTokenIds: undefined, model: `model-${i % models}` };
  });
}

async function round(p: Placement, routed: readonly RoutingRequest[]): Promise<number> {
  const pending: Promise<void>[] = [];
  const start = Bun.nanoseconds();
  for (let i = 0; i < REQUESTS; i++) {
    const routing = routed[i % routed.length]!;
    for (const role of ["context", "generation"] as const) {
      const placed = p.place({ role, requestKey: BigInt(i), exclude: undefined, avoid: [], routing });
      placed.reservation.release();
      pending.push(p.finished(role, placed.worker.origin, routing, true));
    }
  }
  const elapsed = Bun.nanoseconds() - start;
  await Promise.all(pending);
  return elapsed / REQUESTS / 1000;
}

async function measure(router: RouterType, size: number, models: number, reports: boolean): Promise<number> {
  const p = placement(router, size, models, reports);
  const routed = requests(models);
  await round(p, routed); // warm-up: the routers' state fills, the code is compiled
  let best = Number.POSITIVE_INFINITY;
  for (let r = 0; r < ROUNDS; r++) best = Math.min(best, await round(p, routed));
  return best;
}

const rows: string[] = [
  `| router | setup | ${SIZES.map((size) => `${size} per role`).join(" | ")} | last ÷ first |`,
  `|---|---|${SIZES.map(() => "---|").join("")}---|`,
];
const setups: readonly { key: string; name: string; models: number; reports: boolean; routers: readonly RouterType[] }[] = [
  { key: "one", name: "one model", models: 1, reports: false, routers: ALL_ROUTERS },
  { key: "two", name: "two models", models: 2, reports: false, routers: ALL_ROUTERS },
  { key: "reports", name: "one model, worker load reports", models: 1, reports: true, routers: ["load_balancing", "kv_cache_aware"] },
];
for (const setup of setups) {
  if (SETUPS !== undefined && !SETUPS.includes(setup.key)) continue;
  for (const router of setup.routers.filter((name) => ROUTERS.has(name))) {
    const us: number[] = [];
    for (const size of SIZES) us.push(await measure(router, size, setup.models, setup.reports));
    rows.push(
      `| ${router} | ${setup.name} | ${us.map((v) => v.toFixed(2)).join(" | ")} | ${((us.at(-1) ?? 0) / (us[0] ?? 1)).toFixed(1)} × |`,
    );
    console.error(rows.at(-1));
  }
}
console.log(`µs per request (both legs placed, released and finished), min of ${ROUNDS} rounds of ${REQUESTS}:\n`);
console.log(rows.join("\n"));
