import { describe, expect, test } from "bun:test";
import { Unpackr } from "msgpackr/unpack";
import { isJsonObject, jsonInteger, parseJson } from "../json/json.ts";
import { JsonShapeGuard, JSON_SHAPE_LIMITS } from "../json/json-shape.ts";
import { parseJsonSource, type ParsedBody } from "../json/json-source.ts";
import { JSON_CODEC, msgpackCodec, PARTS_BODY_BYTES, toMsgpackValue, type WorkerBody } from "./body-codec.ts";

function clientBody(text: string): ParsedBody {
  const bytes = new TextEncoder().encode(text);
  const guard = new JsonShapeGuard(JSON_SHAPE_LIMITS, bytes.length);
  guard.feed(bytes);
  return parseJsonSource(bytes, guard.layout());
}

/**
 * The best of seven encodes of each count, taken in turns: a burst of load from other processes
 * (parallel test files) then slows both counts alike instead of only the one measured during it.
 */
function bestEncodeMs(counts: readonly number[]): number[] {
  const best = counts.map(() => Number.POSITIVE_INFINITY);
  for (let round = 0; round < 7; round++) {
    counts.forEach((count, i) => {
      best[i] = Math.min(best[i] ?? Number.POSITIVE_INFINITY, rebuiltEncodeMs(count));
    });
  }
  return best;
}

/** Encoding an Anthropic-like rebuilt body whose `count` long strings differ only at their ends. */
function rebuiltEncodeMs(count: number): number {
  const strings = Array.from({ length: count }, (_, i) => `${"x".repeat(9000)}${i}`);
  const { body, source } = clientBody(JSON.stringify({ model: "m", messages: strings.map((content) => ({ role: "user", content })) }));
  const messages = body["messages"] as { content: string }[];
  const rebuilt = {
    model: "m",
    messages: messages.map((message) => ({ role: "user", content: [{ type: "text", text: message.content }] })),
  };
  // CPU time, not wall time: on a loaded machine the longer encode is the likelier to lose the
  // CPU to another process partway, which made 4x the strings look up to 10x slower.
  const started = process.cpuUsage();
  wire(JSON_CODEC.encode(rebuilt, source));
  const used = process.cpuUsage(started);
  return (used.user + used.system) / 1000;
}

function wire(body: WorkerBody): string {
  if (typeof body === "string") return body;
  if (body instanceof Uint8Array) return new TextDecoder().decode(body);
  expect(body.byteLength).toBe(body.parts.reduce((sum, part) => sum + part.length, 0));
  return body.parts.map((part) => new TextDecoder().decode(part)).join("");
}

const ID = 9_223_372_036_854_775_000n;

