/**
 * The chaos soak: the proxy in front of two context and two generation emulated workers, all
 * separate processes, under a closed loop of clients on every route (chat, completions,
 * Responses, Messages; streamed and not; worker faults by prompt directive; clients that leave;
 * bodies that must be refused) while the workers are SIGKILLed and restarted, SIGSTOPped and
 * SIGCONTed, wedged (/health 200, every request hanging), and the proxy is sent SIGHUP. The
 * workers close idle kept-alive connections as uvicorn does (1 s here), two of them reset every
 * kept-alive connection's next request unread, and the context workers hold each hand-off's KV
 * until pulled or 5 s (kv_transfer_timeout_ms). At the end it checks what a bad day must not
 * leave behind: requests in flight, client sockets past the idle timeout, worker requests still
 * running for clients that left, hand-offs still held, client requests missing from the log,
 * memory that did not come back.
 */

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { rssBytes, socketBreakdown } from "../cluster/proc-stats.ts";
import { spawnService, type Service } from "../cluster/service.ts";
import { seededRandom } from "../load/soak-mix.ts";
import { CHAOS_KINDS, pickChaosKind, type ChaosKind } from "./chaos-mix.ts";

export interface ChaosSoakPlan {
  readonly seconds: number;
  /** Concurrent client loops. */
  readonly clients: number;
  /** A process fault every this many seconds. */
  readonly faultEverySeconds: number;
  /** The proxy's idle bound on client connections (server_keep_alive_timeout). */
  readonly idleTimeoutS: number;
  /** RSS is taken as the baseline once this share of the run has passed. */
  readonly warmupShare: number;
  readonly seed: number;
  readonly logDir: string;
  /** How to run the program: the compiled binary, or bun with src/main.ts. */
  readonly command: readonly string[];
  /** The proxy's schedule style (context_first unless set). */
  readonly schedule?: "context_first" | "generation_first" | undefined;
}

export interface ChaosSoakReport {
  readonly plan: Omit<ChaosSoakPlan, "command" | "logDir">;
  readonly requests: number;
  readonly byKind: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly faults: readonly string[];
  readonly proxyRestarted: boolean;
  readonly checks: {
    readonly inFlightAfter: number;
    readonly streamsOpenAfter: number;
    /** Client connections the proxy still held once idle past the timeout (the clients kept theirs open). */
    readonly clientSocketsAfterIdle: number;
    readonly clientSocketsBeforeIdle: number;
    /** Model requests still running on the workers once the load stopped. */
    readonly workerRequestsRunning: number;
    /** Hand-offs the context workers held as the load stopped, and once settled (their kv_transfer_timeout_ms is 5 s). */
    readonly handoffsHeldAtEnd: number;
    readonly handoffsHeldAfter: number;
    /** What the proxy did about the faults: hand-offs settled, workers ejected, requests restarted before their first byte, requests resent on a fresh connection. */
    readonly handoffsSettled: number;
    readonly ejections: number;
    readonly restarts: number;
    readonly freshConnectionRetries: number;
    /** Legs a restarted worker answered with its start-up 503, moved to another worker (or restarted on a fresh pair). */
    readonly startingAnswers: number;
    /**
     * Client requests sent per route, of those the ones whose client left (or whose connection
     * broke) before an answer: such a request may never have been written, and the proxy
     * cannot log what it never received; and request lines in the proxy's log per route.
     */
    readonly sentByRoute: Readonly<Record<string, number>>;
    readonly leftByRoute: Readonly<Record<string, number>>;
    readonly loggedByRoute: Readonly<Record<string, number>>;
    readonly rssWarmMiB: number;
    readonly rssPeakMiB: number;
    readonly rssEndMiB: number;
  };
  readonly failures: readonly string[];
  readonly pass: boolean;
}

const RSS_SLACK = 1.2;
/** The runtime's idle timer ticks every 4 s: a connection idle for N s closes within N + 4 s. */
const IDLE_TICK_S = 4;
const SETTLE_TIMEOUT_MS = 20_000;
const ROUTES = ["/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages"];

interface Worker {
  readonly role: "context" | "generation";
  readonly port: number;
  /** Its connection and KV settings (kept across restarts). */
  readonly flags: readonly string[];
  service: Service;
}

/** uvicorn's keep-alive close on every worker; a reset of every kept-alive connection's next request on the second of each role. */
function workerFlags(role: "context" | "generation", index: number): string[] {
  const flags = ["--keep-alive-timeout-ms", "1000"];
  if (role === "context") flags.push("--kv-transfer-timeout-ms", "5000");
  if (index % 2 === 1) flags.push("--reset-kept-alive");
  return flags;
}

