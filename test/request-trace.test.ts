import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually, startCluster, type TestCluster } from "./support/cluster.ts";
import { fakeWorker } from "./support/fake-worker.ts";

/**
 * TRTLLM_REQUEST_TRACE_DIR (#25 item 6): every accepted request gets one `accepted` line and
 * exactly one terminal line in upstream's vocabulary, credentials redacted, over real HTTP.
 */

type Line = Record<string, unknown>;

/** Every line of one kind the proxy wrote so far, across hour directories. */
function traceLines(dir: string, kind: "requests" | "responses"): Line[] {
  const out: Line[] = [];
  for (const hour of readdirSync(dir).toSorted()) {
    for (const file of readdirSync(join(dir, hour)).filter((name) => name.startsWith(`${kind}-`))) {
      for (const line of readFileSync(join(dir, hour, file), "utf8").split("\n")) if (line !== "") out.push(JSON.parse(line) as Line);
    }
  }
  return out;
}

/** The terminal line of the request whose accepted line `match` picks (waits for it). */
async function terminalOf(
  cluster: TestCluster,
  dir: string,
  match: (request: Line) => boolean,
): Promise<{ request: Line; terminals: Line[] }> {
  let request: Line | undefined;
  let terminals: Line[] = [];
  await eventually(
    async () => {
      await cluster.proxy.app.requestTrace?.flush();
      request = traceLines(dir, "requests").find(match);
      terminals = request === undefined ? [] : traceLines(dir, "responses").filter((line) => line["trace_id"] === request!["trace_id"]);
      return terminals.length > 0;
    },
    3000,
    "the request's terminal line",
  );
  return { request: request!, terminals };
}

const byId = (a: string, b: string): number => a.localeCompare(b);
const chat = (content: string, extra: Record<string, unknown> = {}) => ({
  model: "emulated-model",
  messages: [{ role: "user", content }],
  ...extra,
});
const contentIs = (content: string) => (request: Line) => JSON.stringify(request["body"]).includes(content);

