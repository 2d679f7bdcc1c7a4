/**
 * `bun bench/cluster-store-full.ts`: the HTTP cluster storage filled to its bound with 64 KiB
 * values (issue #24): how many keys it takes, the size and time of one GET /get_prefix over
 * all of it, and the process's RSS (proxy and this client in one process). Before the byte
 * bound, 10,000 keys × 64 KiB held ~715 MB and one get_prefix answered 655 MB in 1.85 s.
 */

import { startCluster } from "../test/support/cluster.ts";

await using cluster = await startCluster({
  contexts: [],
  generations: [],
  config: {
    discovery: {
      kind: "cluster",
      storage: "http",
      endpoint: "http://127.0.0.1:0",
      clusterName: "bench",
      minimalContext: 1,
      minimalGeneration: 1,
      leaseTtlMs: 2000,
    },
    serverStartTimeoutMs: 50,
    logLevel: "error",
  },
});
const value = "v".repeat(64 * 1024 - 64);
let keys = 0;
let status = 200;
while (status === 200) {
  const response = await fetch(`${cluster.url}/set`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ key: `/bench/${keys}`, value }),
  });
  status = response.status;
  await response.arrayBuffer();
  if (status === 200) keys++;
}
for (let round = 0; round < 3; round++) {
  const started = performance.now();
  const bytes = (await (await fetch(`${cluster.url}/get_prefix?key_prefix=/`)).arrayBuffer()).byteLength;
  console.log(
    JSON.stringify({
      keysHeld: keys,
      refusedWith: status,
      getPrefixBytes: bytes,
      getPrefixMs: Math.round(performance.now() - started),
      rssMiB: Math.round(process.memoryUsage().rss / 1048576),
    }),
  );
}