export async function runChaosSoak(plan: ChaosSoakPlan): Promise<ChaosSoakReport> {
  mkdirSync(plan.logDir, { recursive: true });
  const random = seededRandom(plan.seed);
  const workers: Worker[] = [];
  const started: Service[] = [];
  const failures: string[] = [];
  try {
    for (const role of ["context", "context", "generation", "generation"] as const) {
      const port = freePort();
      const flags = workerFlags(role, workers.length);
      const service = await spawnWorker(plan, role, port, workers.length, flags);
      workers.push({ role, port, flags, service });
    }
    const configFile = join(plan.logDir, "chaos-soak.yaml");
    writeFileSync(configFile, yamlFor(workers, plan.idleTimeoutS));
    const proxy = await spawnService({
      name: "chaos-soak-proxy",
      cmd: [
        ...plan.command,
        "serve",
        "-c",
        configFile,
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--request-timeout",
        "3",
        "--max-body-bytes",
        String(1024 * 1024),
        "--health-check-interval-ms",
        "500",
        "--body-grace-ms",
        "2000",
        "--worker-keep-alive-s",
        "0.8",
        "--outlier-failures",
        "3",
        "--outlier-ejection-s",
        "2",
        "--first-token-timeout-ms",
        "2500",
        ...(plan.schedule === undefined ? [] : ["--schedule", plan.schedule]),
      ],
      env: { BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" },
      logDir: plan.logDir,
    });
    started.push(proxy);
    await untilHealthy(proxy.url);
    const port = Number(new URL(proxy.url).port);
    const bodies = new Map(CHAOS_KINDS.map((kind) => [kind.name, kind.body()]));
    const byKind: Record<string, Record<string, number>> = Object.fromEntries(CHAOS_KINDS.map((kind) => [kind.name, {}]));
    const sentByRoute: Record<string, number> = Object.fromEntries(ROUTES.map((route) => [route, 0]));
    const leftByRoute: Record<string, number> = Object.fromEntries(ROUTES.map((route) => [route, 0]));
    const faults: string[] = [];
    const began = performance.now();
    const endAt = began + plan.seconds * 1000;
    const rss: { t: number; bytes: number }[] = [];
    const sampler = setInterval(() => rss.push({ t: (performance.now() - began) / 1000, bytes: rssBytes(proxy.pid) }), 1000);
    const count = (kind: ChaosKind, outcome: string): void => {
      const tally = byKind[kind.name]!;
      tally[outcome] = (tally[outcome] ?? 0) + 1;
    };
    const lane = async (): Promise<void> => {
      while (performance.now() < endAt) {
        const kind = pickChaosKind(random);
        sentByRoute[kind.route] = (sentByRoute[kind.route] ?? 0) + 1;
        const outcome = await oneRequest(proxy.url, kind, bodies.get(kind.name)!, random);
        // Left, or broken before any answer (a keep-alive connection the proxy closed as idle
        // just as the client reused it): the request may never have reached the proxy.
        if (outcome === "left" || outcome === "broken") leftByRoute[kind.route] = (leftByRoute[kind.route] ?? 0) + 1;
        count(kind, outcome);
      }
    };
    const chaos = async (): Promise<void> => {
      let next = 0;
      while (performance.now() + plan.faultEverySeconds * 1000 < endAt) {
        await Bun.sleep(plan.faultEverySeconds * 1000);
        const fault = FAULTS[next++ % FAULTS.length]!;
        const worker = workers[Math.floor(random() * workers.length)]!;
        faults.push(await fault(worker, proxy, plan));
      }
    };
    await Promise.all([chaos(), ...Array.from({ length: plan.clients }, lane)]);
    clearInterval(sampler);
    // The load has stopped. Every client keeps its keep-alive connections open: closing idle
    // ones is the proxy's job.
    const inFlightAfter = await settle(() => inFlightOf(proxy.url), SETTLE_TIMEOUT_MS);
    const streamsOpenAfter = await settle(() => streamsOpen(proxy.url), SETTLE_TIMEOUT_MS);
    const workerRequestsRunning = await settle(
      async () => sum(await Promise.all(workers.map((w) => runningOn(w.port)))),
      SETTLE_TIMEOUT_MS,
    );
    const contexts = workers.filter((w) => w.role === "context");
    const heldNow = async (): Promise<number> => sum(await Promise.all(contexts.map((w) => heldOn(w.port))));
    const handoffsHeldAtEnd = await heldNow();
    const handoffsHeldAfter = await settle(heldNow, SETTLE_TIMEOUT_MS);
    const handoffsSettled = await settledHandoffs(proxy.url);
    const clientSocketsBeforeIdle = socketBreakdown(proxy.pid, port).clients;
    await Bun.sleep((plan.idleTimeoutS + 2 * IDLE_TICK_S) * 1000);
    const clientSocketsAfterIdle = socketBreakdown(proxy.pid, port).clients;
    const rssEnd = rssBytes(proxy.pid);
    const warmFrom = plan.seconds * plan.warmupShare;
    const warm = rss.filter((s) => s.t >= warmFrom && s.t < warmFrom + Math.max(5, plan.seconds * 0.1));
    const rssWarm = warm.length > 0 ? Math.max(...warm.map((s) => s.bytes)) : rssEnd;
    const loggedByRoute = requestLinesByRoute(proxy.logFile);
    const linesOf = (msg: string): number =>
      readFileSync(proxy.logFile, "utf8")
        .split("\n")
        .filter((line) => line.includes(`"msg":"${msg}`)).length;
    const checks = {
      inFlightAfter,
      streamsOpenAfter,
      clientSocketsAfterIdle,
      clientSocketsBeforeIdle,
      workerRequestsRunning,
      handoffsHeldAtEnd,
      handoffsHeldAfter,
      handoffsSettled,
      ejections: linesOf("worker ejected"),
      restarts: linesOf("generation failed before any byte reached the client"),
      freshConnectionRetries: linesOf("context leg: a reused connection") + linesOf("generation leg: a reused connection"),
      startingAnswers:
        linesOf("context leg: the worker answered that it is starting") +
        linesOf("generation leg: the worker answered that it is starting"),
      sentByRoute,
      leftByRoute,
      loggedByRoute,
      rssWarmMiB: mib(rssWarm),
      rssPeakMiB: mib(Math.max(...rss.map((s) => s.bytes))),
      rssEndMiB: mib(rssEnd),
    };
    if (inFlightAfter !== 0) failures.push(`${inFlightAfter} requests still in flight at the workers (proxy's count)`);
    if (streamsOpenAfter !== 0) failures.push(`${streamsOpenAfter} client streams still open`);
    if (clientSocketsAfterIdle !== 0)
      failures.push(
        `${clientSocketsAfterIdle} client connections still open ${plan.idleTimeoutS + 2 * IDLE_TICK_S} s after the load stopped`,
      );
    if (workerRequestsRunning !== 0) failures.push(`${workerRequestsRunning} worker requests still running`);
    if (handoffsHeldAfter !== 0) failures.push(`${handoffsHeldAfter} hand-offs still held by the context workers`);
    for (const route of ROUTES) {
      const sent = sentByRoute[route] ?? 0;
      const logged = loggedByRoute[route] ?? 0;
      // Every request answered is logged; one whose client left may not have been sent at all.
      if (logged > sent || logged < sent - (leftByRoute[route] ?? 0))
        failures.push(`${route}: ${sent} sent (${leftByRoute[route]} left or broke early), ${logged} in the log`);
    }
    if (rssEnd > rssWarm * RSS_SLACK)
      failures.push(`RSS ${mib(rssEnd)} MiB at the end, over ${RSS_SLACK}× the ${mib(rssWarm)} MiB after warm-up`);
    const requests = sum(Object.values(sentByRoute));
    const proxyRestarted = !processAlive(proxy.pid);
    if (proxyRestarted) failures.push("the proxy died");
    const { command: _command, logDir: _logDir, ...shown } = plan;
    return { plan: shown, requests, byKind, faults, proxyRestarted, checks, failures, pass: failures.length === 0 };
  } finally {
    for (const service of [...started, ...workers.map((w) => w.service)]) {
      // A worker may still be stopped by the last fault.
      if (processAlive(service.pid)) process.kill(service.pid, "SIGCONT");
      await service.stop();
    }
  }
}

type Fault = (worker: Worker, proxy: Service, plan: ChaosSoakPlan) => Promise<string>;

const FAULTS: readonly Fault[] = [
  async (worker, _proxy, plan) => {
    process.kill(worker.service.pid, "SIGKILL");
    await Bun.sleep(1500);
    worker.service = await spawnWorker(plan, worker.role, worker.port, 0, worker.flags);
    return `SIGKILL ${worker.role}:${worker.port}, restarted after 1.5 s`;
  },
  async (worker, _proxy, plan) => {
    // Healthy but wedged: /health 200, every model request hangs until the proxy gives up on it.
    process.kill(worker.service.pid, "SIGKILL");
    await Bun.sleep(200);
    worker.service = await spawnWorker(plan, worker.role, worker.port, 1, [
      ...worker.flags,
      "--reject-status",
      "500",
      "--reject-after-ms",
      "600000",
    ]);
    await Bun.sleep(4000);
    process.kill(worker.service.pid, "SIGKILL");
    await Bun.sleep(200);
    worker.service = await spawnWorker(plan, worker.role, worker.port, 2, worker.flags);
    return `wedged ${worker.role}:${worker.port} for 4 s`;
  },
  async (worker) => {
    process.kill(worker.service.pid, "SIGSTOP");
    await Bun.sleep(2500);
    process.kill(worker.service.pid, "SIGCONT");
    return `SIGSTOP ${worker.role}:${worker.port} for 2.5 s`;
  },
  async (_worker, proxy) => {
    process.kill(proxy.pid, "SIGHUP");
    return "SIGHUP proxy";
  },
  async (worker, _proxy, plan) => {
    // Restarted at once, loading its model for 1.5 s: requests that reach it before the next
    // health check get upstream's start-up 503.
    process.kill(worker.service.pid, "SIGKILL");
    worker.service = await spawnWorker(plan, worker.role, worker.port, 3, [...worker.flags, "--starting-ms", "1500"]);
    return `SIGKILL ${worker.role}:${worker.port}, restarted at once with a 1.5 s start-up`;
  },
];

/** One client request; returns how it went: its status, "left" (the client aborted) or "broken". */
async function oneRequest(url: string, kind: ChaosKind, body: string, random: () => number): Promise<string> {
  const controller = new AbortController();
  const leave =
    kind.leaveAfterMs === undefined
      ? undefined
      : setTimeout(() => controller.abort(), kind.leaveAfterMs[0] + random() * (kind.leaveAfterMs[1] - kind.leaveAfterMs[0]));
  try {
    const response = await fetch(url + kind.route, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      signal: controller.signal,
    });
    await response.arrayBuffer();
    return String(response.status);
  } catch {
    return controller.signal.aborted ? "left" : "broken";
  } finally {
    clearTimeout(leave);
  }
}

