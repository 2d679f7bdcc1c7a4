import { describe, expect, test } from "bun:test";
import { Counter, Histogram, Registry } from "prom-client";
import { heldCount, HeldCounts, heldObservations, HeldObservationsBy } from "./held-metrics.ts";

const BUCKETS = [0.001, 0.01, 0.1, 1];

function histogramIn(registry: Registry, labelNames: string[] = []): Histogram {
  return new Histogram({ name: "latency_seconds", help: "h", buckets: BUCKETS, labelNames, registers: [registry] });
}

function counterIn(registry: Registry, labelNames: string[] = []): Counter {
  return new Counter({ name: "things_total", help: "c", labelNames, registers: [registry] });
}

describe("held metrics", () => {
  test("held counts reach the counter only when handed on, as the same exposition as counting each", async () => {
    const direct = new Registry();
    const directCounter = counterIn(direct, ["route", "outcome"]);
    const plain = counterIn(new Registry());
    const viaHeld = new Registry();
    const held = new HeldCounts(counterIn(viaHeld, ["route", "outcome"]), "route", "outcome");
    const count = heldCount(plain);
    const events: [string, string][] = [
      ["/a", "ok"],
      ["/b", "ok"],
      ["/a", "worker_error"],
      ["/a", "ok"],
    ];
    for (const [route, outcome] of events) {
      directCounter.inc({ route, outcome });
      held.inc(route, outcome);
      count.inc();
    }
    expect(await viaHeld.metrics()).not.toBe(await direct.metrics());
    held.flush();
    count.flush();
    expect(await viaHeld.metrics()).toBe(await direct.metrics());
    expect((await plain.get()).values[0]?.value).toBe(4);
    held.flush();
    expect(await viaHeld.metrics()).toBe(await direct.metrics());
  });

  test("held observations give the histogram the same buckets, sum and count as observing each", async () => {
    const direct = new Registry();
    const directHistogram = histogramIn(direct);
    const directByRoute = new Histogram({ name: "e2e_seconds", help: "e", buckets: BUCKETS, labelNames: ["route"], registers: [direct] });
    const viaHeld = new Registry();
    const held = heldObservations(histogramIn(viaHeld));
    const byRoute = new HeldObservationsBy(
      new Histogram({ name: "e2e_seconds", help: "e", buckets: BUCKETS, labelNames: ["route"], registers: [viaHeld] }),
      "route",
    );
    for (const [i, value] of [0.0004, 0.003, 0.05, 0.5, 7, 0.003].entries()) {
      directHistogram.observe(value);
      held.observe(value);
      const route = i % 2 === 0 ? "/b" : "/a";
      directByRoute.observe({ route }, value);
      byRoute.observe(route, value);
    }
    held.flush();
    byRoute.flush();
    expect(await viaHeld.metrics()).toBe(await direct.metrics());
  });

  test("a histogram takes what is held once 256 observations wait, so nothing held grows without a scrape", async () => {
    const histogram = histogramIn(new Registry());
    const held = heldObservations(histogram);
    for (let i = 0; i < 255; i++) held.observe(0.002);
    const countOf = async (): Promise<number | undefined> =>
      (await histogram.get()).values.find((value) => value.metricName === "latency_seconds_count")?.value;
    expect(await countOf()).toBe(0);
    held.observe(0.002);
    expect(await countOf()).toBe(256);
  });
});
