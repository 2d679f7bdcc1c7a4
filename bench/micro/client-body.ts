/**
 * CPU of a client body's way to the workers (issue #17's splicing, #18's "splice the hand-off
 * into the generation body"), per request, in one process: the shape guard's scan, the parse,
 * validation, the routing request, then the context and generation bodies written as the bytes
 * fetch sends (a string body is UTF-8 encoded by fetch, so the "before" variant pays that too).
 *
 * Run it on two trees to compare: `bun bench/micro/client-body.ts [root]` (root: a checkout of
 * the commit to measure, default this one). Trees without json-source.ts are measured the way
 * they worked: whole-body parse, every body serialised. Minimum over ROUNDS rounds of the mean.
 */

import { join } from "node:path";

const ROOT = process.argv[2] ?? join(import.meta.dir, "..", "..");
const ROUNDS = Number(process.env["ROUNDS"] ?? 9);
const CALLS = Number(process.env["CALLS"] ?? 20_000);

/* oxlint-disable typescript/no-unsafe-assignment, typescript/no-unsafe-call, typescript/no-unsafe-member-access, typescript/no-explicit-any -- modules of another tree, loaded by path */
const load = async (path: string): Promise<any> => import(join(ROOT, path));
/** A module at its path since the json/ move, or where older trees keep it. */
const loadMoved = async (path: string, before: string): Promise<any> => load(path).catch(() => load(before));
const shape = await loadMoved("src/json/json-shape.ts", "src/json-shape.ts");
const json = await loadMoved("src/json/json.ts", "src/json.ts");
const schemas = await load("src/routes/openai-schemas.ts");
const routing = await load("src/routing/routing-request.ts");
const bodies = await load("src/pipeline/bodies.ts");
const codec = await load("src/workers/body-codec.ts");
const source = await loadMoved("src/json/json-source.ts", "src/json-source.ts").catch(() => undefined);

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const chat = (repeat: number): string =>
  JSON.stringify({
    model: "emulated-model",
    max_tokens: 64,
    temperature: 0.7,
    stream: true,
    messages: [
      { role: "system", content: "You are a helpful assistant. Answer briefly and cite sources when you can." },
      {
        role: "user",
        content: "Summarise the benefits of disaggregated prefill and decode for large language model serving. ".repeat(repeat),
      },
    ],
  });
const ANSWER = json.parseJson(
  '{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":" tok1"},"finish_reason":"length","disaggregated_params":{"request_type":"context_only","first_gen_tokens":[24892],"ctx_request_id":7350918722218165249,"encoded_opaque_state":"eyJraW5kIjoiZW11bGF0ZWQta3Ytc3RhdGUifQ==","draft_tokens":null,"disagg_request_id":7350918722218165249,"ctx_dp_rank":0,"ctx_info_endpoint":"http://127.0.0.1:18101","schedule_style":0}}],"usage":{"prompt_tokens":15,"total_tokens":16,"completion_tokens":1},"prompt_token_ids":[10327,12980,12925,12016,10302,5411,26046,29287,11080,25388,3523,26722,6463,30752,12055]}',
);

function wireBytes(body: unknown): number {
  if (typeof body === "string") return encoder.encode(body).length;
  if (body instanceof Uint8Array) return body.length;
  return (body as { byteLength: number }).byteLength;
}

/** One request's body work; returns the bytes written so nothing is optimised away. */
function request(bytes: Uint8Array): number {
  const guard = new shape.JsonShapeGuard(shape.JSON_SHAPE_LIMITS, bytes.length);
  guard.feed(bytes);
  guard.finish(bytes.length);
  const parsed =
    source === undefined
      ? { body: json.parseJson(decoder.decode(bytes)), source: undefined }
      : source.parseJsonSource(bytes, guard.layout());
  schemas.check(schemas.chatRequest, parsed.body);
  const input = {
    api: "chat",
    body: parsed.body,
    source: parsed.source,
    stream: true,
    routing: routing.routingRequestOf("chat", parsed.body, undefined),
  };
  const promptLength: number = input.routing.promptLength ?? input.routing.promptText.length;
  const context = codec.JSON_CODEC.encode(bodies.contextBody(input, 7_350_918_722_218_165_249n, "context_first"), parsed.source);
  const generation = codec.JSON_CODEC.encode(
    bodies.generationBody(input, ANSWER, 7_350_918_722_218_165_249n, "context_first"),
    parsed.source,
  );
  // The prompt's length is what the default routers read; the sum keeps every piece live.
  return wireBytes(context) + wireBytes(generation) + promptLength;
}

const results: Record<string, number> = {};
let sink = 0;
for (const [name, text, calls] of [
  ["typical chat", chat(18), CALLS],
  ["chat with 64 KB of content", chat(700), Math.ceil(CALLS / 20)],
  ["chat with 1 MB of content", chat(11_000), Math.ceil(CALLS / 400)],
] as const) {
  const bytes = encoder.encode(text);
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    for (let i = 0; i < calls; i++) sink += request(bytes);
    best = Math.min(best, ((performance.now() - started) * 1000) / calls);
  }
  results[`${name} (${bytes.length} B), µs`] = Math.round(best * 100) / 100;
}
process.stdout.write(`${JSON.stringify({ root: ROOT, splicing: source !== undefined, ...results, sink })}\n`);
