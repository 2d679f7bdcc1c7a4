/**
 * Sub-agents as Codex 0.169 and Claude Code 2.1.328 mark them, without a gateway header
 * (real-clients.md): each keeps its own conversation id and is placed by its parent's, with
 * the conversation router on three context workers.
 */

import { describe, expect, test } from "bun:test";
import { isJsonObject } from "../src/json/json.ts";
import type { EmulatedWorker } from "../src/emulator/index.ts";
import { codexSubagentTurn, codexTurn, type CodexRequest } from "./fixtures/codex/codex-0.169.ts";
import { startCluster, type TestCluster } from "./support/cluster.ts";

/** The conversation ids of the context requests each worker served, by worker. */
function conversationsOf(workers: readonly EmulatedWorker[]): string[][] {
  return workers.map((worker) =>
    worker.requests
      .filter((r) => r.phase === "context")
      .map((r) => {
        const params = isJsonObject(r.body) ? r.body["conversation_params"] : undefined;
        return isJsonObject(params) && typeof params["conversation_id"] === "string" ? params["conversation_id"] : "";
      }),
  );
}

const workerOf = (cluster: TestCluster, conversation: string): number =>
  conversationsOf(cluster.contexts).findIndex((ids) => ids.includes(conversation));

async function send(
  cluster: TestCluster,
  path: string,
  request: CodexRequest | { body: object; headers: Record<string, string> },
): Promise<void> {
  const response = await cluster.post(path, request.body, { headers: request.headers });
  expect(response.status).toBe(200);
  await response.text();
}

const conversationRouted = () => startCluster({ contexts: [{}, {}, {}], config: { contextRouter: "conversation" } });

describe("Codex sub-agents (x-codex-parent-thread-id, x-openai-subagent)", () => {
  test("a sub-agent keeps its own thread as its conversation and lands on its parent's context worker", async () => {
    await using cluster = await conversationRouted();
    const sessions = ["session-a", "session-b", "session-c"];
    for (const session of sessions) await send(cluster, "/v1/responses", codexTurn(session, `${session}: refactor the parser`));
    const parents = sessions.map((session) => workerOf(cluster, session));
    expect(new Set(parents).size).toBeGreaterThan(1);
    for (const [i, session] of sessions.entries()) {
      for (const n of [1, 2])
        await send(cluster, "/v1/responses", codexSubagentTurn(session, `${session}-sub-${n}`, `explore module ${n}`));
      for (const n of [1, 2]) expect(workerOf(cluster, `${session}-sub-${n}`)).toBe(parents[i]!);
    }
    // The sub-agents' own threads, never their parent's session, name their legs' conversations.
    const all = conversationsOf(cluster.contexts).flat();
    expect(all.filter((id) => id === "session-a")).toHaveLength(1);
  });

  test("a main thread without sub-agent marks is its own session, whatever its headers", async () => {
    await using cluster = await conversationRouted();
    const { body, headers } = codexTurn("session-x", "hi");
    const { prompt_cache_key: _key, client_metadata: _metadata, ...bare } = body;
    // No body field: the unprefixed thread-id header names the conversation.
    await send(cluster, "/v1/responses", { body: bare, headers });
    expect(workerOf(cluster, "session-x")).toBeGreaterThanOrEqual(0);
  });
});

const claudeMessage = (text: string): object => ({ model: "emulated-model", max_tokens: 3, messages: [{ role: "user", content: text }] });
const claudeHeaders = (session: string, agent?: string): Record<string, string> => ({
  "content-type": "application/json",
  "anthropic-version": "2023-06-01",
  "x-claude-code-session-id": session,
  ...(agent === undefined ? {} : { "x-claude-code-agent-id": agent }),
});

describe("Claude Code sub-agents (x-claude-code-agent-id)", () => {
  test("a sub-agent is its session plus agent id, placed with its parent session", async () => {
    await using cluster = await conversationRouted();
    const sessions = ["cc-1", "cc-2", "cc-3"];
    for (const session of sessions)
      await send(cluster, "/v1/messages", { body: claudeMessage(`${session} main`), headers: claudeHeaders(session) });
    const parents = sessions.map((session) => workerOf(cluster, session));
    expect(new Set(parents).size).toBeGreaterThan(1);
    for (const [i, session] of sessions.entries()) {
      await send(cluster, "/v1/messages", { body: claudeMessage("a task"), headers: claudeHeaders(session, "a1057fba9adcbf822") });
      expect(workerOf(cluster, `${session}:a1057fba9adcbf822`)).toBe(parents[i]!);
    }
  });

  test("the headers are read without the x- prefix too", async () => {
    await using cluster = await conversationRouted();
    await send(cluster, "/v1/messages", { body: claudeMessage("main"), headers: claudeHeaders("cc-9") });
    const parent = workerOf(cluster, "cc-9");
    const bare = { "content-type": "application/json", "claude-code-session-id": "cc-9", "claude-code-agent-id": "agent-7" };
    await send(cluster, "/v1/messages", { body: claudeMessage("a task"), headers: bare });
    expect(workerOf(cluster, "cc-9:agent-7")).toBe(parent);
  });
});
