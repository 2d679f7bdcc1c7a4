import { describe, expect, test } from "bun:test";
import { isJsonObject } from "../src/json/json.ts";
import { eventually, startCluster } from "./support/cluster.ts";

const history = (turns: number): object[] =>
  Array.from({ length: turns }, (_, i) => ({
    role: i % 2 === 0 ? "user" : "assistant",
    content: `turn ${i} ${"about the long agent task ".repeat(40)}`,
  }));

const chat = (messages: object[], extra: object = {}): object => ({ model: "m", messages, max_tokens: 3, ...extra });

/**
 * One turn of a Codex thread over /v1/responses, shaped as codex-cli 0.169.0 (`codex exec`) sent
 * it to this proxy (captured on loopback, 2026-12-04; keys and headers as sent, texts shortened):
 * every thread opens with the same long developer prompt, then the whole history; the thread id
 * is `prompt_cache_key`, `client_metadata.thread_id` and the `session-id` / `thread-id` headers
 * (neither among trtllm-serve's session headers). openai/codex codex-rs/core/src/client.rs
 * (read_file id 20246148296) sets `prompt_cache_key` the same way.
 */
const CODEX_DEVELOPER_PROMPT = "You are Codex, a coding agent based on GPT-5. ".repeat(400);

function codexTurn(thread: string, turn: number): { body: object; headers: Record<string, string> } {
  const turns = Array.from({ length: turn * 2 - 1 }, (_, i) => ({
    type: "message",
    role: i % 2 === 0 ? "user" : "assistant",
    content: [{ type: i % 2 === 0 ? "input_text" : "output_text", text: `${thread} turn ${i}: refactor the parser module` }],
  }));
  return {
    body: {
      model: "emulated-model",
      input: [{ type: "message", role: "developer", content: [{ type: "input_text", text: CODEX_DEVELOPER_PROMPT }] }, ...turns],
      tools: [
        {
          type: "function",
          name: "shell",
          description: "Runs a shell command",
          strict: false,
          parameters: { type: "object", properties: {} },
        },
      ],
      tool_choice: "auto",
      parallel_tool_calls: true,
      reasoning: { summary: "auto" },
      store: false,
      stream: true,
      include: ["reasoning.encrypted_content"],
      prompt_cache_key: thread,
      client_metadata: { thread_id: thread, session_id: thread, turn_id: `${thread}-turn-${turn}` },
    },
    headers: { "content-type": "application/json", originator: "codex_exec", "session-id": thread, "thread-id": thread },
  };
}

/** Indexes of the workers that served a leg of the given phase for a conversation (one per request). */
const workerOf = (
  workers: readonly { requests: readonly { phase?: string; body: unknown }[] }[],
  phase: string,
  session: string,
): number[] =>
  workers.flatMap((w, index) =>
    w.requests
      .filter(
        (r) =>
          r.phase === phase && isJsonObject(r.body) && JSON.stringify(r.body["conversation_params"]) === `{"conversation_id":"${session}"}`,
      )
      .map(() => index),
  );

