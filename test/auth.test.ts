import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isJsonObject, readInteger } from "../src/json/json.ts";
import { disaggAuthHeader, DISAGG_AUTH_HEADER, subagentAffinityHeaders } from "../src/security/disagg-auth.ts";
import { startCluster } from "./support/cluster.ts";

function keyFile(keys: string): string {
  const file = join(mkdtempSync(join(tmpdir(), "disagg-keys-")), "keys");
  writeFileSync(file, keys);
  return file;
}

const CALLS: [string, string, object | undefined][] = [
  ["POST", "/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "x" }], max_tokens: 2 }],
  ["POST", "/v1/completions", { model: "m", prompt: "x", max_tokens: 2 }],
  ["POST", "/v1/responses", { model: "m", input: "x", max_output_tokens: 2 }],
  ["POST", "/v1/messages", { model: "m", max_tokens: 2, messages: [{ role: "user", content: "x" }] }],
  ["POST", "/v1/messages/count_tokens", { model: "m", messages: [{ role: "user", content: "x" }] }],
  ["GET", "/v1/models", undefined],
  ["GET", "/cluster_info", undefined],
];

describe("client authentication", () => {
  test("every API route refuses absent and wrong keys with 401 in its dialect and serves a valid one", async () => {
    await using cluster = await startCluster({ config: { apiKeyFile: keyFile("# team keys\nkey-one\n\nkey-two\n") } });
    for (const [method, path, body] of CALLS) {
      const call = (headers: Record<string, string>): Promise<Response> =>
        fetch(cluster.url + path, {
          method,
          headers: { "content-type": "application/json", ...headers },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
      for (const wrong of [{}, { authorization: "Bearer nope" }, { "x-api-key": "key-on" }, { authorization: "key-one" }]) {
        const refused = await call(wrong);
        expect(refused.status).toBe(401);
        const envelope = (await refused.json()) as { type?: string; error?: { type: string; message: string }; message?: string };
        if (path.startsWith("/v1/messages")) expect(envelope.error?.type).toBe("authentication_error");
        else expect(envelope.message).toBe("Invalid or missing API key");
      }
      expect((await call({ authorization: "Bearer key-two" })).status).toBe(200);
      expect((await call({ "x-api-key": "key-one" })).status).toBe(200);
    }
    expect(cluster.contexts[0]!.requests.filter((r) => r.method === "POST" && r.phase !== "other").length).toBe(8);
  });

  test("health, liveness and version stay open; metrics too unless protected", async () => {
    await using open = await startCluster({ config: { apiKeysFromEnv: "env-key" } });
    for (const path of ["/health", "/livez", "/version", "/metrics"]) expect((await fetch(open.url + path)).status).toBe(200);
    await using guarded = await startCluster({ config: { apiKeysFromEnv: "env-key", protectMetrics: true } });
    expect((await fetch(`${guarded.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${guarded.url}/metrics`, { headers: { authorization: "Bearer env-key" } })).status).toBe(200);
  });

  test("a reload reads the key file again", async () => {
    const file = keyFile("old-key\n");
    await using cluster = await startCluster({ config: { apiKeyFile: file } });
    const models = (key: string): Promise<Response> => fetch(`${cluster.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    expect((await models("old-key")).status).toBe(200);
    writeFileSync(file, "new-key\n");
    cluster.proxy.app.reloadClientKeys();
    expect((await models("old-key")).status).toBe(401);
    expect((await models("new-key")).status).toBe(200);
  });

  test("keys never appear in the logs", async () => {
    await using cluster = await startCluster({ config: { apiKeysFromEnv: "secret-key-123" } });
    await cluster.post(
      "/v1/chat/completions",
      { model: "m", messages: [{ role: "user", content: "x" }] },
      { headers: { authorization: "Bearer secret-key-123" } },
    );
    await cluster.post(
      "/v1/chat/completions",
      { model: "m", messages: [{ role: "user", content: "x" }] },
      { headers: { authorization: "Bearer secret-key-999" } },
    );
    expect(JSON.stringify(cluster.logs)).not.toContain("secret-key");
  });
});

describe.each(["context_first", "generation_first"] as const)("%s: internal HMAC", (schedule) => {
  test("generation requests carrying protected fields are signed; context requests are not", async () => {
    await using cluster = await startCluster({ config: { schedule, internalAuthKey: "shared-secret" } });
    for (const stream of [false, true]) {
      const response = await cluster.post("/v1/chat/completions", {
        model: "m",
        messages: [{ role: "user", content: "x" }],
        max_tokens: 3,
        stream,
      });
      await response.text();
    }
    const generations = cluster.generations[0]!.requests.filter((r) => r.phase === "generation");
    const contexts = cluster.contexts[0]!.requests.filter((r) => r.phase === "context");
    // Two requests, each through both legs: the loops below have something to check.
    expect(generations).toHaveLength(2);
    expect(contexts).toHaveLength(2);
    for (const gen of generations) {
      const params = isJsonObject(gen.body) ? gen.body["disaggregated_params"] : undefined;
      expect(isJsonObject(params)).toBe(true);
      const expected = disaggAuthHeader("shared-secret", params as Parameters<typeof disaggAuthHeader>[1]);
      expect(expected).toMatch(/^sha256=[0-9a-f]{64}$/);
      expect(gen.headers[DISAGG_AUTH_HEADER]).toBe(expected as string);
    }
    for (const ctx of contexts) expect(ctx.headers[DISAGG_AUTH_HEADER]).toBeUndefined();
  });

  test("without a key nothing is signed", async () => {
    await using cluster = await startCluster({ config: { schedule } });
    await (await cluster.post("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "x" }], max_tokens: 3 })).text();
    const gen = cluster.generations[0]!.requests.find((r) => r.phase === "generation")!;
    expect(gen.headers[DISAGG_AUTH_HEADER]).toBeUndefined();
  });
});

describe("sub-agent affinity (TensorRT-LLM #19175)", () => {
  const PARENT_HEADER = "X-Dynamo-Parent-Session-ID";
  const chat = { model: "m", messages: [{ role: "user", content: "x" }], max_tokens: 3 };
  const subagent = { "content-type": "application/json", "x-session-id": "child-a", [PARENT_HEADER]: " parent-1 " };
  const affinityConfig = { internalAuthKey: "shared-secret", subagentAffinityHeader: PARENT_HEADER };

  test("the parent header reaches the context leg as a signed key, the body keeps the child's own conversation, and a retry is signed anew", async () => {
    await using cluster = await startCluster({ contexts: [{ faults: { rejectStatus: 503 } }, {}], config: affinityConfig });
    expect((await cluster.post("/v1/chat/completions", chat, { headers: subagent })).status).toBe(200);
    const attempts = [...cluster.contexts[0]!.requests, ...cluster.contexts[1]!.requests].filter((r) => r.phase === "context");
    expect(attempts).toHaveLength(2);
    for (const leg of attempts) {
      expect(leg.headers["x-trtllm-subagent-affinity-id"]).toBe("parent-1");
      expect(leg.headers["x-trtllm-subagent-affinity-auth"]).toMatch(/^sha256=[0-9a-f]{64}$/);
      expect(isJsonObject(leg.body) && leg.body["conversation_params"]).toEqual({ conversation_id: "child-a" });
    }
    // The signature covers each attempt's own disagg_request_id: a context retry is signed anew.
    expect(attempts[0]!.headers["x-trtllm-subagent-affinity-auth"]).not.toBe(attempts[1]!.headers["x-trtllm-subagent-affinity-auth"]);
    // Scope "context" (the default): the generation fleet places the child by its own conversation.
    const gen = cluster.generations[0]!.requests.find((r) => r.phase === "generation")!;
    expect(gen.headers["x-trtllm-subagent-affinity-id"]).toBeUndefined();
    expect(isJsonObject(gen.body) && gen.body["conversation_params"]).toEqual({ conversation_id: "child-a" });
  });

  test("each worker can verify the parent key from what it received: its role, the model, the child's conversation, the request type and disagg_request_id", async () => {
    // A worker recomputes the signature from its own request (disagg_auth.py validate_subagent_affinity,
    // read_file id 68525723387; test_disagg_internal_auth.py test_worker_affinity_survives_wire_roundtrip).
    await using cluster = await startCluster({ config: { ...affinityConfig, subagentAffinityScope: "both" } });
    expect((await cluster.post("/v1/chat/completions", chat, { headers: subagent })).status).toBe(200);
    const legs = [
      cluster.contexts[0]!.requests.find((r) => r.phase === "context")!,
      cluster.generations[0]!.requests.find((r) => r.phase === "generation")!,
    ];
    for (const leg of legs) {
      const body = leg.body as {
        model: string;
        conversation_params: { conversation_id: string };
        disaggregated_params: { request_type: string; disagg_request_id: unknown };
      };
      const expected = subagentAffinityHeaders("shared-secret", {
        role: body.disaggregated_params.request_type === "context_only" ? "CONTEXT" : "GENERATION",
        model: body.model,
        conversationId: body.conversation_params.conversation_id,
        subagentAffinityId: leg.headers["x-trtllm-subagent-affinity-id"]!,
        requestType: body.disaggregated_params.request_type,
        disaggRequestId: readInteger(body.disaggregated_params.disagg_request_id)!,
      });
      expect(leg.headers["x-trtllm-subagent-affinity-auth"]).toBe(expected["x-trtllm-subagent-affinity-auth"]);
    }
  });

  test("with scope both the generation leg carries the signed parent key too", async () => {
    await using cluster = await startCluster({ config: { ...affinityConfig, subagentAffinityScope: "both" } });
    expect((await cluster.post("/v1/chat/completions", chat, { headers: subagent })).status).toBe(200);
    const gen = cluster.generations[0]!.requests.find((r) => r.phase === "generation")!;
    expect(gen.headers["x-trtllm-subagent-affinity-id"]).toBe("parent-1");
    expect(gen.headers["x-trtllm-subagent-affinity-auth"]).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  test("a sub-agent naming no conversation of its own gets a fresh subagent: id, distinct from its parent's", async () => {
    await using cluster = await startCluster({ config: affinityConfig });
    expect(
      (await cluster.post("/v1/chat/completions", chat, { headers: { "content-type": "application/json", [PARENT_HEADER]: "parent-1" } }))
        .status,
    ).toBe(200);
    const context = cluster.contexts[0]!.requests.find((r) => r.phase === "context")!;
    const own =
      isJsonObject(context.body) && isJsonObject(context.body["conversation_params"])
        ? context.body["conversation_params"]["conversation_id"]
        : undefined;
    expect(own).toStartWith("subagent:");
    expect(context.headers["x-trtllm-subagent-affinity-id"]).toBe("parent-1");
  });

  test("a client's subagent_affinity_id in the body is dropped and signs nothing, with the header configured or not", async () => {
    for (const config of [affinityConfig, { internalAuthKey: "shared-secret" }]) {
      await using cluster = await startCluster({ config });
      const forged = { ...chat, conversation_params: { conversation_id: "own-id", subagent_affinity_id: "attacker-id" } };
      expect((await cluster.post("/v1/chat/completions", forged)).status).toBe(200);
      for (const leg of [...cluster.contexts[0]!.requests, ...cluster.generations[0]!.requests].filter(
        (r) => r.phase === "context" || r.phase === "generation",
      )) {
        expect(leg.headers["x-trtllm-subagent-affinity-id"]).toBeUndefined();
        expect(isJsonObject(leg.body) && leg.body["conversation_params"]).toEqual({ conversation_id: "own-id" });
      }
    }
  });

  test("a client's own x-trtllm-subagent-affinity-id and -auth headers never reach a worker", async () => {
    // The internal headers are the proxy's to set (subagent-routing.md @ 83dd989e, "Gateway trust boundary").
    for (const config of [affinityConfig, { internalAuthKey: "shared-secret" }]) {
      await using cluster = await startCluster({ config });
      const forged = {
        "content-type": "application/json",
        "x-trtllm-subagent-affinity-id": "victim",
        "x-trtllm-subagent-affinity-auth": "sha256=00",
      };
      expect((await cluster.post("/v1/chat/completions", chat, { headers: forged })).status).toBe(200);
      const legs = [...cluster.contexts[0]!.requests, ...cluster.generations[0]!.requests].filter(
        (r) => r.phase === "context" || r.phase === "generation",
      );
      expect(legs).toHaveLength(2);
      for (const leg of legs) {
        expect(leg.headers["x-trtllm-subagent-affinity-id"]).toBeUndefined();
        expect(leg.headers["x-trtllm-subagent-affinity-auth"]).toBeUndefined();
      }
    }
  });

  test("the parent header is inert when conversation_affinity_header_for_subagents is not set", async () => {
    await using cluster = await startCluster({ config: { internalAuthKey: "shared-secret" } });
    expect((await cluster.post("/v1/chat/completions", chat, { headers: subagent })).status).toBe(200);
    const context = cluster.contexts[0]!.requests.find((r) => r.phase === "context")!;
    expect(context.headers["x-trtllm-subagent-affinity-id"]).toBeUndefined();
    expect(isJsonObject(context.body) && context.body["conversation_params"]).toEqual({ conversation_id: "child-a" });
  });
});
