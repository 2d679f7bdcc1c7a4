import { describe, expect, test } from "bun:test";
import { type JsonObject, isJsonObject, parseJson } from "../json/json.ts";
import { DISAGG_AUTH_HEADER, type SubagentAffinityFields, disaggAuthHeader, subagentAffinityHeaders } from "./disagg-auth.ts";

/** Vectors written by CPython's json and hmac (test/fixtures/hmac/make-vectors.py; see it to regenerate). */
interface Vectors {
  readonly disaggAuth: readonly { name: string; key: string; params: string; header: string | null }[];
  readonly affinity: readonly {
    name: string;
    key: string;
    fields: Omit<SubagentAffinityFields, "disaggRequestId"> & { disaggRequestId: string };
    headers: Record<string, string>;
  }[];
}

const vectors = (await Bun.file(new URL("../../test/fixtures/hmac/vectors.json", import.meta.url)).json()) as Vectors;

function params(text: string): JsonObject {
  const value = parseJson(text);
  if (!isJsonObject(value)) throw new TypeError("Vector params are not an object");
  return value;
}

describe("disaggAuthHeader", () => {
  test("the header name is the one trtllm-serve workers read", () => {
    expect(DISAGG_AUTH_HEADER).toBe("x-trtllm-disagg-auth");
  });

  test.each(vectors.disaggAuth.map((v) => [v.name, v] as const))("%s: equals CPython's signature", (_name, vector) => {
    expect(disaggAuthHeader(vector.key, params(vector.params)) ?? null).toBe(vector.header);
  });

  test("an empty key with protected fields throws a RangeError naming the problem", () => {
    expect(() => disaggAuthHeader("", { encoded_opaque_state: "x" })).toThrow(/internal auth key is empty/);
  });

  test("an empty key without protected fields needs no signature and does not throw", () => {
    expect(disaggAuthHeader("", { request_type: "generation_only" })).toBeUndefined();
  });

  test("a different key or a changed protected field gives a different signature", () => {
    const base = { encoded_opaque_state: "abc", ctx_info_endpoint: "tcp://h:1" };
    const signed = disaggAuthHeader("k", base);
    expect(disaggAuthHeader("k2", base)).not.toBe(signed);
    expect(disaggAuthHeader("k", { ...base, encoded_opaque_state: "abd" })).not.toBe(signed);
    expect(disaggAuthHeader("k", { ...base, first_gen_tokens: [1] })).toBe(signed);
  });
});

describe("subagentAffinityHeaders", () => {
  test.each(vectors.affinity.map((v) => [v.name, v] as const))("%s: equals CPython's headers", (_name, vector) => {
    const fields = { ...vector.fields, disaggRequestId: BigInt(vector.fields.disaggRequestId) };
    expect(subagentAffinityHeaders(vector.key, fields)).toEqual(vector.headers);
  });

  const fields: SubagentAffinityFields = {
    role: "CONTEXT",
    model: "m",
    conversationId: "c",
    subagentAffinityId: "p",
    requestType: "context_only",
    disaggRequestId: 1099511627776n,
  };

  test("an empty key throws, as upstream refuses affinity without internal_request_auth_key", () => {
    expect(() => subagentAffinityHeaders("", fields)).toThrow(RangeError);
  });

  test("a new disagg_request_id on a retry changes the signature but not the id header", () => {
    const first = subagentAffinityHeaders("k", fields);
    const retried = subagentAffinityHeaders("k", { ...fields, disaggRequestId: 1099511627777n });
    expect(retried["x-trtllm-subagent-affinity-id"]).toBe(first["x-trtllm-subagent-affinity-id"]);
    expect(retried["x-trtllm-subagent-affinity-auth"]).not.toBe(first["x-trtllm-subagent-affinity-auth"]);
  });
});