async function spawnWorker(
  plan: ChaosSoakPlan,
  role: "context" | "generation",
  port: number,
  index: number,
  flags: readonly string[],
): Promise<Service> {
  const cmd = [...plan.command, "worker", "--role", role, "--port", String(port), "--host", "127.0.0.1", "--max-records", "200", ...flags];
  return spawnService({ name: `chaos-soak-${role}-${port}-${index}`, cmd, logDir: plan.logDir });
}

function yamlFor(workers: readonly Worker[], idleTimeoutS: number): string {
  const urls = (role: string): string =>
    workers
      .filter((w) => w.role === role)
      .map((w) => `"127.0.0.1:${w.port}"`)
      .join(", ");
  return [
    `server_keep_alive_timeout: ${idleTimeoutS}`,
    `context_servers:`,
    `  num_instances: 2`,
    `  urls: [${urls("context")}]`,
    `generation_servers:`,
    `  num_instances: 2`,
    `  urls: [${urls("generation")}]`,
    ``,
  ].join("\n");
}

function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = listener.port;
  listener.stop(true);
  return port;
}

async function untilHealthy(url: string): Promise<void> {
  const deadline = performance.now() + 15_000;
  while (performance.now() < deadline) {
    const status = await fetch(`${url}/health`, { headers: { connection: "close" } }).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    await Bun.sleep(50);
  }
  throw new Error(`the proxy at ${url} did not become healthy`);
}

