/**
 * Property tests of request validation over real loopback HTTP. Bodies are any JSON value, or
 * a well-formed request of the route where now and then any field, at any depth, is any JSON
 * instead — so cases reach every check, the conversion and the workers. Each gets a 2xx (its
 * body, streamed or not, read to the end) or a clean 4xx in a JSON error envelope: never a
 * 5xx, never a crash. One cluster serves every case of the file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fc from "fast-check";
import { startCluster, type TestCluster } from "./support/cluster.ts";

const RUNS = 300;
const ROUTES = ["/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages"] as const;
type Route = (typeof ROUTES)[number];

const anyJson = fc.jsonValue({ maxDepth: 3 });
type Fields = Record<string, fc.Arbitrary<unknown>>;
/** Nearly always the well-formed value; now and then any JSON at all. */
const mostly = <T>(wellFormed: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof({ arbitrary: wellFormed, weight: 50 }, { arbitrary: anyJson, weight: 1 });
const mostlyAll = (fields: Fields): Fields => Object.fromEntries(Object.entries(fields).map(([k, a]) => [k, mostly(a)]));
/** An object with every field, each nearly always well-formed. */
const rec = (fields: Fields) => fc.record(mostlyAll(fields));
/** A request body: required fields nearly always present and well-formed, optional ones now and then. */
function body(required: Fields, optional: Fields) {
  return fc.tuple(rec(required), fc.record(mostlyAll(optional), { requiredKeys: [] }), fc.nat({ max: 40 })).map(([r, o, drop]) => {
    const kept = Object.entries(r).filter((_, i) => i !== drop); // now and then a required field is missing
    return Object.assign(Object.fromEntries(kept), o);
  });
}

const text = fc.string({ unit: "grapheme", maxLength: 10 });
const few = <T>(a: fc.Arbitrary<T>, minLength = 0) => fc.array(a, { minLength, maxLength: 3 });
const smallCount = fc.integer({ min: 1, max: 8 });
const toolName = fc.constantFrom("get", "put");
const unit = fc.double({ min: 0, max: 1, noNaN: true });
const schema = fc.constant({ type: "object", properties: { q: { type: "string" } } });

// OpenAI chat
const textPart = rec({ type: fc.constant("text"), text });
const toolCall = rec({ id: text, type: fc.constant("function"), function: rec({ name: text, arguments: fc.constant("{}") }) });
const chatMessage = fc.oneof(
  rec({ role: fc.constantFrom("system", "developer", "user"), content: fc.oneof(text, few(textPart, 1)) }),
  rec({ role: fc.constant("assistant"), content: fc.oneof(text, fc.constant(null)), tool_calls: few(toolCall) }),
  rec({ role: fc.constant("tool"), tool_call_id: text, content: text }),
);
const chatTool = rec({ type: fc.constant("function"), function: rec({ name: toolName, parameters: schema }) });

// Anthropic Messages
const aText = rec({ type: fc.constant("text"), text });
const aImage = rec({
  type: fc.constant("image"),
  source: rec({ type: fc.constant("base64"), media_type: fc.constant("image/png"), data: fc.constant("iVBORw0KGgo=") }),
});
const aToolUse = rec({ type: fc.constant("tool_use"), id: text, name: text, input: fc.constant({ q: "x" }) });
const aToolResult = rec({
  type: fc.constant("tool_result"),
  tool_use_id: text,
  content: fc.oneof(text, few(aText)),
  is_error: fc.boolean(),
});
const aThinking = rec({ type: fc.constant("thinking"), thinking: text, signature: text });
const aMessage = fc.oneof(
  rec({ role: fc.constant("user"), content: fc.oneof(text, few(fc.oneof(aText, aImage, aToolResult), 1)) }),
  rec({ role: fc.constant("assistant"), content: fc.oneof(text, few(fc.oneof(aText, aToolUse, aThinking), 1)) }),
);

const SHAPED: Record<Route, fc.Arbitrary<unknown>> = {
  "/v1/chat/completions": body(
    { model: fc.constant("m"), messages: few(chatMessage, 1) },
    {
      stream: fc.boolean(),
      stream_options: rec({ include_usage: fc.boolean() }),
      max_tokens: smallCount,
      max_completion_tokens: smallCount,
      temperature: unit,
      n: fc.constant(1),
      stop: few(text),
      tools: few(chatTool),
      tool_choice: fc.constantFrom("auto", "none", "required"),
      response_format: rec({ type: fc.constantFrom("text", "json_object") }),
      logprobs: fc.boolean(),
    },
  ),
  "/v1/completions": body(
    { model: fc.constant("m"), prompt: fc.oneof(text, few(text, 1), few(fc.integer({ min: 0, max: 40000 }), 1)) },
    {
      stream: fc.boolean(),
      max_tokens: smallCount,
      echo: fc.boolean(),
      logprobs: fc.integer({ min: 0, max: 2 }),
      stop: text,
      temperature: unit,
    },
  ),
  "/v1/responses": body(
    {
      model: fc.constant("m"),
      input: fc.oneof(
        text,
        few(rec({ role: fc.constantFrom("user", "system"), content: text }), 1),
        few(
          rec({ type: fc.constant("message"), role: fc.constant("user"), content: few(rec({ type: fc.constant("input_text"), text }), 1) }),
          1,
        ),
      ),
    },
    {
      stream: fc.boolean(),
      instructions: text,
      max_output_tokens: smallCount,
      temperature: unit,
      previous_response_id: fc.constant(null),
      tools: few(rec({ type: fc.constant("function"), name: toolName, parameters: schema })),
      text: rec({ format: rec({ type: fc.constant("text") }) }),
      reasoning: rec({ effort: fc.constantFrom("low", "medium", "high") }),
    },
  ),
  "/v1/messages": body(
    {
      model: fc.constant("m"),
      max_tokens: fc.oneof({ arbitrary: smallCount, weight: 1 }, { arbitrary: fc.integer({ min: 4097, max: 8192 }), weight: 3 }),
      messages: few(aMessage, 1),
    },
    {
      stream: fc.boolean(),
      system: fc.oneof(text, few(aText)),
      tools: few(rec({ name: toolName, description: text, input_schema: schema }), 1),
      tool_choice: fc.oneof(
        { arbitrary: rec({ type: fc.constantFrom("auto", "none") }), weight: 4 },
        { arbitrary: fc.oneof(rec({ type: fc.constant("any") }), rec({ type: fc.constant("tool"), name: toolName })), weight: 1 },
      ),
      thinking: fc.oneof(
        rec({ type: fc.constant("enabled"), budget_tokens: fc.integer({ min: 1024, max: 4096 }) }),
        rec({ type: fc.constant("disabled") }),
      ),
      stop_sequences: few(text),
      temperature: unit,
      top_k: smallCount,
      metadata: rec({ user_id: text }),
    },
  ),
};

/** A clean refusal: a JSON object in the OpenAI (worker) envelope or in Anthropic's. */
function isErrorEnvelope(answer: string): boolean {
  let value: unknown;
  try {
    value = JSON.parse(answer);
  } catch {
    return false;
  }
  if (typeof value !== "object" || value === null) return false;
  const envelope = value as { object?: unknown; type?: unknown; message?: unknown; error?: { message?: unknown } };
  if (envelope.object === "error") return typeof envelope.message === "string";
  return envelope.type === "error" && typeof envelope.error?.message === "string";
}

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startCluster();
});
afterAll(async () => {
  await cluster[Symbol.asyncDispose]();
});

