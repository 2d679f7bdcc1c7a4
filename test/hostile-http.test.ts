/**
 * The outside probe, kept: hostile HTTP over raw TCP, asserting that what held stays held —
 * no desync (a request hidden anywhere is never answered as a request of its own), no path
 * that reaches a route it does not name, no way past the client keys, no client-forged
 * hand-off reaching a worker, no connection to a host a client names.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isJsonObject, type JsonValue } from "../src/json/json.ts";
import { startCluster, type TestCluster } from "./support/cluster.ts";
import { rawConnect, rawJsonPost, rawRequest, statuses } from "./support/raw-http.ts";

const BODY = '{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":2}';
/** What a smuggled request would answer if it were ever parsed as one. */
const SMUGGLED = "GET /version HTTP/1.1\r\nHost: p\r\n\r\n";

function modelPosts(cluster: TestCluster): number {
  return [...cluster.contexts, ...cluster.generations].reduce((n, w) => n + w.requests.filter((r) => r.method === "POST").length, 0);
}

/** The raw request with two Host headers after its request line: this proxy's, then another's. */
function twoHosts(raw: string): string {
  return raw.replace("\r\n", "\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n");
}

/** Sends `raw` on a fresh connection; resolves once the server closed it or went quiet. */
async function send(cluster: TestCluster, raw: string): Promise<{ statuses: number[]; received: string; closed: boolean }> {
  await using conn = await rawConnect(cluster.url);
  conn.write(raw);
  await conn.until((r) => r.includes("\r\n\r\n")).catch(() => "");
  // Long enough for a smuggled second answer to arrive, if there were one.
  await Promise.race([conn.closed, Bun.sleep(150)]);
  return { statuses: statuses(conn.received), received: conn.received, closed: conn.isClosed };
}

describe("hostile HTTP: request framing (desync)", () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster();
  });
  afterAll(async () => {
    await cluster[Symbol.asyncDispose]();
  });

  const refused: [string, string][] = [
    [
      "Content-Length and Transfer-Encoding together",
      `POST /v1/chat/completions HTTP/1.1\r\nHost: p\r\nContent-Length: ${BODY.length}\r\nTransfer-Encoding: chunked\r\n\r\n${BODY.length.toString(16)}\r\n${BODY}\r\n0\r\n\r\n${SMUGGLED}`,
    ],
    [
      "a chunked body ending early with a request after it, under a short Content-Length",
      `POST /v1/chat/completions HTTP/1.1\r\nHost: p\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n${SMUGGLED}`,
    ],
    [
      "two different Content-Lengths",
      `POST /v1/chat/completions HTTP/1.1\r\nHost: p\r\nContent-Length: ${BODY.length}\r\nContent-Length: 5\r\n\r\n${BODY}`,
    ],
    [
      "an obs-folded header line",
      `POST /v1/chat/completions HTTP/1.1\r\nHost: p\r\nContent-Type: application/json\r\n folded\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`,
    ],
    ["bare LF line endings", `POST /v1/chat/completions HTTP/1.1\nHost: p\nContent-Length: ${BODY.length}\n\n${BODY}`],
    [
      "a chunk size that is not hex",
      `POST /v1/chat/completions HTTP/1.1\r\nHost: p\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n${BODY}\r\n0\r\n\r\n`,
    ],
    [
      "a chunk size beyond 64 bits",
      `POST /v1/chat/completions HTTP/1.1\r\nHost: p\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n${BODY}\r\n0\r\n\r\n`,
    ],
    ["a negative Content-Length", `POST /v1/chat/completions HTTP/1.1\r\nHost: p\r\nContent-Length: -1\r\n\r\n${BODY}`],
    [
      "Transfer-Encoding identity",
      `POST /v1/chat/completions HTTP/1.1\r\nHost: p\r\nTransfer-Encoding: identity\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`,
    ],
    ["an unknown Transfer-Encoding", `POST /v1/chat/completions HTTP/1.1\r\nHost: p\r\nTransfer-Encoding: xchunked\r\n\r\n${BODY}`],
    ["a space before a header's colon", `POST /v1/chat/completions HTTP/1.1\r\nHost: p\r\nContent-Length : ${BODY.length}\r\n\r\n${BODY}`],
  ];

  test.each(refused)("%s: refused with a 4xx/5xx, the connection closed, nothing smuggled, no worker reached", async (_name, raw) => {
    const before = modelPosts(cluster);
    const answer = await send(cluster, raw);
    expect(answer.statuses).toHaveLength(1);
    expect(answer.statuses[0]).toBeGreaterThanOrEqual(400);
    expect(answer.received).not.toContain('"version"');
    expect(answer.closed).toBe(true);
    expect(modelPosts(cluster)).toBe(before);
  });

  test("a request hidden in a body is a body: one 400, never a second answer", async () => {
    const before = modelPosts(cluster);
    const answer = await send(
      cluster,
      rawRequest("POST", "/v1/chat/completions", { host: "p", "content-length": String(SMUGGLED.length) }, SMUGGLED),
    );
    expect(answer.statuses).toEqual([400]);
    expect(answer.received).not.toContain('"version"');
    expect(modelPosts(cluster)).toBe(before);
  });

  test("two equal Content-Lengths are one length: the request is served once", async () => {
    const answer = await send(
      cluster,
      rawRequest(
        "POST",
        "/v1/chat/completions",
        { host: "p", "content-length": String(BODY.length), "Content-Length": String(BODY.length) },
        BODY,
      ),
    );
    expect(answer.statuses).toEqual([200]);
  });

  test("a chunked body trickled below the floor rate is cut with 408 and reaches no worker", async () => {
    await using slow = await startCluster({ config: { bodyMinBytesPerSecond: 1000, bodyGraceMs: 300 } });
    await using conn = await rawConnect(slow.url);
    conn.write(rawRequest("POST", "/v1/chat/completions", { host: "p", "transfer-encoding": "chunked" }));
    for (const char of BODY) {
      if (conn.received !== "" || conn.isClosed) break;
      conn.write(`1\r\n${char}\r\n`);
      await Bun.sleep(40);
    }
    expect(statuses(await conn.until((r) => r.includes("\r\n\r\n")))).toEqual([408]);
    expect(modelPosts(slow)).toBe(0);
  });
});