/** Polls until the figure is 0 or the timeout passes; returns the last figure. */
async function settle(figure: () => Promise<number>, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await figure();
    if (value === 0 || performance.now() > deadline) return value;
    await Bun.sleep(200);
  }
}

async function inFlightOf(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { connection: "close" } })).text();
  return sum([...text.matchAll(/^disagg_proxy_worker_in_flight\{[^}]*\} (\d+)/gm)].map((m) => Number(m[1])));
}

async function streamsOpen(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { connection: "close" } })).text();
  return Number(/^disagg_proxy_streams_open (\d+)/m.exec(text)?.[1] ?? Number.NaN);
}

async function runningOn(port: number): Promise<number> {
  const answer = (await (await fetch(`http://127.0.0.1:${port}/emulator/running`, { headers: { connection: "close" } })).json()) as {
    running: number;
  };
  return answer.running;
}

/** Hand-offs a context worker holds now (its GET /metrics, heldKvHandoffs). */
async function heldOn(port: number): Promise<number> {
  const stats = (await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { connection: "close" } })).json()) as {
    heldKvHandoffs?: number;
  }[];
  return stats[0]?.heldKvHandoffs ?? 0;
}

async function settledHandoffs(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { connection: "close" } })).text();
  return sum([...text.matchAll(/^disagg_proxy_handoffs_settled_total\{[^}]*\} (\d+)/gm)].map((m) => Number(m[1])));
}

/** Request lines of the proxy's log (accepted requests' summaries and refusals alike), by route. */
function requestLinesByRoute(logFile: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of readFileSync(logFile, "utf8").split("\n")) {
    if (!line.includes('"msg":"request"')) continue;
    const record = JSON.parse(line) as { route?: string };
    if (record.route !== undefined) out[record.route] = (out[record.route] ?? 0) + 1;
  }
  return out;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function mib(bytes: number): number {
  return Math.round((bytes / 1024 / 1024) * 10) / 10;
}
