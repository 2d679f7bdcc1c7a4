/**
 * `bun bench/micro/agent-phases.ts [KB]` (about 20 s): what the proxy's request path costs per
 * phase for an agent-sized request (non-streamed chat, a system message of KB kilobytes of
 * prose, default 100, before a short user line), in one process, each phase on its own:
 * the client body read (bounds and layout), validation, conversation id and prompt length,
 * the context body, the context answer (floor(request bytes / 4) token ids) read and parsed,
 * the generation body. Beside them, the floor's own work on the same bytes (JSON.parse of the
 * client body and the answer, JSON.stringify of both bodies). Minimum over ROUNDS rounds of
 * the mean per call, the phases interleaved.
 */

import { readClientJson } from "../../src/routes/client-body.ts";
import { chatRequest, check } from "../../src/routes/openai-schemas.ts";
import { conversationIdOf } from "../../src/routes/conversation.ts";
import { routingRequestOf } from "../../src/routing/routing-request.ts";
import { contextBody, generationBody } from "../../src/pipeline/bodies.ts";
import { JSON_CODEC } from "../../src/workers/body-codec.ts";
import { JsonShapeGuard } from "../../src/json/json-shape.ts";
import { ANSWER_SHAPE_LIMITS, parseKeepingList } from "../../src/json/json-bytes.ts";
import { withOwnMember } from "../../src/json/json-source.ts";
import { isJsonObject, parseJson, type JsonObject } from "../../src/json/json.ts";
import type { PipelineInput } from "../../src/pipeline/types.ts";

const ROUNDS = Number(process.env["ROUNDS"] ?? 7);
const KB = Number(Bun.argv[2] ?? 100);
// As workers/client.ts keeps a context answer's ids: as bytes from 1 KiB of them on.
const KEEP_BYTES = 1024;
const LIMITS = { maxBytes: 32 * 1024 * 1024, minBytesPerSecond: 1024, graceMs: 10_000 };

const words = "the proxy reads only what it decides on and forwards the rest of the request as bytes ";
const prose = words.repeat(Math.ceil((KB * 1024) / words.length)).slice(0, KB * 1024);
const client = {
  model: "emulated-model",
  messages: [
    { role: "system", content: prose },
    { role: "user", content: "What next?" },
  ],
  max_tokens: 64,
};
const clientText = JSON.stringify(client);
const clientBytes = new TextEncoder().encode(clientText);
const ids = Array.from({ length: Math.floor(clientBytes.length / 4) }, (_, i) => 1000 + ((i * 7919) % 30000));
const answerText = JSON.stringify({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model: "emulated-model",
  choices: [
    {
      index: 0,
      message: { role: "assistant", content: " tok1" },
      finish_reason: "length",
      disaggregated_params: {
        request_type: "context_only",
        first_gen_tokens: [24892],
        ctx_request_id: 2199023255552,
        encoded_opaque_state: "eyJraW5k",
        disagg_request_id: 2199023255552,
        schedule_style: 0,
      },
    },
  ],
  usage: { prompt_tokens: ids.length, total_tokens: ids.length + 1, completion_tokens: 1 },
  prompt_token_ids: ids,
});
const answerBytes = new TextEncoder().encode(answerText);

function request(): Request {
  return new Request("http://proxy/v1/chat/completions", {
    method: "POST",
    body: clientBytes,
    headers: { "content-type": "application/json", "content-length": String(clientBytes.length) },
  });
}

type Op = () => unknown;
async function compare(calls: number, variants: Readonly<Record<string, Op>>): Promise<Record<string, number>> {
  const best: Record<string, number> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, op] of Object.entries(variants)) {
      const started = performance.now();
      // oxlint-disable-next-line no-await-in-loop -- one call at a time is what is measured
      for (let i = 0; i < calls; i++) await op();
      best[name] = Math.min(best[name] ?? Number.POSITIVE_INFINITY, ((performance.now() - started) * 1000) / calls);
    }
  }
  return best;
}

const parsed = await readClientJson(request(), LIMITS);
const input = { api: "chat", body: parsed.body, source: parsed.source, stream: false } as PipelineInput;
const headers = new Headers();
function readAnswer(): { body: JsonObject; kept: ReturnType<typeof parseKeepingList>["kept"] } {
  const guard = new JsonShapeGuard(ANSWER_SHAPE_LIMITS, 64 * 1024 * 1024);
  guard.feed(answerBytes);
  guard.finish(answerBytes.length);
  // As workers/client.ts reads a context answer: its ids kept as bytes from 64 KiB on.
  const { body, kept } =
    answerBytes.length >= KEEP_BYTES
      ? parseKeepingList(answerBytes, guard.layout(), "prompt_token_ids", KEEP_BYTES)
      : { body: parseJson(new TextDecoder().decode(answerBytes)), kept: undefined };
  if (!isJsonObject(body)) throw new Error("not an object");
  return { body, kept };
}
const answer = readAnswer();
function generation(): unknown {
  const body = generationBody(input, answer.body, 2199023255552n, "context_first");
  if (answer.kept === undefined) return JSON_CODEC.encode(body, parsed.source);
  const own = withOwnMember(parsed.source, "prompt_token_ids", answer.kept.bytes);
  body["prompt_token_ids"] = own.value;
  return JSON_CODEC.encode(body, own.source);
}
const floorAnswer = JSON.parse(answerText) as JsonObject;
const figures = await compare(200, {
  "client body read (bounds, layout, parse)": () => readClientJson(request(), LIMITS),
  "  of which Request.bytes() alone": () => request().bytes(),
  validation: () => check(chatRequest, parsed.body),
  "conversation id, prompt length": () => [
    conversationIdOf(parsed.body, headers),
    routingRequestOf("chat", parsed.body, undefined).promptLength,
  ],
  "context body": () => JSON_CODEC.encode(contextBody(input, 2199023255552n, "context_first"), parsed.source),
  "context answer (shape, parse, ids kept)": readAnswer,
  "generation body": generation,
  "floor: client body JSON.parse": async () => JSON.parse(await request().text()),
  "floor: context body stringify": () =>
    JSON.stringify({
      ...client,
      stream: false,
      stream_options: null,
      disaggregated_params: { request_type: "context_only", disagg_request_id: 2199023255552, schedule_style: 0 },
    }),
  "floor: context answer JSON.parse": () => JSON.parse(new TextDecoder().decode(answerBytes)),
  "floor: generation body stringify": () =>
    JSON.stringify({
      ...client,
      disaggregated_params: { request_type: "generation_only" },
      prompt_token_ids: floorAnswer["prompt_token_ids"],
    }),
});
process.stderr.write(
  `${KB} KB system prompt, ${clientBytes.length} bytes body, ${ids.length} token ids (${answerBytes.length} bytes answer)\n`,
);
for (const [name, us] of Object.entries(figures)) process.stderr.write(`${name.padEnd(44)} ${us.toFixed(1).padStart(8)} µs\n`);
