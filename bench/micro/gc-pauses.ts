/**
 * How long the collector stalls the event loop, concurrent marking against stop-the-world: a heap
 * of LIVE (default 100,000) long-lived objects shaped like an open stream's state, steady garbage
 * made meanwhile, and a 1 ms interval timer whose longest gap is the stall. Run it both ways:
 * `npx bun bench/micro/gc-pauses.ts` and `BUN_JSC_useConcurrentGC=0 npx bun bench/micro/gc-pauses.ts`
 * (docs/performance.md#capacity: why the proxy keeps the runtime's concurrent marking).
 */

const LIVE = Number(process.env["LIVE"] ?? 100_000);
const SECONDS = Number(process.env["SECONDS"] ?? 8);

const live: unknown[] = Array.from({ length: LIVE }, (_, i) => ({
  leg: { ids: [i, i + 1], next: () => i, bytes: new Uint8Array(64) },
  name: `stream-${i}`,
  seen: new Map([[i, { at: i }]]),
  events: Array.from({ length: 20 }, (_event, k) => ({ k })),
}));

const gaps: number[] = [];
let last = performance.now();
const timer = setInterval(() => {
  const now = performance.now();
  gaps.push(now - last);
  last = now;
}, 1);

const started = performance.now();
const cpuBefore = process.cpuUsage();
let made = 0;
while (performance.now() - started < SECONDS * 1000) {
  for (let i = 0; i < 2000; i++) made += JSON.stringify({ i, list: Array.from({ length: 16 }, () => i) }).length;
  // Now and then a long-lived object is replaced, as streams end and others open.
  live[made % LIVE] = { replaced: Array.from({ length: 50 }, () => made) };
  await new Promise((resolve) => setImmediate(resolve));
}
clearInterval(timer);
const cpu = process.cpuUsage(cpuBefore);
gaps.sort((a, b) => a - b);
const at = (q: number): string => (gaps[Math.min(gaps.length - 1, Math.floor(gaps.length * q))] ?? 0).toFixed(1);
console.log(
  `${LIVE} live objects, concurrent GC ${process.env["BUN_JSC_useConcurrentGC"] === "0" ? "off" : "on"}: longest stall ${at(1)} ms, ` +
    `p99.9 ${at(0.999)} ms; CPU ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms; RSS ${(process.memoryUsage().rss / 1048576).toFixed(0)} MiB`,
);
