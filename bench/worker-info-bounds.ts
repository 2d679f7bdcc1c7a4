/**
 * `bun bench/worker-info-bounds.ts [ROOT]`: what a hostile worker's answers to the proxy's own
 * reads cost the proxy (issue #24): a worker whose /server_info is 32 MiB of `[` (chunked, no
 * length) and whose /version is a 4 MiB string joins a proxy started from ROOT's src/main.ts
 * (default: this checkout; give another checkout to measure an older commit). Reports the
 * proxy's peak RSS (VmHWM), the slowest /livez answer while /livez is polled back to back
 * during the join, how long the join took, and the size of one /metrics scrape; the same
 * with a well-behaved worker as the baseline. About 20 s.
 */

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../test/support/etcd.ts";
import { infoWorker } from "../test/support/info-worker.ts";

const ROOT = process.argv[2] ?? join(import.meta.dir, "..");

async function measure(hostile: boolean): Promise<Record<string, number>> {
  const target = infoWorker(hostile);
  const port = freePort();
  const origin = `http://127.0.0.1:${target.server.port}`;
  const proxy = Bun.spawn(
    [
      process.execPath,
      join(ROOT, "src", "main.ts"),
      "serve",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--context",
      origin,
      "--generation",
      origin,
      "--log-level",
      "error",
    ],
    { stdout: "ignore", stderr: "ignore" },
  );
  const url = `http://127.0.0.1:${port}`;
  let worst = 0;
  let polls = 0;
  let releasedAt = 0;
  try {
    for (;;) {
      const started = performance.now();
      const live = await fetch(`${url}/livez`).catch(() => undefined);
      if (live === undefined) {
        await Bun.sleep(20);
        continue;
      }
      await live.arrayBuffer();
      if (releasedAt > 0) worst = Math.max(worst, performance.now() - started);
      if (++polls === 10) {
        releasedAt = performance.now();
        target.release();
      }
      if ((await fetch(`${url}/health`)).status === 200) break;
    }
    const joinMs = performance.now() - releasedAt;
    // A second of quiet after the join: the collector's work on what the join left shows here.
    const quietUntil = performance.now() + 1000;
    while (performance.now() < quietUntil) {
      const started = performance.now();
      await (await fetch(`${url}/livez`)).arrayBuffer();
      worst = Math.max(worst, performance.now() - started);
    }
    const peakKiB = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${proxy.pid}/status`, "utf8"))?.[1]);
    const metricsBytes = (await (await fetch(`${url}/metrics`)).arrayBuffer()).byteLength;
    return {
      peakRssMiB: Math.round(peakKiB / 102.4) / 10,
      worstLivezMs: Math.round(worst * 10) / 10,
      joinMs: Math.round(joinMs),
      metricsBytes,
    };
  } finally {
    proxy.kill("SIGKILL");
    await proxy.exited;
    await target.server.stop(true);
  }
}

console.log(`proxy from ${ROOT}`);
for (const hostile of [false, true, false, true]) {
  console.log(
    hostile ? "hostile worker (32 MiB /server_info, 4 MiB /version):" : "well-behaved worker:",
    JSON.stringify(await measure(hostile)),
  );
}
