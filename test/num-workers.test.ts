import { afterAll, describe, expect, test } from "bun:test";
import { startEmulatedWorker, type EmulatedWorker } from "../src/emulator/index.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { scratch } from "./support/scratch.ts";
import { eventually } from "./support/wait.ts";

const dirs = scratch();
afterAll(() => dirs.removeAll());

/** The proxy as operators run it (`serve --num-workers 4`): the extra event loops are Bun Workers of the program itself. */
interface Served extends AsyncDisposable {
  readonly url: string;
  readonly child: Bun.Subprocess<"ignore", "pipe", "pipe">;
  /** Every stdout line so far (the request log). */
  lines(): string[];
  /** Resolves once stdout has ended and every line of it is in lines(). */
  readonly outputEnded: Promise<void>;
}

async function serve(args: readonly string[], env: Record<string, string> = {}): Promise<Served> {
  const child = Bun.spawn(
    [process.execPath, "src/main.ts", "serve", "--host", "127.0.0.1", "--port", "0", "--log-level", "info", ...args],
    {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "65535", ...env },
    },
  );
  let text = "";
  const decoder = new TextDecoder();
  const outputEnded = (async () => {
    for await (const chunk of child.stdout) text += decoder.decode(chunk, { stream: true });
  })();
  await eventually(() => text.includes("\n") || child.exitCode !== null, 15_000, "the proxy's URL line");
  const url = text.slice(0, text.indexOf("\n")).trim();
  if (!url.startsWith("http://")) throw new Error(`the proxy did not start: ${text}${await new Response(child.stderr).text()}`);
  await eventually(async () => (await fetch(`${url}/health`).catch(() => undefined))?.status === 200, 10_000, "the proxy ready");
  // Each extra loop joins the port once its own health checks found the workers, and says so.
  const loops = Number(args[args.indexOf("--num-workers") + 1]);
  await eventually(
    () => text.split("\n").filter((line) => line.includes('"msg":"event loop listening"')).length === loops - 1,
    10_000,
    "every event loop listening",
  );
  return {
    url,
    child,
    lines: () => text.split("\n").filter((line) => line.startsWith("{")),
    outputEnded,
    async [Symbol.asyncDispose]() {
      child.kill("SIGKILL");
      await child.exited;
    },
  };
}

/** The process id bits of a disagg_request_id (request/disagg-id.ts): one per event loop. */
function loopOf(id: string): bigint {
  return (BigInt(id) >> 10n) & 63n;
}

const held = (n: number): string =>
  JSON.stringify({
    model: "m",
    messages: [{ role: "user", content: `stream ${n} [[emu tokens=8 gen.silence_ms=60000 gen.silence_after=1]]` }],
    max_tokens: 8,
    stream: true,
  });

