/**
 * Regressions for what an outside probe and a chaos soak found (issue #17), one per finding,
 * over real sockets: raw TCP wherever a client library would hide the behaviour.
 */
import { describe, expect, test } from "bun:test";
import { eventually, startCluster, type TestCluster } from "./support/cluster.ts";
import type { JsonObject } from "../src/json/json.ts";
import { DEFAULTS } from "../src/config/types.ts";
import { memoryLogger } from "../src/observability/logger.ts";
import { openAiErrorResponse } from "../src/routes/errors.ts";
import { proxyThroughPipeline } from "../src/routes/proxied.ts";
import { createDispatch, type RouteTable } from "../src/server/dispatch.ts";
import { KeepAlive, keepAliveBound } from "../src/server/keep-alive.ts";
import { listen } from "../src/server/listener.ts";
import { rawConnect, rawJsonPost, rawRequest, statuses } from "./support/raw-http.ts";

const chat = (extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 3, ...extra });

function workerPosts(cluster: TestCluster): number {
  return [...cluster.contexts, ...cluster.generations].reduce((n, w) => n + w.requests.filter((r) => r.method === "POST").length, 0);
}

/** The JSON body of the last response in `received` (responses here are small and not chunked). */
function lastJsonBody(received: string): Record<string, unknown> {
  const body = received.slice(received.lastIndexOf("\r\n\r\n") + 4);
  return JSON.parse(body) as Record<string, unknown>;
}

function boom(): never {
  throw new TypeError("renderer broke on purpose");
}

