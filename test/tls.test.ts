import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createWorkerFetch } from "../src/workers/transport.ts";
import { startCluster } from "./support/cluster.ts";

/** A self-signed certificate for 127.0.0.1, made by openssl for this test run. */
export function selfSigned(dir: string, name: string): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  const made = Bun.spawnSync([
    "openssl",
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "1",
    "-subj",
    `/CN=${name}`,
    "-addext",
    "subjectAltName=IP:127.0.0.1",
    "-keyout",
    key,
    "-out",
    cert,
  ]);
  if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`);
  return { cert, key };
}

const trusting = (pem: string): { tls: { ca: string } } => ({ tls: { ca: pem } });

describe("TLS", () => {
  test("the proxy serves HTTPS with the configured certificate and swaps it on reload without dropping a stream", async () => {
    const dir = mkdtempSync(join(tmpdir(), "disagg-tls-"));
    const first = selfSigned(dir, "first");
    const second = selfSigned(dir, "second");
    const live = { cert: join(dir, "live.crt"), key: join(dir, "live.key") };
    writeFileSync(live.cert, await Bun.file(first.cert).text());
    writeFileSync(live.key, await Bun.file(first.key).text());
    await using cluster = await startCluster({
      generations: [{ tokenMs: 50 }],
      config: { tlsCertFile: live.cert, tlsKeyFile: live.key, streamStartWaitMs: 50 },
    });
    const url = cluster.proxy.url.href.replace(/\/$/, "");
    expect(url.startsWith("https://")).toBe(true);
    const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "[[emu tokens=8]]" }], max_tokens: 8, stream: true });
    const open = await fetch(`${url}/v1/chat/completions`, { method: "POST", body, ...trusting(await Bun.file(first.cert).text()) });
    const text = open.text();
    writeFileSync(live.cert, await Bun.file(second.cert).text());
    writeFileSync(live.key, await Bun.file(second.key).text());
    cluster.proxy.reloadTls();
    const fresh = await fetch(`${url}/health`, trusting(await Bun.file(second.cert).text()));
    expect(fresh.status).toBe(200);
    expect(await text).toContain("[DONE]");
  });

  test("https workers are trusted through --worker-ca, and the worker API key is sent to them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "disagg-tls-"));
    const pair = selfSigned(dir, "worker");
    const seen: (string | null)[] = [];
    using worker = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: await Bun.file(pair.cert).text(), key: await Bun.file(pair.key).text() },
      fetch(request) {
        seen.push(request.headers.get("authorization"));
        return new Response(null, { status: 200 });
      },
    });
    const origin = worker.url.origin;
    const trusted = createWorkerFetch({ workerCaFile: pair.cert, workerApiKey: "worker-secret" });
    expect((await trusted(`${origin}/health`)).status).toBe(200);
    expect(seen).toEqual(["Bearer worker-secret"]);
    const untrusted = createWorkerFetch({});
    expect(
      await untrusted(`${origin}/health`).then(
        () => "connected",
        () => "refused",
      ),
    ).toBe("refused");
  });
});