describe("hostile HTTP: paths, hosts and targets", () => {
  let cluster: TestCluster;
  let evilHits = 0;
  let evil: Bun.Server<undefined>;
  beforeAll(async () => {
    evil = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch() {
        evilHits++;
        return new Response("evil");
      },
    });
    cluster = await startCluster();
  });
  afterAll(async () => {
    await cluster[Symbol.asyncDispose]();
    await evil.stop(true);
  });

  test.each([
    "/v1/chat/completions/../../metrics",
    "//metrics",
    "/%6detrics",
    "/METRICS",
    "/metrics/",
    "/v1//chat/completions",
    "/v1/chat/completions%2f",
  ])("%s names no route: 404", async (path) => {
    expect((await send(cluster, rawRequest("GET", path, { host: "p" }))).statuses).toEqual([404]);
  });

  test("dot segments are resolved before routing, with or without Host: the route served is the route checked", async () => {
    expect((await send(cluster, rawRequest("GET", "/health/../version", { host: "p" }))).received).toContain('"version"');
    expect((await send(cluster, "GET /zz/../version HTTP/1.0\r\n\r\n")).received).toContain('"version"');
    expect((await send(cluster, rawRequest("GET", "/v1/chat/completions/../../metrics", { host: "p" }))).statuses).toEqual([404]);
  });

  test("an asterisk-form target is refused", async () => {
    expect((await send(cluster, "OPTIONS * HTTP/1.1\r\nHost: p\r\n\r\n")).statuses).toEqual([400]);
  });

  test("neither an absolute-form target nor a Host header makes the proxy connect anywhere but its workers", async () => {
    const target = new URL(evil.url);
    const viaTarget = await send(cluster, rawJsonPost(`http://${target.host}/v1/chat/completions`, BODY));
    const viaHost = await send(
      cluster,
      rawRequest(
        "POST",
        "/v1/chat/completions",
        { host: target.host, "content-type": "application/json", "content-length": String(BODY.length) },
        BODY,
      ),
    );
    const viaForwarded = await send(
      cluster,
      rawJsonPost("/v1/chat/completions", BODY, { "x-forwarded-host": target.host, forwarded: `host=${target.host}` }),
    );
    expect([viaTarget.statuses, viaHost.statuses, viaForwarded.statuses]).toEqual([[200], [200], [200]]);
    expect(evilHits).toBe(0);
  });

  test("a request carrying two Host headers (this proxy's, then another's) is a 400 on every route, the guarded ones and the model routes; no worker reached", async () => {
    const before = modelPosts(cluster);
    for (const path of ["/cluster_info", "/dashboard/data", "/health"]) {
      expect((await send(cluster, twoHosts(`GET ${path} HTTP/1.1\r\nConnection: close\r\n\r\n`))).statuses).toEqual([400]);
    }
    const post = twoHosts(
      `POST /v1/chat/completions HTTP/1.1\r\ncontent-type: application/json\r\ncontent-length: ${BODY.length}\r\n\r\n${BODY}`,
    );
    const refused = await send(cluster, post);
    expect(refused.statuses).toEqual([400]);
    expect(refused.received).toContain("more than one Host header");
    expect(modelPosts(cluster)).toBe(before);
  });

  test("a request with an empty Host, or an HTTP/1.0 one with none, reads its query as any other: no 500 on the dashboard or /health", async () => {
    for (const head of ["GET /dashboard/data?after=0 HTTP/1.1\r\nHost:\r\n", "GET /dashboard/data?after=0 HTTP/1.0\r\n"]) {
      const answer = await send(cluster, `${head}Connection: close\r\n\r\n`);
      expect(answer.statuses).toEqual([200]);
      expect(answer.received).toContain('"series"');
    }
    const hosted = (await send(cluster, "GET /health?model=m HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")).statuses;
    expect(hosted).toEqual([200]);
    for (const head of ["GET /health?model=m HTTP/1.1\r\nHost: \r\n", "GET /health?model=m HTTP/1.0\r\n"]) {
      expect((await send(cluster, `${head}Connection: close\r\n\r\n`)).statuses).toEqual(hosted);
    }
    expect(cluster.logs.filter((record) => record["msg"] === "unexpected failure")).toEqual([]);
  });

  test("a worker never sees the client's Host", async () => {
    await send(
      cluster,
      rawRequest(
        "POST",
        "/v1/chat/completions",
        { host: "attacker.example", "content-type": "application/json", "content-length": String(BODY.length) },
        BODY,
      ),
    );
    const seen = cluster.contexts[0]!.requests.filter((r) => r.method === "POST").map((r) => r.headers["host"]);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.some((host) => host?.includes("attacker"))).toBe(false);
  });
});