describe("request trace over the emulated cluster", () => {
  const dir = mkdtempSync(join(tmpdir(), "request-trace-"));
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster({
      contexts: [{ maxSeqLen: 40 }],
      generations: [{ tokenMs: 20 }],
      config: { requestTraceDir: dir, maxRetries: 0 },
    });
  });
  afterAll(async () => {
    await cluster[Symbol.asyncDispose]();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a JSON answer: accepted, then completed with the body the client got; credentials redacted, their names kept", async () => {
    const response = await cluster.post("/v1/chat/completions", chat("first [[emu tokens=2]]", { max_tokens: 2, api_key: "body-secret" }), {
      headers: {
        "content-type": "application/json",
        authorization: "Bearer sk-secret",
        "x-api-key": "k-secret",
        cookie: "s=secret",
        "x-session-id": "conv/1",
        "x-auth-key": "cf-secret",
        "x-hub-signature-256": "sha256=secret",
        "x-jwt": "jwt-secret",
      },
    });
    const answer = await response.json();
    const { request, terminals } = await terminalOf(cluster, dir, contentIs("first"));
    expect(request).toMatchObject({ event: "request", route: "/v1/chat/completions", status: "accepted", session: "conv_1" });
    const headers = new Map(request["headers"] as [string, string][]);
    expect(headers.get("authorization")).toBe("[redacted]");
    expect(headers.get("x-api-key")).toBe("[redacted]");
    expect(headers.get("cookie")).toBe("[redacted]");
    // A session id may be a credential too: its value is redacted, the line's session keeps the key.
    expect(headers.get("x-session-id")).toBe("[redacted]");
    expect(JSON.stringify(request)).not.toContain("secret");
    for (const name of ["x-auth-key", "x-hub-signature-256", "x-jwt"]) expect(headers.get(name)).toBe("[redacted]");
    expect(request["body"]).toEqual(chat("first [[emu tokens=2]]", { max_tokens: 2, api_key: "[redacted]" }));
    expect(terminals).toHaveLength(1);
    expect(terminals[0]).toMatchObject({ event: "response", status: "completed", response: { kind: "json", body: answer } });
    expect(typeof terminals[0]!["disagg_request_id"]).toBe("number");
  });

  test("a stream: completed, its text as the client read it", async () => {
    const response = await cluster.post("/v1/chat/completions", chat("second [[emu tokens=3]]", { stream: true }));
    const text = await response.text();
    const { terminals } = await terminalOf(cluster, dir, contentIs("second"));
    expect(terminals).toEqual([expect.objectContaining({ status: "completed", response: { kind: "sse_text", body: text } })]);
  });

  test("a worker's refusal: rejected_400 with the worker's envelope and the HTTP status", async () => {
    const response = await cluster.post("/v1/chat/completions", chat(`third ${"word ".repeat(50)}`));
    expect(response.status).toBe(400);
    const body = await response.json();
    const { terminals } = await terminalOf(cluster, dir, contentIs("third"));
    expect(terminals).toEqual([expect.objectContaining({ status: "rejected_400", http_status: 400, response: { kind: "json", body } })]);
  });

  test("a /v1/messages refusal, streamed: rejected_400 with the Anthropic body the client got", async () => {
    const response = await cluster.post("/v1/messages", {
      model: "emulated-model",
      max_tokens: 8,
      stream: true,
      messages: [{ role: "user", content: `twelfth ${"word ".repeat(50)}` }],
    });
    expect(response.status).toBe(400);
    const body = await response.json();
    const { request, terminals } = await terminalOf(cluster, dir, contentIs("twelfth"));
    expect(request["route"]).toBe("/v1/messages");
    // The client's own (Anthropic) body, not the chat request the workers got.
    expect(request["body"]).toMatchObject({ max_tokens: 8, messages: [{ role: "user" }] });
    expect(terminals).toEqual([expect.objectContaining({ status: "rejected_400", http_status: 400, response: { kind: "json", body } })]);
  });

  test("a streamed Responses overflow: completed, with the reply's own status failed and its error code", async () => {
    const response = await cluster.post("/v1/responses", { model: "emulated-model", input: `fourth ${"word ".repeat(50)}`, stream: true });
    expect(response.status).toBe(200);
    await response.text();
    const { terminals } = await terminalOf(cluster, dir, contentIs("fourth"));
    expect(terminals).toEqual([
      expect.objectContaining({ status: "completed", response_status: "failed", error_code: "context_length_exceeded" }),
    ]);
  });

  test("a client that leaves mid-stream: client_disconnected", async () => {
    const controller = new AbortController();
    const response = await cluster.post("/v1/chat/completions", chat("fifth [[emu tokens=200]]", { stream: true }), {
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    await reader.read().catch(() => {});
    const { terminals } = await terminalOf(cluster, dir, contentIs("fifth"));
    expect(terminals.map((line) => line["status"])).toEqual(["client_disconnected"]);
  });

  test("/prometheus/metrics counts the trace's lines by what became of them", async () => {
    await cluster.post("/v1/chat/completions", chat("seventeenth")).then((response) => response.text());
    await terminalOf(cluster, dir, contentIs("seventeenth"));
    const text = await (await fetch(`${cluster.url}/prometheus/metrics`)).text();
    const persisted = /^disagg_proxy_request_trace_lines_total\{result="persisted"\} (\d+)$/m.exec(text);
    expect(Number(persisted?.[1])).toBeGreaterThanOrEqual(2);
    expect(text).toMatch(/^disagg_proxy_request_trace_lines_total\{result="queue_full"\} 0$/m);
  });

  test("every accepted request has exactly one terminal line", async () => {
    await Promise.all([
      cluster.post("/v1/chat/completions", chat("ninth")).then((response) => response.text()),
      cluster.post("/v1/chat/completions", chat("tenth", { stream: true })).then((response) => response.text()),
      cluster.post("/v1/responses", { model: "emulated-model", input: "eleventh", stream: true }).then((response) => response.text()),
    ]);
    await terminalOf(cluster, dir, contentIs("eleventh"));
    await terminalOf(cluster, dir, contentIs("tenth"));
    await terminalOf(cluster, dir, contentIs("ninth"));
    const accepted = traceLines(dir, "requests").map((line) => String(line["trace_id"]));
    const terminals = traceLines(dir, "responses").map((line) => String(line["trace_id"]));
    expect(terminals.toSorted(byId)).toEqual(accepted.toSorted(byId));
    expect(accepted.length).toBeGreaterThanOrEqual(3);
    expect(new Set(accepted).size).toBe(accepted.length);
  });
});

