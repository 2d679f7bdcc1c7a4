/**
 * `bun bench/faults/handoff-leave.ts [--n 20]`: hand-offs left on the context worker by clients
 * that leave, in-process (one emulated context and generation worker, the proxy on port 0):
 *
 * - at-handoff: the client leaves as soon as the context worker finished its phase (the
 *   generation worker queues each request 200 ms before pulling its KV);
 * - during-prefill: the client leaves at a uniformly random moment of a 300 ms prefill.
 *
 * Prints, per scenario, the hand-offs still held 1 s after the client left, and the context
 * worker's time spent on prefills whose client had already left.
 */
import { parseArgs } from "node:util";
import { DEFAULTS, type ProxyConfig } from "../../src/config/types.ts";
import { startEmulatedWorker } from "../../src/emulator/index.ts";
import { memoryLogger } from "../../src/observability/logger.ts";
import { startProxy } from "../../src/server/serve.ts";

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { n: { type: "string", default: "20" } } });
const n = Number(values.n);

async function scenario(
  name: string,
  content: string,
  leaveAt: (i: number) => "handoff" | number,
): Promise<Record<string, number | string>> {
  const context = startEmulatedWorker({ role: "context" });
  const generation = startEmulatedWorker({ role: "generation" });
  const config: ProxyConfig = {
    ...DEFAULTS,
    host: "127.0.0.1",
    port: 0,
    contextServers: [context.url],
    generationServers: [generation.url],
    nodeId: 3,
    configFile: undefined,
    serverStartPollMs: 20,
  };
  const proxy = startProxy(config, memoryLogger(), "bench");
  await proxy.waitForWorkers();
  let wastedMs = 0;
  for (let i = 0; i < n; i++) {
    const client = new AbortController();
    const body = JSON.stringify({
      model: "m",
      messages: [{ role: "user", content: `${content} #${i}` }],
      max_tokens: 8,
      stream: i % 2 === 1,
    });
    const reply = fetch(`${proxy.url.origin}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      signal: client.signal,
    }).catch(() => undefined);
    const when = leaveAt(i);
    const seq = context.requests.at(-1)?.seq ?? -1;
    const record = context.waitFor((r) => r.seq > seq && r.phase === "context", 2000).catch(() => undefined);
    if (when === "handoff") await context.waitFor((r) => r.seq > seq && r.phase === "context" && r.status === "finished");
    else await Bun.sleep(when);
    const leftAt = performance.now();
    client.abort();
    await reply;
    const ctx = await record;
    if (ctx === undefined) continue;
    await context.waitFor((r) => r === ctx && r.status !== "running", 10_000);
    if (ctx.status === "finished") wastedMs += Math.max(0, performance.now() - leftAt);
  }
  await Bun.sleep(1000);
  const held = context.heldKvHandoffs();
  await proxy.stop();
  await Promise.all([context.stop(), generation.stop()]);
  return { scenario: name, clients: n, held_after_1s: held, context_ms_after_leaving: Math.round(wastedMs) };
}

const random = (seed: number) => () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const next = random(7);
const results = [
  await scenario("at-handoff", "leave [[emu gen.queue_ms=200 tokens=4]]", () => "handoff"),
  await scenario("during-prefill", "leave [[emu ctx.prefill_ms=300 gen.queue_ms=200 tokens=4]]", () => Math.round(next() * 320)),
];
for (const result of results) console.log(JSON.stringify(result));
