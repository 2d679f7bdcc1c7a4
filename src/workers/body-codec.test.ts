import { describe, expect, test } from "bun:test";
import { Unpackr } from "msgpackr/unpack";
import { isJsonObject, jsonInteger, parseJson } from "../json.ts";
import { JSON_CODEC, msgpackCodec, toMsgpackValue } from "./body-codec.ts";

const ID = 9_223_372_036_854_775_000n;

describe("worker body codecs", () => {
  test("JSON writes a raw 63-bit id byte for byte and needs no header", () => {
    expect(JSON_CODEC.encode({ id: jsonInteger(ID) })).toBe(`{"id":${ID}}`);
    expect(JSON_CODEC.headers).toEqual({});
  });

  test("JSON writes a body's hand-off parameters, raw ids and all, as the whole body's JSON would", () => {
    const params = { request_type: "generation_only", ctx_request_id: jsonInteger(ID), disagg_request_id: jsonInteger(ID), first_gen_tokens: [7] };
    const body = { model: "m", messages: [{ role: "user", content: "x" }], disaggregated_params: params, prompt_token_ids: [1, 2], seed: jsonInteger(ID), gone: undefined };
    expect(JSON.parse(JSON_CODEC.encode(body) as string)).toEqual(JSON.parse(JSON.stringify(body)));
    expect(JSON_CODEC.encode(body)).toContain(`"ctx_request_id":${ID},"disagg_request_id":${ID}`);
    expect(JSON_CODEC.encode({ disaggregated_params: params })).toBe(JSON.stringify({ disaggregated_params: params }));
    expect(JSON_CODEC.encode({ model: "m" })).toBe(`{"model":"m"}`);
  });

  test("msgpack says so in X-TRTLLM-Msgpack and writes a raw 63-bit id as a msgpack int64", () => {
    const codec = msgpackCodec();
    expect(codec.headers).toEqual({ "x-trtllm-msgpack": "1" });
    const bytes = codec.encode({ disaggregated_params: { disagg_request_id: jsonInteger(ID) } }) as Uint8Array;
    const int64 = Buffer.alloc(9);
    int64[0] = 0xd3;
    int64.writeBigInt64BE(ID, 1);
    expect(Buffer.from(bytes).includes(int64)).toBe(true);
    const back = new Unpackr({ useRecords: false, int64AsType: "bigint" }).unpack(bytes) as { disaggregated_params: { disagg_request_id: bigint } };
    expect(back.disaggregated_params.disagg_request_id).toBe(ID);
  });

  test("integers beyond 32 bits are integers on the wire, never floats; undefined members are left out", () => {
    expect(toMsgpackValue({ big: 2 ** 40, small: 7, neg: -(2 ** 35), real: 0.5, gone: undefined, list: [1, null, "x"] })).toEqual({
      big: 2n ** 40n, small: 7, neg: -(2n ** 35n), real: 0.5, list: [1, null, "x"],
    });
  });

  test("a chat body read losslessly survives the msgpack round trip", () => {
    const body = parseJson(`{"model":"m","messages":[{"role":"user","content":"héllo"}],"temperature":0.7,"stream":true,"stream_options":null,"disaggregated_params":{"disagg_request_id":${ID},"first_gen_tokens":[1,2]}}`);
    if (!isJsonObject(body)) throw new TypeError("expected an object");
    const decoded: unknown = new Unpackr({ useRecords: false, int64AsType: "bigint" }).unpack(msgpackCodec().encode(body) as Uint8Array);
    expect(decoded).toEqual({ model: "m", messages: [{ role: "user", content: "héllo" }], temperature: 0.7, stream: true, stream_options: null, disaggregated_params: { disagg_request_id: ID, first_gen_tokens: [1, 2] } });
  });
});