describe("conversation-aware placement through the proxy", () => {
  test("turns of one conversation stick to the same context worker", async () => {
    await using cluster = await startCluster({ contexts: [{}, {}, {}], config: { contextRouter: "conversation" } });
    for (let turn = 1; turn <= 4; turn++) {
      const response = await cluster.post("/v1/chat/completions", chat(history(turn)), {
        headers: { "content-type": "application/json", "x-session-id": "agent-7" },
      });
      expect(response.status).toBe(200);
    }
    const served = cluster.contexts.map((w) => w.requests.filter((r) => r.phase === "context").length);
    expect(served.toSorted((a, b) => a - b)).toEqual([0, 0, 4]);
  });

  test("multi-turn Codex threads over /v1/responses each stay on one context worker, apart although they share a long developer prompt", async () => {
    await using cluster = await startCluster({ contexts: [{}, {}], config: { contextRouter: "conversation" } });
    // Interleaved as two `codex exec` sessions and their `resume`s: without the thread id the
    // shared prompt makes every thread look like a continuation of the first (one worker for all).
    for (let turn = 1; turn <= 3; turn++) {
      for (const thread of ["thread-a", "thread-b"]) {
        const { body, headers } = codexTurn(thread, turn);
        const response = await cluster.post("/v1/responses", body, { headers });
        expect(response.status).toBe(200);
        expect(await response.text()).toContain("response.completed");
      }
    }
    const served = (thread: string): number[] =>
      cluster.contexts.flatMap((w, index) =>
        w.requests.filter((r) => r.phase === "context" && isJsonObject(r.body) && r.body["prompt_cache_key"] === thread).map(() => index),
      );
    const threadA = served("thread-a");
    const threadB = served("thread-b");
    expect(threadA).toHaveLength(3);
    expect(threadB).toHaveLength(3);
    expect(new Set(threadA).size).toBe(1);
    expect(new Set(threadB).size).toBe(1);
    expect(threadA[0]).not.toBe(threadB[0]);
    // Both legs are told the conversation, as trtllm-serve's edge tells them.
    expect(workerOf(cluster.contexts, "context", "thread-a")).toEqual(threadA);
  });

  describe("sub-agents (conversation_affinity_header_for_subagents)", () => {
    const PARENT = "X-Dynamo-Parent-Session-ID";
    const post = (cluster: Awaited<ReturnType<typeof startCluster>>, session: string, parent?: string): Promise<Response> =>
      cluster.post("/v1/chat/completions", chat(history(1)), {
        headers: { "content-type": "application/json", "x-session-id": session, ...(parent === undefined ? {} : { [PARENT]: parent }) },
      });

    for (const [scope, schedule] of [
      ["context", "context_first"],
      ["both", "context_first"],
      ["context", "generation_first"],
      ["both", "generation_first"],
    ] as const) {
      test(`scope ${scope}, ${schedule}: sub-agents land on their parent's context worker${scope === "both" ? " and generation worker" : ""}, other sessions spread`, async () => {
        await using cluster = await startCluster({
          contexts: [{}, {}, {}],
          generations: [{}, {}, {}],
          config: {
            schedule,
            contextRouter: "conversation",
            generationRouter: "conversation",
            internalAuthKey: "k",
            subagentAffinityHeader: PARENT,
            subagentAffinityScope: scope,
          },
        });
        expect((await post(cluster, "parent-1")).status).toBe(200);
        for (const child of ["child-a", "child-b", "child-c"]) {
          expect((await post(cluster, `unrelated-${child}`)).status).toBe(200);
          expect((await post(cluster, child, "parent-1")).status).toBe(200);
        }
        const parentContext = workerOf(cluster.contexts, "context", "parent-1");
        const parentGeneration = workerOf(cluster.generations, "generation", "parent-1");
        for (const child of ["child-a", "child-b", "child-c"]) {
          expect(workerOf(cluster.contexts, "context", child)).toEqual(parentContext);
          if (scope === "both") expect(workerOf(cluster.generations, "generation", child)).toEqual(parentGeneration);
        }
        // Sessions without the header spread by load, away from the parent's worker.
        const unrelated = ["child-a", "child-b", "child-c"].flatMap((child) => workerOf(cluster.contexts, "context", `unrelated-${child}`));
        expect(unrelated.some((index) => index !== parentContext[0])).toBe(true);
        if (scope === "context") {
          // The generation fleet places children by their own conversations: they do not all follow the parent.
          const children = ["child-a", "child-b", "child-c"].flatMap((child) => workerOf(cluster.generations, "generation", child));
          expect(new Set(children).size).toBeGreaterThan(1);
        }
      });
    }

    test("a sub-agent whose parent's worker is gone falls back to the least loaded worker, and its later turns follow", async () => {
      await using cluster = await startCluster({
        contexts: [{}, {}],
        config: { contextRouter: "conversation", internalAuthKey: "k", subagentAffinityHeader: PARENT },
      });
      expect((await post(cluster, "parent-1")).status).toBe(200);
      const [parentWorker] = workerOf(cluster.contexts, "context", "parent-1");
      // Out of rotation, as a failed health check leaves it.
      cluster.proxy.app.placement.pool.all("context").find((w) => w.origin === cluster.contexts[parentWorker!]!.url)!.ready = false;
      for (let turn = 0; turn < 2; turn++) expect((await post(cluster, "child-a", "parent-1")).status).toBe(200);
      expect(workerOf(cluster.contexts, "context", "child-a")).toEqual([1 - parentWorker!, 1 - parentWorker!]);
    });
  });

  test("conditional disaggregation skips the context phase when the generation worker holds the prompt", async () => {
    await using cluster = await startCluster({
      generations: [{}, {}],
      config: { generationRouter: "conversation", conditionalDisagg: { maxLocalPrefillLength: 200 } },
    });
    const first = await cluster.post("/v1/chat/completions", chat(history(3)));
    expect(first.status).toBe(200);
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
    const second = await cluster.post("/v1/chat/completions", chat([...history(3), { role: "user", content: "and one more thing" }]));
    expect(second.status).toBe(200);
    expect(cluster.contexts[0]!.requests.filter((r) => r.phase === "context")).toHaveLength(1);
    const alone = [...cluster.generations[0]!.requests, ...cluster.generations[1]!.requests].filter((r) => r.phase === "aggregated");
    expect(alone).toHaveLength(1);
    expect(isJsonObject(alone[0]!.body) && alone[0]!.body["disaggregated_params"]).toBeUndefined();
    expect(second.headers.get("x-trtllm-engine-request-id")).not.toBeNull();
  });

  test("a reserved generation worker is released when the context phase fails, finishes early or the client leaves", async () => {
    await using cluster = await startCluster({
      config: { generationRouter: "conversation", conditionalDisagg: { maxLocalPrefillLength: 0 }, maxRetries: 0 },
    });
    const table = cluster.proxy.app.placement.table;
    expect((await cluster.post("/v1/chat/completions", chat([{ role: "user", content: "[[emu ctx.reject=503]]" }]))).status).toBe(503);
    expect(table.active()).toBe(0);
    const early = await cluster.post("/v1/chat/completions", chat([{ role: "user", content: "short" }], { max_tokens: 1 }));
    expect(early.status).toBe(200);
    expect(table.active()).toBe(0);
    const client = new AbortController();
    const leaving = cluster.post("/v1/chat/completions", chat([{ role: "user", content: "[[emu ctx.prefill_ms=3000]]" }]), {
      signal: client.signal,
    });
    leaving.catch(() => {});
    await cluster.contexts[0]!.waitFor((r) => r.phase === "context" && r.status === "running");
    expect(table.active()).toBe(2);
    client.abort();
    await eventually(() => table.active() === 0);
    expect(table.snapshot()).toEqual({});
  });
});
