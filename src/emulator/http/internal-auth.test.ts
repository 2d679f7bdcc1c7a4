import { describe, expect, test } from "bun:test";
import { jsonInteger, type JsonObject } from "../../json/json.ts";
import { disaggAuthHeader, subagentAffinityHeaders } from "../../security/disagg-auth.ts";
import { startEmulatedWorker } from "../index.ts";
import type { EmulatorOptions } from "../types.ts";

/**
 * The emulated worker checks the proxy's internal signatures as trtllm-serve's workers do
 * (disagg_auth.py; cases after test_disagg_internal_auth.py @ a2bb002d, read_file id 68710179054).
 * Valid headers here come from the proxy's own signer: the two implementations must agree.
 */

const KEY = "secret";

function affinityRequest(requestType: "context_only" | "generation_only" | undefined): JsonObject {
  return {
    model: "test-model",
    messages: [{ role: "user", content: "hello" }],
    max_tokens: 2,
    conversation_params: { conversation_id: "child" },
    ...(requestType === undefined ? {} : { disaggregated_params: { request_type: requestType, disagg_request_id: jsonInteger(42n) } }),
  };
}

function signed(fields: Partial<Parameters<typeof subagentAffinityHeaders>[1]> = {}, key = KEY): Record<string, string> {
  return subagentAffinityHeaders(key, {
    role: "CONTEXT",
    model: "test-model",
    conversationId: "child",
    subagentAffinityId: "parent",
    requestType: "context_only",
    disaggRequestId: 42n,
    ...fields,
  });
}

async function send(
  options: Omit<EmulatorOptions, "role"> & { role?: EmulatorOptions["role"] },
  body: JsonObject,
  headers: Record<string, string>,
): Promise<{ status: number; message: string }> {
  await using worker = startEmulatedWorker({ role: "context", ...options });
  const response = await fetch(`${worker.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, message: response.status === 200 ? "" : ((JSON.parse(text) as { message?: string }).message ?? text) };
}

describe("the emulated worker's sub-agent affinity check", () => {
  test("a hint signed for its role, model, child, request type and id is accepted", async () => {
    expect((await send({ internalAuthKey: KEY }, affinityRequest("context_only"), signed())).status).toBe(200);
  });

  test("an unsigned hint is refused, with a key or without one", async () => {
    const unsigned = { "x-trtllm-subagent-affinity-id": "parent" };
    expect(await send({ internalAuthKey: KEY }, affinityRequest("context_only"), unsigned)).toEqual({
      status: 400,
      message: "Invalid internal subagent affinity authentication",
    });
    expect(await send({}, affinityRequest("context_only"), unsigned)).toEqual({
      status: 400,
      message: "Subagent affinity requires internal_request_auth_key",
    });
  });

  test.each([
    ["parent", { "x-trtllm-subagent-affinity-id": "other-parent" }, {}],
    ["child", {}, { conversation_params: { conversation_id: "other-child" } }],
    ["model", {}, { model: "other-model" }],
    ["request id", {}, { disaggregated_params: { request_type: "context_only", disagg_request_id: jsonInteger(43n) } }],
  ] as const)("a hint whose %s changed after signing is refused", async (_what, headerChange, bodyChange) => {
    const result = await send(
      { internalAuthKey: KEY },
      { ...affinityRequest("context_only"), ...bodyChange },
      { ...signed(), ...headerChange },
    );
    expect(result).toEqual({ status: 400, message: "Invalid internal subagent affinity authentication" });
  });

  test("a hint signed for the other role, or under another key, is refused", async () => {
    expect((await send({ internalAuthKey: KEY }, affinityRequest("context_only"), signed({ role: "GENERATION" }))).status).toBe(400);
    expect((await send({ internalAuthKey: KEY }, affinityRequest("context_only"), signed({}, "wrong-secret"))).status).toBe(400);
  });

  test("a worker without a role of its own checks the role the request type names; an aggregated request ignores the hint", async () => {
    expect((await send({ role: "mixed", internalAuthKey: KEY }, affinityRequest("context_only"), signed())).status).toBe(200);
    expect(
      (await send({ role: "mixed", internalAuthKey: KEY }, affinityRequest(undefined), { "x-trtllm-subagent-affinity-id": "parent" }))
        .status,
    ).toBe(200);
  });
});

/** A generation request carrying a hand-off state (protected: it must be signed). */
const generation = (state: string): JsonObject => ({
  model: "test-model",
  messages: [{ role: "user", content: "hello" }],
  prompt_token_ids: [1, 2, 3],
  max_tokens: 2,
  disaggregated_params: {
    request_type: "generation_only",
    ctx_request_id: jsonInteger(42n),
    disagg_request_id: jsonInteger(42n),
    encoded_opaque_state: state,
  },
});

describe("the emulated worker's hand-off signature check", () => {
  test("protected fields without the signature, or with one over other values, are refused", async () => {
    const options = { role: "generation" as const, internalAuthKey: KEY };
    const missing = await send(options, generation("b3BhcXVl"), {});
    expect(missing).toEqual({ status: 400, message: "Invalid internal disaggregated request authentication" });
    const otherState = disaggAuthHeader(KEY, { encoded_opaque_state: "dGFtcGVyZWQ=" })!;
    const tampered = await send(options, generation("b3BhcXVl"), { "x-trtllm-disagg-auth": otherState });
    expect(tampered).toEqual({ status: 400, message: "Invalid internal disaggregated request authentication" });
  });

  test("a valid signature passes the check (the hand-off itself is judged next), and without a key nothing is checked", async () => {
    const header = { "x-trtllm-disagg-auth": disaggAuthHeader(KEY, { encoded_opaque_state: "b3BhcXVl" })! };
    const valid = await send({ role: "generation", internalAuthKey: KEY }, generation("b3BhcXVl"), header);
    expect(valid.message).not.toContain("authentication");
    const keyless = await send({ role: "generation" }, generation("b3BhcXVl"), {});
    expect(keyless.message).not.toContain("authentication");
  });
});