describe("request trace: requests refused before admission", () => {
  const dir = mkdtempSync(join(tmpdir(), "request-trace-"));
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster({ config: { requestTraceDir: dir } });
  });
  afterAll(async () => {
    await cluster[Symbol.asyncDispose]();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a refused body gets one request line, rejected_<status> with validation_errors, and no terminal line", async () => {
    const refusals = [
      cluster.post("/v1/chat/completions", chat("thirteenth", { chat_template: "{{ messages }}" })),
      cluster.post("/v1/responses", { model: 5, input: "fourteenth" }),
      cluster.post("/v1/messages", {
        model: "m",
        max_tokens: 8,
        messages: [{ role: "user", content: [{ type: "document", source: { type: "text", data: "fifteenth" } }] }],
      }),
      cluster.post("/v1/chat/completions", chat("sixteenth", { max_tokens: 2 ** 40 })),
    ];
    for (const response of await Promise.all(refusals)) expect(response.status).toBe(400);
    const words = ["thirteenth", "fourteenth", "fifteenth", "sixteenth"];
    await eventually(
      async () => {
        await cluster.proxy.app.requestTrace?.flush();
        const written = traceLines(dir, "requests");
        return words.every((word) => written.some(contentIs(word)));
      },
      3000,
      "the four refused requests' lines",
    );
    const lines = traceLines(dir, "requests");
    const errors = (word: string): { loc: string[]; type: string; msg: string }[] =>
      lines.find(contentIs(word))!["validation_errors"] as { loc: string[]; type: string; msg: string }[];
    expect(errors("thirteenth")[0]!.msg).toContain("chat_template");
    expect(errors("sixteenth")[0]!.msg).toContain("max_tokens");
    for (const word of words) {
      const line = lines.find(contentIs(word))!;
      expect([line["event"], line["status"]]).toEqual(["request", "rejected_400"]);
      expect(errors(word)).toHaveLength(1);
      expect(errors(word)[0]!.loc).toEqual(["body"]);
      expect(errors(word)[0]!.type).toBe("bad_request");
    }
    expect(
      readdirSync(dir)
        .flatMap((hour) => readdirSync(join(dir, hour)))
        .some((file) => file.startsWith("responses-")),
    ).toBe(false);
  });

  test("a body that is not a JSON object is recorded as the text it was, with body_parse_error", async () => {
    const response = await cluster.post("/v1/chat/completions", '{"model": "m", "messages": [eighteenth');
    expect(response.status).toBe(400);
    await eventually(
      async () => {
        await cluster.proxy.app.requestTrace?.flush();
        return traceLines(dir, "requests").some((line) => line["body"] === '{"model": "m", "messages": [eighteenth');
      },
      3000,
      "the unparsed body's line",
    );
    const line = traceLines(dir, "requests").find((candidate) => candidate["body"] === '{"model": "m", "messages": [eighteenth')!;
    expect(line["status"]).toBe("rejected_400");
    expect(line["body_parse_error"]).toBe("Request body is not valid JSON");
    expect(line["route"]).toBe("/v1/chat/completions");
  });
});

describe("request trace: failures the proxy itself answers", () => {
  const dir = mkdtempSync(join(tmpdir(), "request-trace-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("a worker's 503: error, with the HTTP status kept apart from a 500", async () => {
    await using cluster = await startCluster({
      contexts: [{ faults: { rejectStatus: 503 } }],
      config: { requestTraceDir: dir, maxRetries: 0 },
    });
    const response = await cluster.post("/v1/chat/completions", chat("sixth"));
    expect(response.status).toBe(503);
    const { terminals } = await terminalOf(cluster, dir, contentIs("sixth"));
    expect(terminals).toEqual([expect.objectContaining({ status: "error", http_status: 503 })]);
  });

  test("a request the shutdown aborts: cancelled", async () => {
    await using cluster = await startCluster({ generations: [{ tokenMs: 50 }], config: { requestTraceDir: dir } });
    const response = await cluster.post("/v1/chat/completions", chat("seventh [[emu tokens=400]]", { stream: true }));
    const reader = response.body!.getReader();
    await reader.read();
    await cluster.proxy.drain(10);
    const { terminals } = await terminalOf(cluster, dir, contentIs("seventh"));
    expect(terminals).toEqual([
      expect.objectContaining({ status: "cancelled", termination: { cause: "shutdown", detail: expect.any(String) } }),
    ]);
    await reader.cancel().catch(() => {});
  });

  test("a /v1/messages client that leaves before any answer (during the prefill): client_disconnected", async () => {
    await using cluster = await startCluster({ contexts: [{ prefillMs: 5000 }], config: { requestTraceDir: dir } });
    const controller = new AbortController();
    const sent = cluster
      .post(
        "/v1/messages",
        { model: "m", max_tokens: 8, messages: [{ role: "user", content: "nineteenth" }] },
        { signal: controller.signal },
      )
      .catch(() => undefined);
    await cluster.contexts[0]!.waitFor((request) => request.body !== undefined && JSON.stringify(request.body).includes("nineteenth"));
    controller.abort();
    await sent;
    const { terminals } = await terminalOf(cluster, dir, contentIs("nineteenth"));
    expect(terminals.map((line) => line["status"])).toEqual(["client_disconnected"]);
  });

  test("a worker answer /v1/messages cannot convert: conversion_error, the worker's answer recorded", async () => {
    const answer = {
      id: "chatcmpl-1",
      object: "chat.completion",
      model: "m",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: "not json" } }],
          },
          finish_reason: "tool_calls",
        },
      ],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    };
    using generation = fakeWorker(() => Response.json(answer));
    await using cluster = await startCluster({
      contexts: [],
      generations: [],
      config: { generationServers: [`http://127.0.0.1:${generation.port}`], benchmarkGenerationOnly: true, requestTraceDir: dir },
    });
    const response = await cluster.post("/v1/messages", { model: "m", max_tokens: 8, messages: [{ role: "user", content: "eighth" }] });
    expect(response.status).toBe(500);
    const { terminals } = await terminalOf(cluster, dir, contentIs("eighth"));
    expect(terminals).toHaveLength(1);
    expect(terminals[0]!["status"]).toBe("conversion_error");
    const body = (terminals[0]!["response"] as { body: { upstream_body: string } }).body;
    expect(JSON.parse(body.upstream_body)).toEqual(answer);
  });
});