describe("worker body codecs", () => {
  test("JSON writes a raw 63-bit id byte for byte and needs no header", () => {
    expect(JSON_CODEC.encode({ id: jsonInteger(ID) })).toBe(`{"id":${ID}}`);
    expect(JSON_CODEC.headers).toEqual({});
  });

  test("JSON writes a body's hand-off parameters, raw ids and all, as the whole body's JSON would", () => {
    const params = {
      request_type: "generation_only",
      ctx_request_id: jsonInteger(ID),
      disagg_request_id: jsonInteger(ID),
      first_gen_tokens: [7],
    };
    const body = {
      model: "m",
      messages: [{ role: "user", content: "x" }],
      disaggregated_params: params,
      prompt_token_ids: [1, 2],
      seed: jsonInteger(ID),
      gone: undefined,
    };
    expect(JSON.parse(JSON_CODEC.encode(body) as string)).toEqual(JSON.parse(JSON.stringify(body)));
    expect(JSON_CODEC.encode(body)).toContain(`"ctx_request_id":${ID},"disagg_request_id":${ID}}`);
    // The raw ids go after the other parameters, exact: JSON.stringify then writes the rest on its fast path.
    expect(JSON_CODEC.encode({ disaggregated_params: params })).toBe(
      `{"disaggregated_params":{"request_type":"generation_only","first_gen_tokens":[7],"ctx_request_id":${ID},"disagg_request_id":${ID}}}`,
    );
    expect(JSON_CODEC.encode({ disaggregated_params: { disagg_request_id: jsonInteger(ID) } })).toBe(
      `{"disaggregated_params":{"disagg_request_id":${ID}}}`,
    );
    expect(JSON_CODEC.encode({ model: "m" })).toBe(`{"model":"m"}`);
  });

  test("a hand-off member named __proto__ (JSON.parse makes it an own member) is written with the raw ids, not dropped", () => {
    const answer = parseJson(`{"__proto__":{"opaque":1},"ctx_request_id":${ID},"x":"y"}`);
    if (!isJsonObject(answer)) throw new TypeError("expected an object");
    const params = { ...answer, disagg_request_id: jsonInteger(ID) };
    expect(JSON_CODEC.encode({ disaggregated_params: params })).toBe(JSON.stringify({ disaggregated_params: params }));
    expect(JSON_CODEC.encode({ disaggregated_params: params })).toContain(`"__proto__":{"opaque":1}`);
  });

  test("with the client's body, unchanged members go as its bytes; set, changed and repeated ones once, as the body's values", () => {
    const { body, source } = clientBody(
      `{ "model" : "m",  "seed":${ID}, "stream":true, "n":1, "n":2, "messages":[{"role":"user","content":"x\\u00e9"}], "disaggregated_params":{"x":1}}`,
    );
    const worker = {
      ...body,
      stream: false,
      stream_options: null,
      extra: undefined,
      disaggregated_params: { request_type: "context_only", disagg_request_id: jsonInteger(ID) },
    };
    const text = wire(JSON_CODEC.encode(worker, source));
    // Members next to each other in the client's body go as one run, whitespace and all.
    expect(text).toBe(
      `{"model" : "m",  "seed":${ID},"stream":false,"n":2, "messages":[{"role":"user","content":"x\\u00e9"}],"stream_options":null,"disaggregated_params":{"request_type":"context_only","disagg_request_id":${ID}}}`,
    );
    expect(wire(JSON_CODEC.encode({}, source))).toBe("{}");
    expect(wire(JSON_CODEC.encode({ disaggregated_params: { a: 1 } }, source))).toBe(`{"disaggregated_params":{"a":1}}`);
  });

  test("a large body goes as parts whose bytes are the client's own, never joined", () => {
    const content = "é".repeat(PARTS_BODY_BYTES);
    const { body, source } = clientBody(`{"model":"m","messages":[{"role":"user","content":"${content}"}]}`);
    const encoded = JSON_CODEC.encode({ ...body, stream: false }, source);
    if (typeof encoded === "string" || encoded instanceof Uint8Array) throw new TypeError("expected parts");
    expect(encoded.parts.some((part) => part.buffer === source.bytes.buffer && part.length > PARTS_BODY_BYTES)).toBe(true);
    expect(JSON.parse(wire(encoded))).toEqual({ ...body, stream: false });
  });

  test("a long string of the client's inside a member the proxy rebuilt goes as the client's bytes, escapes as the client wrote them", () => {
    const content = `line\\n${"é".repeat(100_000)}`;
    const { body, source } = clientBody(
      `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"${content}"}]}],"system":"s"}`,
    );
    const messages = body["messages"] as { content: { text: string }[] }[];
    const text = messages[0]!.content[0]!.text;
    const converted = {
      model: "m",
      messages: [
        { role: "system", content: "s" },
        { role: "user", content: text },
      ],
      max_completion_tokens: 4,
      also: [text, "short"],
    };
    const encoded = JSON_CODEC.encode(converted, source);
    if (typeof encoded === "string" || encoded instanceof Uint8Array) throw new TypeError("expected parts");
    expect(encoded.parts.filter((part) => part.buffer === source.bytes.buffer && part.length > 200_000)).toHaveLength(2);
    expect(JSON.parse(wire(encoded))).toEqual(converted);
  });

  test("a rebuilt member of many long strings alike but for their ends is written in time linear in their number", () => {
    const [few = 0, many = 0] = bestEncodeMs([400, 1600]);
    // Linear: about 4x the time for 4x the strings; quadratic: about 16x.
    expect(many / few).toBeLessThan(9);
  });

  test("msgpack says so in X-TRTLLM-Msgpack and writes a raw 63-bit id as a msgpack int64", () => {
    const codec = msgpackCodec();
    expect(codec.headers).toEqual({ "x-trtllm-msgpack": "1" });
    const bytes = codec.encode({ disaggregated_params: { disagg_request_id: jsonInteger(ID) } }) as Uint8Array;
    const int64 = Buffer.alloc(9);
    int64[0] = 0xd3;
    int64.writeBigInt64BE(ID, 1);
    expect(Buffer.from(bytes).includes(int64)).toBe(true);
    const back = new Unpackr({ useRecords: false, int64AsType: "bigint" }).unpack(bytes) as {
      disaggregated_params: { disagg_request_id: bigint };
    };
    expect(back.disaggregated_params.disagg_request_id).toBe(ID);
  });

  test("integers beyond 32 bits are integers on the wire, never floats; undefined members are left out", () => {
    expect(toMsgpackValue({ big: 2 ** 40, small: 7, neg: -(2 ** 35), real: 0.5, gone: undefined, list: [1, null, "x"] })).toEqual({
      big: 2n ** 40n,
      small: 7,
      neg: -(2n ** 35n),
      real: 0.5,
      list: [1, null, "x"],
    });
  });

  test("msgpack writes a member named __proto__ as a member, never as the map's prototype", () => {
    const body = parseJson(`{"model":"m","__proto__":{"injected":1},"messages":[{"role":"user","__proto__":"s"}]}`);
    if (!isJsonObject(body)) throw new TypeError("expected an object");
    const decoded = new Unpackr({ useRecords: false, mapsAsObjects: false }).unpack(msgpackCodec().encode(body) as Uint8Array) as Map<
      string,
      unknown
    >;
    expect([...decoded.keys()]).toEqual(["model", "__proto__", "messages"]);
    expect(decoded.get("__proto__")).toEqual(new Map([["injected", 1]]));
    expect(decoded.get("messages")).toEqual([
      new Map([
        ["role", "user"],
        ["__proto__", "s"],
      ]),
    ]);
  });

  test("a chat body read losslessly survives the msgpack round trip", () => {
    const body = parseJson(
      `{"model":"m","messages":[{"role":"user","content":"héllo"}],"temperature":0.7,"stream":true,"stream_options":null,"disaggregated_params":{"disagg_request_id":${ID},"first_gen_tokens":[1,2]}}`,
    );
    if (!isJsonObject(body)) throw new TypeError("expected an object");
    const decoded: unknown = new Unpackr({ useRecords: false, int64AsType: "bigint" }).unpack(msgpackCodec().encode(body) as Uint8Array);
    expect(decoded).toEqual({
      model: "m",
      messages: [{ role: "user", content: "héllo" }],
      temperature: 0.7,
      stream: true,
      stream_options: null,
      disaggregated_params: { disagg_request_id: ID, first_gen_tokens: [1, 2] },
    });
  });
});
