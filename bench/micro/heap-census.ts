/**
 * Preloaded into a relay (`bun --preload bench/micro/heap-census.ts …`) by stream-objects.ts:
 * on SIGUSR2 it collects garbage and writes one line to stderr, `CENSUS {json}`, with the
 * JavaScript heap's object counts by type, its size, its capacity (the 16 KiB blocks it holds,
 * live cells or not) and the native memory its objects report (bun:jsc heapStats).
 * With HEAP_CENSUS_GC=0 it collects nothing first: between two such censuses with no collection
 * between, the counts' growth is what was allocated (stream-allocations.ts).
 */

import { heapStats } from "bun:jsc";

const COLLECT = process.env["HEAP_CENSUS_GC"] !== "0";

process.on("SIGUSR2", () => {
  if (COLLECT) Bun.gc(true);
  const stats = heapStats();
  process.stderr.write(
    `CENSUS ${JSON.stringify({
      heapSize: stats.heapSize,
      heapCapacity: stats.heapCapacity,
      extraMemorySize: stats.extraMemorySize,
      objectCount: stats.objectCount,
      counts: stats.objectTypeCounts,
    })}\n`,
  );
});