describe("hardening: what the probe and the soak found", () => {
  test("a body with a Content-Length that stalls is cut with 408, however large its declared length", async () => {
    await using cluster = await startCluster({ config: { bodyMinBytesPerSecond: 1000, bodyGraceMs: 300, maxBodyBytes: 1024 * 1024 } });
    await using conn = await rawConnect(cluster.url);
    // Declared 1 MB: a deadline scaled by the declared length would wait ~1,000 s.
    conn.write(
      rawRequest(
        "POST",
        "/v1/chat/completions",
        { host: "p", "content-type": "application/json", "content-length": "1000000" },
        '{"model":"m",',
      ),
    );
    const received = await conn.until((r) => r.includes("\r\n\r\n"), 4000);
    expect(statuses(received)).toEqual([408]);
    await conn.closed;
    expect(workerPosts(cluster)).toBe(0);
  });

  test("deeply nested JSON is a 400 naming the depth bound, and reaches no worker", async () => {
    await using cluster = await startCluster({ config: { maxBodyBytes: 4 * 1024 * 1024 } });
    for (const depth of [5_000, 200_000]) {
      const body = `{"model":"m","messages":[{"role":"user","content":"x"}],"x":${"[".repeat(depth)}${"]".repeat(depth)}}`;
      const response = await cluster.post("/v1/chat/completions", body);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { message: string }).message).toMatch(/nested deeper than \d+ levels/);
    }
    expect(workerPosts(cluster)).toBe(0);
  });

  test("a body of very many keys is refused with a clear 413 before it is built, and reaches no worker", async () => {
    await using cluster = await startCluster({ config: { maxBodyBytes: 32 * 1024 * 1024 } });
    const keys = Array.from({ length: 300_000 }, (_, i) => `"k${i}":1`).join(",");
    const response = await cluster.post(
      "/v1/chat/completions",
      `{"model":"m","messages":[{"role":"user","content":"x"}],"extra":{${keys}}}`,
    );
    expect(response.status).toBe(413);
    expect(((await response.json()) as { message: string }).message).toMatch(/too many JSON values/);
    expect(workerPosts(cluster)).toBe(0);
  });

  test("requests pipelined behind answers the proxy gives at once are all answered, in order", async () => {
    await using cluster = await startCluster();
    await using conn = await rawConnect(cluster.url);
    conn.write(
      rawRequest("GET", "/version", { host: "p" }) +
        rawRequest("GET", "/livez", { host: "p" }) +
        rawRequest("GET", "/v1/models", { host: "p" }),
    );
    const received = await conn.until((r) => statuses(r).length === 3);
    expect(statuses(received)).toEqual([200, 200, 200]);
    expect(received.indexOf('"version"')).toBeLessThan(received.indexOf('"object"'));
  });

  // Bun 1.4.5 closes a connection when a request is pipelined behind a response that is still
  // pending (oven-sh/bun PR #38128, open; measured with a plain Bun.serve whose handler awaits
  // anything but the body): a proxied POST always is. RFC 9112 §9.3.2 lets a server close, and
  // asks clients not to pipeline after a POST and to retry unanswered requests. What must hold
  // is that nothing half-happens: no answer lands on the wrong request, and the POST's work is
  // cancelled at once (the runtime may have handed it to a worker already), logged as the
  // client's departure.
  test.each([false, true])(
    "a request pipelined after a POST (stream %p) closes the connection and cancels the POST's work",
    async (stream) => {
      // A prefill long enough that the POST's work is surely still running when the runtime closes.
      await using cluster = await startCluster({ contexts: [{ prefillMs: 2000 }] });
      await using conn = await rawConnect(cluster.url);
      conn.write(rawJsonPost("/v1/chat/completions", chat({ stream })) + rawRequest("GET", "/version", { host: "p" }));
      await conn.closed;
      expect(conn.received).toBe("");
      await eventually(() => cluster.logs.some((line) => line["msg"] === "request" && line["status"] === 499));
      const posts = (): { status: string }[] =>
        [...cluster.contexts, ...cluster.generations].flatMap((w) => w.requests.filter((r) => r.method === "POST"));
      await eventually(() => posts().every((r) => r.status === "aborted"), 1000);
      expect(cluster.generations[0]!.requests.filter((r) => r.method === "POST")).toEqual([]);
      // The same client retrying one request per round trip is served.
      await using retry = await rawConnect(cluster.url);
      retry.write(rawJsonPost("/v1/chat/completions", chat()));
      expect(statuses(await retry.until((r) => r.includes('"choices"')))).toEqual([200]);
    },
  );

  test("keep-alive connections that carried a proxied request (JSON or stream) are closed once idle past the idle timeout", async () => {
    await using cluster = await startCluster({ idleTimeoutS: 1 });
    const idle = async (body: string, answered: string): Promise<boolean> => {
      await using conn = await rawConnect(cluster.url);
      conn.write(rawJsonPost("/v1/chat/completions", body));
      await conn.until((r) => r.includes(answered));
      // The runtime's idle timer ticks every 4 s: a 1 s bound closes within ~4-8 s.
      await Promise.race([conn.closed, Bun.sleep(9000)]);
      return conn.isClosed;
    };
    expect(await Promise.all([idle(chat(), '"choices"'), idle(chat({ stream: true }), "[DONE]")])).toEqual([true, true]);
  }, 15_000);

  test("an oversized Content-Length gets a JSON 413 in the route's dialect, logged and counted", async () => {
    await using cluster = await startCluster({ config: { maxBodyBytes: 1024 } });
    for (const [path, type] of [
      ["/v1/chat/completions", "RequestTooLarge"],
      ["/v1/messages", "request_too_large"],
    ] as const) {
      await using conn = await rawConnect(cluster.url);
      conn.write(rawRequest("POST", path, { host: "p", "content-type": "application/json", "content-length": String(64 * 1024 * 1024) }));
      const received = await conn.until((r) => r.includes("}"));
      expect(statuses(received)).toEqual([413]);
      expect(JSON.stringify(lastJsonBody(received))).toContain(type);
    }
    const refusals = cluster.logs.filter((line) => line["status"] === 413);
    expect(refusals.map((line) => line["route"])).toEqual(["/v1/chat/completions", "/v1/messages"]);
    const metrics = await (await fetch(`${cluster.url}/metrics`)).text();
    expect(metrics).toContain(`disagg_proxy_validation_failures_total{route="/v1/messages"} 1`);
  });

  test("an HTTP/1.0 request without Host is routed by its own path", async () => {
    await using cluster = await startCluster();
    for (const [path, status] of [
      ["/zz/metrics", 404],
      ["/metrics", 200],
      ["/zz/version", 404],
    ] as const) {
      await using conn = await rawConnect(cluster.url);
      conn.write(`GET ${path} HTTP/1.0\r\n\r\n`);
      const received = await conn.until((r) => r.includes("\r\n\r\n"));
      expect(statuses(received)[0]).toBe(status);
    }
  });

  test.each([
    ["max_tokens", 1e300],
    ["max_tokens", 0],
    ["max_tokens", 2.5],
    ["max_tokens", 2 ** 53],
    ["max_completion_tokens", -1],
    ["n", 1e308],
    ["top_k", 1e300],
    ["seed", 1e300],
    ["temperature", 1e300],
  ])("%s: %p is a 400 and reaches no worker", async (field, value) => {
    await using cluster = await startCluster();
    const response = await cluster.post("/v1/chat/completions", chat({ [field]: value }));
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toContain(field);
    expect(workerPosts(cluster)).toBe(0);
  });

  test("a seed beyond 2^64 - 1 written as a float is a 400, whatever digits a string beside it holds", async () => {
    // Found by an outside review: 2^64 - 1 in a string and 18446744073709551616.0 round to one double,
    // and the seed was read as the string's digits, passing the bound, while workers got the client's 2^64.
    await using cluster = await startCluster();
    const body = `{"model":"m","user":"18446744073709551615","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"seed":18446744073709551616.0}`;
    const response = await fetch(`${cluster.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toContain("seed");
    expect(workerPosts(cluster)).toBe(0);
  });

  test("the same numeric bounds hold on completions, Messages and Responses", async () => {
    await using cluster = await startCluster();
    const bodies: [string, unknown][] = [
      ["/v1/completions", { model: "m", prompt: "x", max_tokens: 1e300 }],
      ["/v1/messages", { model: "m", max_tokens: 1e300, messages: [{ role: "user", content: "x" }] }],
      ["/v1/responses", { model: "m", input: "x", max_output_tokens: 1e300 }],
    ];
    for (const [path, body] of bodies) expect([path, (await cluster.post(path, body)).status]).toEqual([path, 400]);
    expect(workerPosts(cluster)).toBe(0);
  });

  test("a client leaving in the middle of its body is logged as a departure (499), not as an internal error", async () => {
    // Found by the 8-minute chaos soak's log count: the body read's AbortError was a 500 at error level.
    await using cluster = await startCluster();
    for (const declared of [400, 500_000]) {
      const conn = await rawConnect(cluster.url);
      conn.write(
        rawRequest(
          "POST",
          "/v1/chat/completions",
          { host: "p", "content-type": "application/json", "content-length": String(declared) },
          '{"model":"m","messages":[',
        ),
      );
      await Bun.sleep(20);
      conn.end();
    }
    await eventually(() => cluster.logs.filter((line) => line["msg"] === "request").length === 2);
    expect(cluster.logs.filter((line) => line["msg"] === "request").map((line) => [line["status"], line["outcome"]])).toEqual([
      [499, "client_disconnected"],
      [499, "client_disconnected"],
    ]);
    expect(cluster.logs.filter((line) => line["level"] === "error")).toEqual([]);
  });

  test("a failure inside the proxy is logged at error level with its cause and stack, which the reply never shows", async () => {
    await using cluster = await startCluster();
    const { app } = cluster.proxy;
    const logger = memoryLogger();
    const routes: RouteTable = {
      // Before a request context exists: the handler itself throws.
      "/before": { methods: { POST: boom } },
      // After: the pipeline ran and the route's renderer throws on the worker's answer.
      "/after": {
        methods: {
          POST: async (deps, request, connection) => {
            const body = (await request.json()) as JsonObject;
            const dialect = { openStream: () => boom(), replay: () => boom(), errorResponse: openAiErrorResponse, renderJson: boom };
            return proxyThroughPipeline({ deps, request, connection, route: "/after", api: "chat", body, dialect });
          },
        },
      },
    };
    const keepAlive = new KeepAlive(keepAliveBound(DEFAULTS.serverKeepAliveTimeoutS));
    const server = listen({ ...DEFAULTS, host: "127.0.0.1" }, 0, createDispatch(app, routes, keepAlive), logger);
    try {
      for (const path of ["/before", "/after"]) {
        const response = await fetch(`${server.url.origin}${path}`, { method: "POST", body: chat() });
        const text = await response.text();
        expect(response.status).toBe(500);
        expect(text).not.toContain("renderer broke");
        expect(text).not.toMatch(/\.ts:\d+/);
      }
      // The dispatcher logs the first (no request context yet); the request's end, the second.
      const errors = (): Record<string, unknown>[] => [...logger.records, ...cluster.logs].filter((line) => line["level"] === "error");
      await eventually(() => errors().length === 2);
      for (const line of errors()) {
        const text = JSON.stringify(line);
        expect(text).toContain("renderer broke on purpose");
        expect(text).toMatch(/TypeError/);
        expect(text).toMatch(/hardening\.test\.ts:\d+/);
      }
      expect([...logger.records, ...cluster.logs].filter((l) => l["level"] === "warn")).toEqual([]);
    } finally {
      await server.stop(true);
    }
  });
});
