/**
 * One event loop of test/shared-load.test.ts, run as a Bun Worker: a Placement over the
 * shared load the test hands it, which waits at a barrier with the other loops, then places
 * its share of the requests as fast as it can (holding every reservation), reports what it
 * placed, and releases everything when told.
 */

import { parentPort, workerData } from "node:worker_threads";
import { Placement } from "../../src/routing/placement.ts";
import type { Reservation } from "../../src/routing/reservations.ts";
import { SharedLoad } from "../../src/routing/shared-load.ts";
import type { RouterType } from "../../src/config/types.ts";

export interface LoopInput {
  readonly buffer: SharedArrayBuffer;
  /** Int32 barrier word: the loops start together when it turns 1. */
  readonly barrier: SharedArrayBuffer;
  readonly requests: number;
  readonly limit: number;
  readonly generation: readonly string[];
  readonly router: RouterType;
}

export interface LoopReport {
  readonly placed: Readonly<Record<string, number>>;
  readonly refused: number;
  readonly maxSeen: number;
}

const input = workerData as LoopInput;
const shared = new SharedLoad(input.buffer);
const placement = new Placement(
  {
    contextServers: ["http://c:1"],
    generationServers: [...input.generation],
    contextRouter: "round_robin",
    generationRouter: input.router,
    maxInflightPerWorker: input.limit,
  },
  { shared },
);
for (const worker of placement.pool.all("generation")) worker.ready = true;
const held: Reservation[] = [];

const port = parentPort;
if (port === null) throw new Error("placing-loop.ts runs as a Worker");
port.on("message", (message: string) => {
  if (message !== "release") return;
  for (const reservation of held) reservation.release();
  port.postMessage("released");
});

const gate = new Int32Array(input.barrier);
Atomics.add(gate, 1, 1);
Atomics.wait(gate, 0, 0);
const placed: Record<string, number> = {};
let refused = 0;
let maxSeen = 0;
for (let i = 0; i < input.requests; i++) {
  try {
    const { worker, reservation } = placement.place({ role: "generation", requestKey: BigInt(i), exclude: undefined, avoid: [] });
    held.push(reservation);
    placed[worker.origin] = (placed[worker.origin] ?? 0) + 1;
    maxSeen = Math.max(maxSeen, placement.table.load("generation", worker.origin));
  } catch {
    refused++;
  }
}
port.postMessage({ placed, refused, maxSeen } satisfies LoopReport);