describe("num_workers: several event loops serve one port with one load view", () => {
  test("40 streams at once over 4 event loops: each generation worker gets exactly its --max-inflight-per-worker, the rest 429, and /metrics counts all 40", async () => {
    const generations: EmulatedWorker[] = [startEmulatedWorker({ role: "generation" }), startEmulatedWorker({ role: "generation" })];
    try {
      // Generation-only benchmark mode: no context leg, so the generation workers' limit is the only one met.
      await using proxy = await serve(
        ["--num-workers", "4", "--max-inflight-per-worker", "3", "--generation", generations.map((w) => w.url).join(",")],
        { TRTLLM_DISAGG_BENCHMARK_GEN_ONLY: "1" },
      );
      const clients = Array.from({ length: 40 }, () => new AbortController());
      const answers = await Promise.all(
        clients.map((client, n) =>
          fetch(`${proxy.url}/v1/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: held(n),
            signal: client.signal,
          }),
        ),
      );
      const statuses = answers.map((answer) => answer.status);
      expect(statuses.filter((status) => status === 200)).toHaveLength(6);
      expect(statuses.filter((status) => status === 429)).toHaveLength(34);
      for (const worker of generations) expect(worker.running()).toBe(3);
      const metrics = await (await fetch(`${proxy.url}/metrics`)).text();
      expect(metrics).toContain("total_requests_total 40");
      for (const worker of generations) expect(metrics).toContain(`disagg_proxy_worker_in_flight{role="generation",url="${worker.url}"} 3`);
      // The 34 refusals were logged by more than one loop (each loop mints ids with its own process id).
      await eventually(() => proxy.lines().filter((line) => line.includes('"status":429')).length === 34, 5000, "34 refusals logged");
      const loops = new Set(
        proxy
          .lines()
          .filter((line) => line.includes('"msg":"request"'))
          .map((line) => loopOf((JSON.parse(line) as { disagg_request_id: string }).disagg_request_id)),
      );
      expect(loops.size).toBeGreaterThan(1);
      // The streams' ends release their slots in whichever loop holds them: the same 6 fit again.
      for (const client of clients) client.abort();
      await eventually(
        async () =>
          (await (await fetch(`${proxy.url}/metrics`)).text()).includes(
            `disagg_proxy_worker_in_flight{role="generation",url="${generations[0]?.url}"} 0`,
          ),
        5000,
        "the slots released",
      );
      const again = await Promise.all(
        Array.from({ length: 6 }, (_, n) =>
          fetch(`${proxy.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: held(n) }),
        ),
      );
      expect(again.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200, 200]);
      for (const answer of again) await answer.body?.cancel();
    } finally {
      await Promise.all(generations.map((worker) => worker.stop()));
    }
  }, 30_000);

  test("the dashboard is one view: whichever event loop answers, it counts the requests every loop served", async () => {
    const context = startEmulatedWorker({ role: "context" });
    const generation = startEmulatedWorker({ role: "generation" });
    try {
      await using proxy = await serve(["--num-workers", "4", "--context", context.url, "--generation", generation.url]);
      const answers = await Promise.all(
        Array.from({ length: 40 }, () =>
          fetch(`${proxy.url}/v1/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json", connection: "close" },
            body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 3 }),
          }),
        ),
      );
      expect(answers.map((answer) => answer.status).every((status) => status === 200)).toBe(true);
      // An extra loop's log line reaches stdout through the main thread, after its answer may have reached the client.
      const requestLines = (): string[] => proxy.lines().filter((line) => line.includes('"msg":"request"'));
      await eventually(() => requestLines().length === 40, 5000, "40 requests logged");
      const loops = new Set(requestLines().map((line) => loopOf((JSON.parse(line) as { disagg_request_id: string }).disagg_request_id)));
      expect(loops.size).toBeGreaterThan(1);
      const okTotal = async (): Promise<number | undefined> => {
        // A new connection each time: the kernel hands it to any loop.
        const snapshot = (await (await fetch(`${proxy.url}/dashboard/data`, { headers: { connection: "close" } })).json()) as {
          proxy: { requests: { route: string; outcome: string; total: number }[] };
        };
        return snapshot.proxy.requests.find((row) => row.route === "/v1/chat/completions" && row.outcome === "ok")?.total;
      };
      await eventually(async () => (await okTotal()) === 40, 5000, "the dashboard counting all 40");
      for (let i = 0; i < 8; i++) expect(await okTotal()).toBe(40);
      const events = await fetch(`${proxy.url}/dashboard/events`, { headers: { connection: "close" } });
      expect(events.headers.get("content-type")).toContain("text/event-stream");
      const first = await events.body?.getReader().read();
      expect(new TextDecoder().decode(first?.value)).toContain("event: snapshot");
      await events.body?.cancel().catch(() => undefined);
    } finally {
      await Promise.all([context.stop(), generation.stop()]);
    }
  }, 30_000);

  test("SIGHUP's new worker list reaches every event loop: once reloaded, no loop sends to the removed worker", async () => {
    const context = startEmulatedWorker({ role: "context" });
    const before = startEmulatedWorker({ role: "generation" });
    const after = startEmulatedWorker({ role: "generation" });
    const file = join(dirs.dir("num-workers-"), "disagg_config.yaml");
    const yaml = (generation: EmulatedWorker): string =>
      [
        "num_workers: 3",
        "context_servers:",
        "  num_instances: 1",
        `  urls: ["${context.url}"]`,
        "generation_servers:",
        "  num_instances: 1",
        `  urls: ["${generation.url}"]`,
        "",
      ].join("\n");
    try {
      writeFileSync(file, yaml(before));
      await using proxy = await serve(["-c", file, "--num-workers", "3"]);
      const chat = async (): Promise<number> =>
        (
          await fetch(`${proxy.url}/v1/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json", connection: "close" },
            body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 3 }),
          })
        ).status;
      expect(await chat()).toBe(200);
      writeFileSync(file, yaml(after));
      proxy.child.kill("SIGHUP");
      // Each loop brings the new worker in after its own healthy check (one "worker ready" line each);
      // then 24 requests on new connections (any loop) all go there.
      const readyLines = (): number =>
        proxy.lines().filter((line) => line.includes('"msg":"worker ready"') && line.includes(after.url)).length;
      await eventually(() => readyLines() === 3, 10_000, "the new worker ready in all 3 loops");
      const served = before.requests.length;
      const statuses = await Promise.all(Array.from({ length: 24 }, () => chat()));
      expect(statuses.every((status) => status === 200)).toBe(true);
      expect(before.requests.length).toBe(served);
    } finally {
      await Promise.all([context.stop(), before.stop(), after.stop()]);
    }
  }, 30_000);

  test("SIGTERM drains every event loop and the process exits 0", async () => {
    const context = startEmulatedWorker({ role: "context" });
    const generation = startEmulatedWorker({ role: "generation" });
    try {
      await using proxy = await serve(["--num-workers", "3", "--context", context.url, "--generation", generation.url]);
      const answer = await fetch(`${proxy.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 3 }),
      });
      expect(answer.status).toBe(200);
      proxy.child.kill("SIGTERM");
      expect(await proxy.child.exited).toBe(0);
      await proxy.outputEnded;
      expect(proxy.lines().filter((line) => line.includes('"msg":"draining"'))).toHaveLength(3);
    } finally {
      await Promise.all([context.stop(), generation.stop()]);
    }
  }, 30_000);
});