describe("hostile HTTP: client keys", () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), "hostile-keys-"));
    const keyFile = join(dir, "keys");
    writeFileSync(keyFile, "sk-right-key\n");
    cluster = await startCluster({ config: { apiKeyFile: keyFile, protectMetrics: true } });
  });
  afterAll(async () => {
    await cluster[Symbol.asyncDispose]();
  });

  const attempts: [string, Record<string, string>, string][] = [
    ["no key", {}, "/v1/chat/completions"],
    ["a wrong key", { authorization: "Bearer sk-wrong" }, "/v1/chat/completions"],
    ["the key's prefix", { authorization: "Bearer sk-right" }, "/v1/chat/completions"],
    ["the key with a suffix", { authorization: "Bearer sk-right-key2" }, "/v1/chat/completions"],
    ["the key without its scheme", { authorization: "sk-right-key" }, "/v1/chat/completions"],
    ["Basic instead of Bearer", { authorization: `Basic ${btoa("sk-right-key:")}` }, "/v1/chat/completions"],
    ["the key in the query", {}, "/v1/chat/completions?api_key=sk-right-key"],
    ["an open path's dot segments", {}, "/health/../v1/chat/completions"],
    ["metrics without a key (--protect-metrics)", {}, "/metrics"],
  ];

  test.each(attempts)("%s: 401 (or 404 for a path that names no route), no worker reached", async (_name, headers, path) => {
    const before = modelPosts(cluster);
    const method = path === "/metrics" ? "GET" : "POST";
    const body = method === "POST" ? BODY : "";
    const all = { host: "p", "content-type": "application/json", "content-length": String(body.length), ...headers };
    const answer = await send(cluster, rawRequest(method, path, all, body));
    expect(answer.statuses.length).toBe(1);
    expect([401, 404]).toContain(answer.statuses[0] ?? 0);
    expect(modelPosts(cluster)).toBe(before);
  });

  test("HTTP/1.0 without Host does not skip the key check", async () => {
    const answer = await send(cluster, `POST /v1/chat/completions HTTP/1.0\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`);
    expect(answer.statuses).toEqual([401]);
  });

  test("the right key is served, and health stays open", async () => {
    const ok = await send(cluster, rawJsonPost("/v1/chat/completions", BODY, { authorization: "Bearer sk-right-key" }));
    const health = await send(cluster, rawRequest("GET", "/health", { host: "p" }));
    expect([ok.statuses, health.statuses]).toEqual([[200], [200]]);
  });
});

describe("hostile HTTP: forged hand-off fields", () => {
  test("a client's disaggregated_params and prompt_token_ids_b64 never reach a worker; its prompt_token_ids and conversation_params do", async () => {
    await using cluster = await startCluster();
    const forged = {
      model: "m",
      messages: [{ role: "user", content: "x" }],
      max_tokens: 3,
      prompt_token_ids: [1, 2, 3],
      prompt_token_ids_b64: "AQAAAAIAAAA=",
      conversation_params: { conversation_id: "conv-1" },
      disaggregated_params: {
        request_type: "generation_only",
        ctx_request_id: 7,
        ctx_info_endpoint: "http://attacker.example:1/",
        encoded_opaque_state: "Zm9yZ2Vk",
        ctx_usage: { prompt_tokens: 1, cached_tokens: 999 },
        disagg_request_id: 1,
      },
    };
    const response = await cluster.post("/v1/chat/completions", forged);
    expect(response.status).toBe(200);
    const bodies = [...cluster.contexts, ...cluster.generations].flatMap((w) =>
      w.requests.filter((r) => r.method === "POST").map((r) => r.body),
    );
    expect(bodies.length).toBeGreaterThan(0);
    const text = JSON.stringify(bodies, (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value));
    // The forged usage is matched as its field: a bare "999" is in ~2 % of random ids and worker ports.
    for (const forgedValue of ["attacker.example", "Zm9yZ2Vk", "AQAAAAIAAAA=", '"cached_tokens":999'])
      expect(text).not.toContain(forgedValue);
    const contextBody = bodies[0] as JsonValue;
    expect(isJsonObject(contextBody) && contextBody["prompt_token_ids"]).toEqual([1, 2, 3]);
    expect(isJsonObject(contextBody) && contextBody["conversation_params"]).toEqual({ conversation_id: "conv-1" });
  });
});
