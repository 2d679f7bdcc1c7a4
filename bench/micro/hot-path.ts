/**
 * What each hot-path change of issue #18 bought, measured piece by piece in one process (the
 * end-to-end rounds on a shared 2-core machine cannot resolve a few µs per request).
 * Run: `npx bun bench/micro/hot-path.ts > /tmp/hot-path.log` (figures on stderr; stdout, a file
 * as the proxy's log is, takes the log lines of the logging case). Each figure is the minimum over ROUNDS rounds (default 9) of the
 * mean per operation, the before and after variants interleaved round by round.
 *
 * - context answer parse: the emulator's context answer (15 prompt token ids) and the same with
 *   2,000 ids, through the lossless reviver (the parse before) and through parseJson now;
 * - worker answer read: a non-streamed answer that declares its length, read through a JS read
 *   loop (before) and natively (after), fetch from a loopback Bun.serve included;
 * - relay read: a 256-chunk stream read through the reader wrapper (before) and directly;
 * - request log line: one stdout write per line (before) and one per 16 lines (a turn that
 *   ended 16 requests; at one request per turn the two are the same write);
 * - generation body written: the body built from that answer, with JSON.stringify whole
 *   (before) and with its raw-id hand-off spliced in;
 * - end of a request that went well: a new abort reason (an Error and its stack) per request.
 */

import { parseJson } from "../../src/json/json.ts";
import { ProxyError } from "../../src/errors.ts";
import { readBounded, readPrefix } from "../../src/workers/answers.ts";
import { stringifyBody } from "../../src/workers/body-codec.ts";
import { generationBody } from "../../src/pipeline/bodies.ts";
import { isJsonObject } from "../../src/json/json.ts";
import type { PipelineInput } from "../../src/pipeline/types.ts";
import { NO_ROUTING } from "../../src/routing/routing-request.ts";

const ROUNDS = Number(process.env["ROUNDS"] ?? 9);

const CONTEXT_ANSWER =
  '{"id":"chatcmpl-b0a724c63e1c481a9ea6e5336371467f","object":"chat.completion","created":1796289353,"model":"emulated-model","choices":[{"index":0,"message":{"role":"assistant","content":" tok1","reasoning_content":null,"tool_calls":[]},"logprobs":null,"finish_reason":"length","stop_reason":null,"disaggregated_params":{"request_type":"context_only","first_gen_tokens":[24892],"ctx_request_id":7350918722218165249,"encoded_opaque_state":"eyJraW5kIjoiZW11bGF0ZWQta3Ytc3RhdGUiLCJ3b3JrZXIiOiJodHRwOi8vMTI3LjAuMC4xOjE4MTAxIiwiZGlzYWdnX3JlcXVlc3RfaWQiOjczNTA5MTg3MjIyMTgxNjUyNDksInByb21wdF90b2tlbnMiOjE1LCJkaXJlY3RpdmVzIjoiW1tlbXUgdG9rZW5zPTE2XV0ifQ==","draft_tokens":null,"disagg_request_id":7350918722218165249,"ctx_dp_rank":0,"ctx_info_endpoint":"http://127.0.0.1:18101","schedule_style":0}}],"usage":{"prompt_tokens":15,"total_tokens":16,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":0}},"prompt_token_ids":[10327,12980,12925,12016,10302,5411,26046,29287,11080,25388,3523,26722,6463,30752,12055]}';
const LONG_ANSWER = CONTEXT_ANSWER.replace(
  /"prompt_token_ids":\[[^\]]*\]/,
  `"prompt_token_ids":[${Array.from({ length: 2000 }, (_, i) => (i * 7919) % 32000).join(",")}]`,
);

/** The parse before: JSON.parse with a reviver that keeps unsafe integers as their source text. */
function revivedParse(text: string): unknown {
  if (!/\d{16}/.test(text)) return JSON.parse(text);
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) => {
    if (typeof value === "number" && !Number.isSafeInteger(value) && context?.source !== undefined && /^-?\d+$/.test(context.source))
      return JSON.rawJSON(context.source);
    return value;
  });
}

type Op = () => unknown;

