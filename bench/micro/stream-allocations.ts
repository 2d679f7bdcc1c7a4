/**
 * What opening one stream allocates in the JavaScript heap, by type: the proxy against the floor
 * relay reading its stream in JS (bench/cluster/floor-relay.ts js). Each round opens ROUND
 * (default 20) chat streams that the generation worker keeps silent after the first token, with
 * a heap census before and after and no collection asked for (heap-census.ts, HEAP_CENSUS_GC=0):
 * the counts' growth is what the round allocated. A round in which the collector ran (a count
 * fell) is left out; the figure is the median of the others, per stream.
 * Run: `npx bun bench/micro/stream-allocations.ts` (the proxy from source; ~30 s).
 *
 * Why it matters: an idle stream's heap blocks follow what its request allocated, not only what
 * it keeps (stream-objects.ts). The collector does not move objects, so the cells a stream keeps
 * pin the blocks its request's garbage was made in; 300 more small objects, closures and strings
 * made per stream (~40 KB, none kept) raised its heap blocks from 21.5 to 41.6 KB at 1,000 streams.
 */

import type { Service } from "../cluster/service.ts";
import { census, startCensusRelays, warmUp } from "./census-relays.ts";
import { OpenStreams } from "../load/open-streams.ts";
import { endpointOf } from "../load/paths.ts";
import { chatStream } from "../load/workloads.ts";

const ROUND = Number(process.env["ROUND"] ?? 20);
const ROUNDS = 7;
const SILENT = chatStream(8, "gen.silence_ms=300000 gen.silence_after=1");

function median(values: readonly number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/** Allocations per opened stream by type (median over the rounds without a collection). */
async function perStream(service: Service): Promise<Record<string, number>> {
  await warmUp(service, 200, 500);
  const byType: Record<string, number[]> = {};
  let clean = 0;
  for (let round = 0; round < ROUNDS; round++) {
    // oxlint-disable-next-line no-await-in-loop -- rounds run one after the other, each between two censuses
    const before = await census(service, round * 2);
    const streams = new OpenStreams(endpointOf(service.url), SILENT);
    // oxlint-disable-next-line no-await-in-loop -- as above
    await streams.growTo(ROUND);
    // oxlint-disable-next-line no-await-in-loop -- as above
    await streams.waitFor(2, 20_000);
    // oxlint-disable-next-line no-await-in-loop -- as above
    const after = await census(service, round * 2 + 1);
    streams.closeAll();
    // oxlint-disable-next-line no-await-in-loop -- the closed streams' ends run before the next round
    await Bun.sleep(300);
    if (Object.entries(before.counts).some(([type, count]) => (after.counts[type] ?? 0) < count)) continue;
    clean++;
    for (const [type, count] of Object.entries(after.counts)) (byType[type] ??= []).push((count - (before.counts[type] ?? 0)) / ROUND);
  }
  if (clean === 0) throw new Error(`${service.name}: the collector ran in every round`);
  const out: Record<string, number> = {};
  for (const [type, values] of Object.entries(byType)) out[type] = median(values);
  out["all cells"] = Object.values(out).reduce((sum, value) => sum + value, 0);
  return out;
}

async function main(): Promise<void> {
  const services: Service[] = [];
  try {
    const { proxy, floor } = await startCensusRelays(
      "allocations",
      { BUN_CONFIG_MAX_HTTP_REQUESTS: "32768", HEAP_CENSUS_GC: "0" },
      services,
    );
    const rows = { proxy: await perStream(proxy), "floor, JS stream": await perStream(floor) };
    const types = Object.keys(rows.proxy)
      .filter((type) => (rows.proxy[type] ?? 0) >= 0.5 || (rows["floor, JS stream"][type] ?? 0) >= 0.5)
      .toSorted((a, b) => (rows.proxy[b] ?? 0) - (rows.proxy[a] ?? 0));
    process.stdout.write(
      `cells allocated per opened stream (${ROUND} streams a round):\n| type | proxy | floor, JS stream |\n| --- | --- | --- |\n`,
    );
    for (const type of types)
      process.stdout.write(`| ${type} | ${(rows.proxy[type] ?? 0).toFixed(1)} | ${(rows["floor, JS stream"][type] ?? 0).toFixed(1)} |\n`);
  } finally {
    for (const service of services.toReversed()) await service.stop();
  }
}

await main();