/** Posts the body (a string is sent as it is), reads the whole answer, and throws unless it is clean. */
async function expectClean(route: Route, sent: unknown): Promise<number> {
  const response = await cluster.post(route, typeof sent === "string" ? sent : JSON.stringify(sent));
  const answer = await response.text();
  const { status } = response;
  const clean = (status >= 200 && status < 300) || (status >= 400 && status < 500 && isErrorEnvelope(answer));
  if (!clean) throw new Error(`${route} answered ${status} to ${JSON.stringify(sent)}: ${answer.slice(0, 300)}`);
  return status;
}

async function expectStillServing(): Promise<void> {
  const after = await cluster.post("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "still here" }] });
  expect(after.status).toBe(200);
  await after.text();
}

describe("validation properties (one cluster, loopback HTTP)", () => {
  test("any JSON value posted to any model route gets a 2xx or a clean 4xx", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTES), anyJson, async (route, sent) => {
        await expectClean(route, sent);
      }),
      { numRuns: RUNS },
    );
    await expectStillServing();
  }, 60_000);

  test("any text posted as the body, JSON or not, gets a 2xx or a clean 4xx", async () => {
    const bodies = fc.oneof(
      fc.string({ unit: "binary", maxLength: 40 }),
      anyJson.map((value) => JSON.stringify(value).slice(0, -1)),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTES), bodies, async (route, sent) => {
        await expectClean(route, sent);
      }),
      { numRuns: RUNS },
    );
    await expectStillServing();
  }, 60_000);

  for (const route of ROUTES) {
    test(`a ${route} request with any field any JSON gets a 2xx or a clean 4xx, and over a fifth reach the workers`, async () => {
      let accepted = 0;
      await fc.assert(
        fc.asyncProperty(SHAPED[route], async (sent) => {
          if ((await expectClean(route, sent)) < 300) accepted++;
        }),
        { numRuns: RUNS },
      );
      // The generator must reach the workers, not only the validators.
      expect(accepted).toBeGreaterThan(RUNS / 5);
      await expectStillServing();
    }, 60_000);
  }
});