/** Mean µs per call of each variant, minimum over the rounds, variants interleaved. */
async function compare(calls: number, variants: Readonly<Record<string, Op>>): Promise<Record<string, number>> {
  const best: Record<string, number> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, op] of Object.entries(variants)) {
      const started = performance.now();
      // oxlint-disable-next-line no-await-in-loop -- one call at a time is what is measured
      for (let i = 0; i < calls; i++) await op();
      const us = ((performance.now() - started) * 1000) / calls;
      best[name] = Math.min(best[name] ?? Number.POSITIVE_INFINITY, us);
    }
  }
  return best;
}

async function drain(read: () => Promise<{ done: boolean }>): Promise<void> {
  // oxlint-disable-next-line no-await-in-loop -- a stream is read chunk after chunk
  while (!(await read()).done);
}

function report(what: string, before: number, after: number, unit = "µs"): void {
  process.stderr.write(
    `| ${what} | ${before.toFixed(2)} ${unit} | ${after.toFixed(2)} ${unit} | ${(before - after).toFixed(2)} ${unit} |\n`,
  );
}

async function main(): Promise<void> {
  process.stderr.write(`| piece | before | after | saved |\n| --- | --- | --- | --- |\n`);
  for (const [label, text, calls] of [
    ["context answer parse, 15 token ids", CONTEXT_ANSWER, 20_000],
    ["context answer parse, 2,000 token ids", LONG_ANSWER, 500],
  ] as const) {
    const r = await compare(calls, { before: () => revivedParse(text), after: () => parseJson(text) });
    report(label, r["before"] ?? Number.NaN, r["after"] ?? Number.NaN);
  }

  const answer = parseJson(CONTEXT_ANSWER);
  if (!isJsonObject(answer)) throw new Error("The context answer is not an object");
  const input: PipelineInput = {
    api: "chat",
    stream: false,
    routing: NO_ROUTING,
    body: {
      model: "emulated-model",
      messages: [
        {
          role: "user",
          content: "Summarise the benefits of disaggregated prefill and decode for large language model serving [[emu tokens=16]]",
        },
      ],
      max_tokens: 16,
    },
  };
  const body = generationBody(input, answer, 7_350_918_722_218_165_249n, "context_first");
  const bodies = await compare(50_000, { before: () => JSON.stringify(body), after: () => stringifyBody(body) });
  report("generation body written", bodies["before"] ?? Number.NaN, bodies["after"] ?? Number.NaN);

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => new Response(CONTEXT_ANSWER, { headers: { "content-type": "application/json" } }),
  });
  const url = server.url.origin;
  const answers = await compare(1500, {
    before: async () => readPrefix((await fetch(url)).body, 1 << 20),
    after: async () => readBounded(await fetch(url), 1 << 20),
  });
  await server.stop(true);
  report("worker answer fetched and read (declared length)", answers["before"] ?? Number.NaN, answers["after"] ?? Number.NaN);

  const chunk = new Uint8Array(200);
  const stream = (): ReadableStream<Uint8Array> => {
    let sent = 0;
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 256) controller.enqueue(chunk);
        else controller.close();
      },
    });
  };
  const relay = await compare(200, {
    before: () => {
      const reader = stream().getReader();
      return drain(() => reader.read().then((r) => (r.done ? { done: true } : { done: false, value: r.value })));
    },
    after: () => {
      const reader = stream().getReader();
      return drain(() => reader.read());
    },
  });
  report("relay read, per chunk", (relay["before"] ?? Number.NaN) / 257, (relay["after"] ?? Number.NaN) / 257);

  const line = `${JSON.stringify({ ts: new Date().toISOString(), level: "info", msg: "request", disagg_request_id: "7350918722218165249", route: "/v1/chat/completions", stream: false, status: 200, outcome: "ok", retries: 0, ttfb_ms: 0.5, duration_ms: 0.6, bytes_out: 400 })}\n`;
  const lines = await compare(2000, {
    before: () => {
      for (let i = 0; i < 16; i++) process.stdout.write(line);
    },
    after: () => process.stdout.write(line.repeat(16)),
  });
  report("request log line written (16 per turn)", (lines["before"] ?? Number.NaN) / 16, (lines["after"] ?? Number.NaN) / 16);

  const shared = new ProxyError("CLIENT_GONE", 499, "Request ended");
  const ends = await compare(50_000, {
    before: () => new AbortController().abort(new ProxyError("CLIENT_GONE", 499, "Request ended")),
    after: () => new AbortController().abort(shared),
  });
  report("request that went well: its legs' abort", ends["before"] ?? Number.NaN, ends["after"] ?? Number.NaN);
}

await main();
