/**
 * Preloaded into a relay (`bun --preload bench/micro/heap-census.ts …`) by stream-objects.ts:
 * on SIGUSR2 it collects garbage and writes one line to stderr, `CENSUS {json}`, with the
 * JavaScript heap's object counts by type (bun:jsc heapStats).
 */

import { heapStats } from "bun:jsc";

process.on("SIGUSR2", () => {
  Bun.gc(true);
  const stats = heapStats();
  process.stderr.write(
    `CENSUS ${JSON.stringify({ heapSize: stats.heapSize, objectCount: stats.objectCount, counts: stats.objectTypeCounts })}\n`,
  );
});
