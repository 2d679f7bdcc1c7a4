/**
 * What one idle open stream holds in the JavaScript heap: the proxy against the floor relay
 * reading its stream in JS (bench/cluster/floor-relay.ts js), each holding STREAMS (default
 * 1,000) chat streams that the generation worker keeps silent after the first token.
 * Run: `npx bun bench/micro/stream-objects.ts` (builds nothing: the proxy runs from source;
 * `PROMPT_KB=16` pads each stream's prompt to about that many KB, to see whether an open stream
 * keeps its prompt). Prints, per relay, the heap per stream and the heap objects per stream by
 * type (census after − census before, garbage collected both times, ÷ streams) for the types
 * that hold at least 0.5 per stream.
 *
 * The heap rows: *live cells* are the objects' own bytes; *blocks* the heap's capacity, the
 * 16 KiB blocks that hold them. The collector does not move objects, so a block stays while
 * any cell in it lives: a stream's objects made among its request's garbage keep blocks that
 * are mostly free (RSS follows the blocks). Fewer kept cells free few blocks: the blocks follow
 * what the request allocated (stream-allocations.ts). *Native* is what objects report holding
 * outside the heap (the floor's 256 KiB stream buffer, reserved and barely touched).
 */

import { isJsonObject } from "../../src/json/json.ts";
import type { Service } from "../cluster/service.ts";
import { census, startCensusRelays, warmUp, type Census } from "./census-relays.ts";
import { OpenStreams } from "../load/open-streams.ts";
import { endpointOf, type Workload } from "../load/paths.ts";
import { chatStream } from "../load/workloads.ts";

const STREAMS = Number(process.env["STREAMS"] ?? 1000);
const PROMPT_KB = Number(process.env["PROMPT_KB"] ?? 0);
const SILENT = padded(chatStream(8, "gen.silence_ms=300000 gen.silence_after=1"), PROMPT_KB);

/** The workload with its prompt padded by about `kb` KB of text before the emulator's directives. */
function padded(workload: Workload, kb: number): Workload {
  if (kb <= 0) return workload;
  const messages = workload.body["messages"];
  const first = Array.isArray(messages) ? messages[0] : undefined;
  const content = isJsonObject(first) && typeof first["content"] === "string" ? first["content"] : "";
  return {
    ...workload,
    body: { ...workload.body, messages: [{ role: "user", content: `${"lorem ipsum ".repeat(Math.round((kb * 1024) / 12))}${content}` }] },
  };
}

async function perStream(service: Service): Promise<Record<string, number>> {
  await warmUp(service, 50, 1000);
  const before = await census(service, 0);
  const streams = new OpenStreams(endpointOf(service.url), SILENT);
  await streams.growTo(STREAMS);
  await streams.waitFor(2, 60_000);
  await Bun.sleep(500);
  const after = await census(service, 1);
  streams.closeAll();
  const delta = (of: (c: Census) => number): number => (of(after) - of(before)) / STREAMS;
  const out: Record<string, number> = {
    "heap bytes, live cells": delta((c) => c.heapSize - c.extraMemorySize),
    "heap bytes, blocks": delta((c) => c.heapCapacity - c.extraMemorySize),
    "native bytes reported": delta((c) => c.extraMemorySize),
  };
  for (const [type, count] of Object.entries(after.counts)) {
    const per = (count - (before.counts[type] ?? 0)) / STREAMS;
    if (per >= 0.5) out[type] = per;
  }
  return out;
}

async function main(): Promise<void> {
  const services: Service[] = [];
  try {
    const { proxy, floor } = await startCensusRelays("census", { BUN_CONFIG_MAX_HTTP_REQUESTS: "32768" }, services);
    const rows = { proxy: await perStream(proxy), "floor, JS stream": await perStream(floor) };
    const types = [...new Set(Object.values(rows).flatMap((row) => Object.keys(row)))].toSorted(
      (a, b) => (rows.proxy[b] ?? 0) - (rows.proxy[a] ?? 0),
    );
    process.stdout.write(
      `${STREAMS} idle streams${PROMPT_KB > 0 ? `, prompts padded by ${PROMPT_KB} KB` : ""}; per stream:\n| type | proxy | floor, JS stream |\n| --- | --- | --- |\n`,
    );
    for (const type of types)
      process.stdout.write(`| ${type} | ${(rows.proxy[type] ?? 0).toFixed(1)} | ${(rows["floor, JS stream"][type] ?? 0).toFixed(1)} |\n`);
  } finally {
    for (const service of services.toReversed()) await service.stop();
  }
}

await main();
