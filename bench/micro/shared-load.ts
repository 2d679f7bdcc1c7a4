/**
 * Issue #29, num_workers: what one placement's reservation costs when the event loops share
 * the load (a) in shared memory with atomics (src/routing/shared-load.ts) or (b) by asking one
 * owner thread by message, as upstream's fleet asks its coordinator (`POST /select`, `/finish`).
 * Also (c) this loop's own table, the single-loop baseline. Each figure: a reserve and its
 * release, one at a time (the owner answers each question before the next), min of 7 rounds.
 * Run: `bun bench/micro/shared-load.ts` (a few seconds).
 */

import { Worker } from "node:worker_threads";
import { ReservationTable } from "../../src/routing/reservations.ts";
import { SharedLoad } from "../../src/routing/shared-load.ts";

const ROUNDS = 7;
const WORKERS = ["http://10.0.0.1:8001", "http://10.0.0.2:8001", "http://10.0.0.3:8001", "http://10.0.0.4:8001"];

function tableRound(table: ReservationTable, calls: number): number {
  const started = performance.now();
  for (let i = 0; i < calls; i++) {
    const origin = WORKERS[i % WORKERS.length] ?? "";
    table.tryReserve(BigInt(i), "generation", origin, 100, 64)?.release();
  }
  return ((performance.now() - started) * 1e6) / calls;
}

/** The owner: a Worker holding the table, answering "reserve" and "release" messages. */
const OWNER = `
  const { parentPort } = require("node:worker_threads");
  const load = new Map();
  parentPort.on("message", ([kind, id, origin]) => {
    const n = load.get(origin) ?? 0;
    load.set(origin, kind === "reserve" ? n + 1 : n - 1);
    parentPort.postMessage([id, true]);
  });
`;

async function ownerRound(owner: Worker, calls: number): Promise<number> {
  const pending = new Map<number, () => void>();
  owner.removeAllListeners("message");
  owner.on("message", ([id]: [number, boolean]) => {
    const resolve = pending.get(id);
    pending.delete(id);
    resolve?.();
  });
  const ask = (kind: string, id: number, origin: string): Promise<void> =>
    new Promise((resolve) => {
      pending.set(id, resolve);
      // oxlint-disable-next-line unicorn/require-post-message-target-origin -- a worker thread's port, not a window: no origin
      owner.postMessage([kind, id, origin]);
    });
  const started = performance.now();
  for (let i = 0; i < calls; i++) {
    const origin = WORKERS[i % WORKERS.length] ?? "";
    // oxlint-disable-next-line no-await-in-loop -- one placement at a time is what is measured
    await ask("reserve", 2 * i, origin);
    // oxlint-disable-next-line no-await-in-loop -- as above
    await ask("release", 2 * i + 1, origin);
  }
  return ((performance.now() - started) * 1e6) / calls;
}

async function main(): Promise<void> {
  const local = new ReservationTable();
  const shared = new ReservationTable(new SharedLoad());
  const owner = new Worker(OWNER, { eval: true });
  const best = { local: Infinity, shared: Infinity, owner: Infinity };
  for (let round = 0; round < ROUNDS; round++) {
    best.local = Math.min(best.local, tableRound(local, 200_000));
    best.shared = Math.min(best.shared, tableRound(shared, 200_000));
    // oxlint-disable-next-line no-await-in-loop -- rounds one after another
    best.owner = Math.min(best.owner, await ownerRound(owner, 5_000));
  }
  await owner.terminate();
  process.stdout.write(
    `reserve + release, ns per placement (min of ${ROUNDS} rounds): this loop's table ${best.local.toFixed(0)}, shared memory ${best.shared.toFixed(0)}, asking an owner thread ${best.owner.toFixed(0)}\n`,
  );
}

await main();
