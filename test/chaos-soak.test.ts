import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runChaosSoak } from "../bench/soak/chaos-soak.ts";

const ROOT = join(import.meta.dir, "..");

describe("chaos soak (the 60-second version of npm run soak)", () => {
  test("after a minute of every route under worker kills, stops, wedges, connection resets, SIGHUP, client exits and bad bodies, nothing is left behind", async () => {
    const report = await runChaosSoak({
      seconds: 60,
      clients: 8,
      faultEverySeconds: 6,
      idleTimeoutS: 2,
      warmupShare: 0.2,
      seed: 17,
      logDir: mkdtempSync(join(tmpdir(), "chaos-soak-")),
      command: [process.execPath, join(ROOT, "src", "main.ts")],
    });
    expect(report.failures).toEqual([]);
    // The run did what it claims: load on every route, every kind of fault, refusals answered.
    expect(report.requests).toBeGreaterThan(100);
    expect(report.faults.some((f) => f.startsWith("SIGKILL"))).toBe(true);
    expect(report.faults.some((f) => f.startsWith("SIGSTOP"))).toBe(true);
    expect(report.faults).toContain("SIGHUP proxy");
    expect(report.faults.some((f) => f.startsWith("wedged"))).toBe(true);
    expect(Object.keys(report.byKind["bad: nested 100,000 deep"] ?? {})).toEqual(["400"]);
    // Connections broken under a client are rare (a reused keep-alive connection closed as idle).
    const broken = Object.values(report.byKind).reduce((n, tally) => n + (tally["broken"] ?? 0), 0);
    expect(broken).toBeLessThanOrEqual(report.requests / 100);
  }, 180_000);
});
