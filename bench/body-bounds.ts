/**
 * `bun bench/body-bounds.ts`: what the client-body bounds cost and what they hold.
 *
 * 1. The shape guard's cost per request (a typical 2 KB chat body, and a 200 KB one), in µs.
 * 2. The worst 32 MiB bodies: how long the guard takes to refuse them (in total, and the
 *    longest single slice the event loop is held for), and how long JSON.parse alone would take.
 * 3. Peak RSS growth of a proxy process (VmHWM, a fresh proxy per shape) for the worst shapes
 *    it accepts, against the body's size.
 */

import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JSON_SHAPE_LIMITS, JsonShapeGuard } from "../src/json/json-shape.ts";
import { spawnService, type Service, serveArgs } from "./cluster/service.ts";

const MIB = 1024 * 1024;
const SLICE = MIB;
const encoder = new TextEncoder();
const ROOT = join(import.meta.dir, "..");

function guardMicros(body: Uint8Array, rounds: number): number {
  for (let i = 0; i < 200; i++) new JsonShapeGuard(JSON_SHAPE_LIMITS, body.length).feed(body);
  const started = performance.now();
  for (let i = 0; i < rounds; i++) {
    const guard = new JsonShapeGuard(JSON_SHAPE_LIMITS, body.length);
    guard.feed(body);
    guard.finish(body.length);
  }
  return ((performance.now() - started) * 1000) / rounds;
}

/** Feeds the body in the reader's 1 MiB slices: total ms, longest slice ms, the verdict. */
function refuse(body: Uint8Array): { totalMs: number; longestSliceMs: number; verdict: string } {
  const guard = new JsonShapeGuard(JSON_SHAPE_LIMITS, body.length);
  let longest = 0;
  const started = performance.now();
  let verdict = "accepted";
  for (let at = 0; at < body.length; at += SLICE) {
    const sliceStarted = performance.now();
    const problem = guard.feed(body.subarray(at, at + SLICE));
    longest = Math.max(longest, performance.now() - sliceStarted);
    if (problem) {
      verdict = `${problem.bound} > ${problem.limit}`;
      break;
    }
  }
  if (verdict === "accepted") verdict = guard.finish(body.length)?.bound ?? "accepted";
  return { totalMs: round(performance.now() - started), longestSliceMs: round(longest), verdict };
}

function parseMs(body: Uint8Array): number | string {
  const started = performance.now();
  try {
    JSON.parse(new TextDecoder().decode(body));
  } catch (error) {
    return `${error instanceof Error ? error.name : "error"} after ${round(performance.now() - started)} ms`;
  }
  return round(performance.now() - started);
}

const chat = (content: string, extra = ""): string =>
  `{"model":"m","max_tokens":4,"messages":[{"role":"user","content":${JSON.stringify(content)}}]${extra}}`;

function worstBodies(size: number): Record<string, Uint8Array> {
  const filler = "x".repeat(size - 200_000);
  return {
    "deep nesting after 31.8 MiB of string": encoder.encode(chat(filler, `,"x":${"[".repeat(100_000)}${"]".repeat(100_000)}`)),
    "32 MiB of 1-key objects": encoder.encode(
      `{"model":"m","messages":[${Array.from({ length: Math.floor(size / 8) }, () => '{"a":1}').join(",")}]}`,
    ),
    "32 MiB of numbers": encoder.encode(`{"model":"m","prompt":[${"1,".repeat(size / 2 - 8)}1]}`),
    "32 MiB of escaped quotes in a string": encoder.encode(chat('"'.repeat(size / 2 - 100))),
    "32 MiB of whitespace": encoder.encode(chat("x", " ".repeat(size - 200))),
  };
}

function messages(count: number, length: number): string {
  return `{"model":"m","max_tokens":4,"messages":[${Array.from({ length: count }, (_, i) => `{"role":"${i % 2 ? "assistant" : "user"}","content":${JSON.stringify(`m${i} `.padEnd(length, "x"))}}`).join(",")}]}`;
}

/** Bodies the proxy accepts, about `size` bytes each, in the shapes that cost most memory. */
function acceptedShapes(size: number): Record<string, string> {
  // Each key and its number weigh 1.25: just under the floor.
  const keys = Math.floor(JSON_SHAPE_LIMITS.minValues * 0.75);
  return {
    "one long ASCII string": chat("x".repeat(size)),
    "one long non-ASCII string": chat("é世".repeat(Math.floor(size / 5))),
    "ASCII with one CJK character": chat(`世${"x".repeat(size)}`),
    // 5 values a message (object, 2 keys, 2 strings) in ~340 bytes: just under size/64.
    "many messages at the value bound": messages(Math.floor(size / 340), 300),
    "token ids at the bound (completions prompt)": `{"model":"m","max_tokens":4,"prompt":[${Array.from({ length: Math.floor(JSON_SHAPE_LIMITS.minValues * 3.9) }, (_, i) => String(100_000 + (i % 99_999))).join(",")}]}`,
    "49,000 keys with numbers (the floor)": chat("x", `,"extra":{${Array.from({ length: keys }, (_, i) => `"k${i}":${i}`).join(",")}}`),
    "Anthropic /v1/messages, one long ASCII string": chat("x".repeat(size)),
    "nesting 120 deep, repeated": chat(
      "x",
      `,"x":[${Array.from({ length: Math.floor(size / 9000) }, () => `${"[".repeat(119)}"${"z".repeat(8700)}"${"]".repeat(119)}`).join(",")}]`,
    ),
  };
}

function hwmBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1] ?? 0) * 1024;
}

interface Growth {
  readonly bodyMiB: number;
  readonly status: number;
  /** Each run's VmHWM growth, MiB (a fresh proxy per run). */
  readonly growthMiB: number[];
  readonly ratio: number[];
}

/** Ordinary requests first, on every route the shapes use: the growth measured is the body's, not first-use JIT and heap. */
async function warm(url: string): Promise<void> {
  for (let i = 0; i < 5; i++) {
    for (const [path, body] of [
      ["/v1/chat/completions", chat(`warm ${i} `.repeat(200))],
      ["/v1/messages", chat(`warm ${i} `.repeat(200))],
      ["/v1/completions", `{"model":"m","max_tokens":4,"prompt":${JSON.stringify(`warm ${i} `.repeat(200))}}`],
      ["/v1/completions", `{"model":"m","max_tokens":4,"prompt":[${Array.from({ length: 2000 }, (_, t) => 1000 + t).join(",")}]}`],
    ] as const) {
      await (await fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body })).arrayBuffer();
    }
  }
}

/** The body in 64 KiB pieces with no declared length (Transfer-Encoding: chunked on the wire). */
function chunkedStream(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) controller.close();
      else controller.enqueue(bytes.slice(at, (at += 64 * 1024)));
    },
  });
}

async function peakGrowth(shapes: Record<string, string>, runs: number, chunked: boolean): Promise<Record<string, Growth>> {
  const logDir = mkdtempSync(join(tmpdir(), "body-bounds-"));
  const bun = [process.execPath, join(ROOT, "src", "main.ts")];
  const out: Record<string, Growth> = {};
  const worker = async (role: string): Promise<Service> =>
    spawnService({ name: `bb-${role}`, cmd: [...bun, "worker", "--role", role, "--port", "0", "--host", "127.0.0.1"], logDir });
  const context = await worker("context");
  const generation = await worker("generation");
  try {
    for (const [name, body] of Object.entries(shapes)) {
      const bytes = encoder.encode(body);
      const path = name.startsWith("Anthropic") ? "/v1/messages" : body.includes('"prompt"') ? "/v1/completions" : "/v1/chat/completions";
      const growth: Growth = { bodyMiB: round(bytes.length / MIB), status: 0, growthMiB: [], ratio: [] };
      for (let run = 0; run < runs; run++) {
        const proxy = await spawnService({
          name: "bb-proxy",
          cmd: [...bun, ...serveArgs(context.url, generation.url), "--max-body-bytes", String(32 * MIB), "--log-level", "warn"],
          logDir,
        });
        try {
          while (
            (await fetch(`${proxy.url}/health`).then(
              (r) => r.status,
              () => 0,
            )) !== 200
          )
            await Bun.sleep(50);
          await warm(proxy.url);
          await Bun.sleep(200);
          const before = hwmBytes(proxy.pid);
          const sent = chunked ? { body: chunkedStream(bytes), duplex: "half" } : { body: bytes };
          const response = await fetch(`${proxy.url}${path}`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            ...sent,
          } as RequestInit);
          await response.arrayBuffer();
          const grown = hwmBytes(proxy.pid) - before;
          Object.assign(growth, { status: response.status });
          growth.growthMiB.push(round(grown / MIB));
          growth.ratio.push(round(grown / bytes.length));
        } finally {
          await proxy.stop();
        }
      }
      out[name] = growth;
    }
  } finally {
    await context.stop();
    await generation.stop();
  }
  return out;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/**
 * `bun bench/body-bounds.ts [MiB] [runs] [--growth-only] [--chunked] [--only=<shape substring>]`
 * (MiB may be fractional: 16.1 is just past a chunked body's buffer doubling to 32 MiB).
 */
async function main(): Promise<void> {
  const args = Bun.argv.slice(2);
  const numbers = args.filter((arg) => /^\d+(\.\d+)?$/.test(arg)).map(Number);
  const only = args.find((arg) => arg.startsWith("--only="))?.slice("--only=".length);
  const size = Math.round((numbers[0] ?? 16) * MIB);
  const runs = numbers[1] ?? 2;
  const shapes = Object.fromEntries(Object.entries(acceptedShapes(size)).filter(([name]) => only === undefined || name.includes(only)));
  const growth = await peakGrowth(shapes, runs, args.includes("--chunked"));
  if (args.includes("--growth-only")) {
    process.stdout.write(`${JSON.stringify({ peakRssGrowth: growth }, null, 2)}\n`);
    return;
  }
  const typical = encoder.encode(
    chat("Summarise the benefits of disaggregated prefill and decode for large language model serving. ".repeat(20)),
  );
  const large = encoder.encode(chat("y".repeat(200_000)));
  const cost = {
    [`typical chat body (${typical.length} B), µs`]: round(guardMicros(typical, 20_000)),
    [`200 KB chat body, µs`]: round(guardMicros(large, 500)),
  };
  const worst: Record<string, unknown> = {};
  for (const [name, body] of Object.entries(worstBodies(32 * MIB))) worst[name] = { ...refuse(body), jsonParseMs: parseMs(body) };
  process.stdout.write(`${JSON.stringify({ guardCost: cost, worst32MiB: worst, peakRssGrowth: growth }, null, 2)}\n`);
}

await main();
