/**
 * The clients of an upgrade run: one paced loop per kind (new connection or kept alive,
 * streamed or not), each answer checked whole, each failure classed as refused, reset or
 * failed, with the first messages kept.
 */

import { ExchangeError, getRequest, postRequest, RawHttpConnection, type Answer, type ExchangeFailure } from "./raw-client.ts";

export const LOOP_KINDS = [
  "new connection, not streamed",
  "new connection, streamed",
  "kept alive, not streamed",
  "kept alive, streamed",
] as const;
/** Loops that open connections as fast as they are answered (GET /livez), to fill the listener's accept queue. */
export const BURST_KIND = "burst: new connections, GET /livez";
export type LoopKind = (typeof LOOP_KINDS)[number] | typeof BURST_KIND;

export interface Tally {
  ok: number;
  refused: number;
  reset: number;
  failed: number;
}

export interface LoopResults {
  readonly byKind: Record<LoopKind, Tally>;
  /** The first failures, with the kind and when. */
  readonly failures: string[];
  /** Kept-alive connections opened again after the server closed one (an upgrade closes idle ones). */
  reconnects: number;
}

const MAX_FAILURES_KEPT = 20;
const REQUEST_TIMEOUT_MS = 10_000;

export function chatBody(stream: boolean, maxTokens: number, content: string): string {
  return JSON.stringify({ model: "m", messages: [{ role: "user", content }], max_tokens: maxTokens, stream });
}

/** A whole answer: 200, a stream that ends with [DONE] and carries no error, or a chat completion. */
export function answerProblem(answer: Answer, stream: boolean): string | undefined {
  if (answer.status !== 200) return `status ${answer.status}: ${answer.body.slice(0, 200)}`;
  if (stream) {
    if (!answer.body.endsWith("data: [DONE]\n\n")) return `stream without [DONE]: …${answer.body.slice(-200)}`;
    if (answer.body.includes('"error"')) return `stream with an error event: ${answer.body.slice(0, 300)}`;
    return undefined;
  }
  try {
    const parsed = JSON.parse(answer.body) as { choices?: unknown[] };
    return Array.isArray(parsed.choices) && parsed.choices.length > 0 ? undefined : `no choices: ${answer.body.slice(0, 200)}`;
  } catch {
    return `not JSON: ${answer.body.slice(0, 200)}`;
  }
}

/** Runs the four loops until `stop` aborts, each at most `ratePerLoop` requests a second, and `burst` unpaced loops. */
export async function runClientLoops(host: string, port: number, ratePerLoop: number, stop: AbortSignal, burst = 0): Promise<LoopResults> {
  const results: LoopResults = {
    byKind: Object.fromEntries([...LOOP_KINDS, BURST_KIND].map((kind) => [kind, { ok: 0, refused: 0, reset: 0, failed: 0 }])) as Record<
      LoopKind,
      Tally
    >,
    failures: [],
    reconnects: 0,
  };
  const record = (kind: LoopKind, outcome: keyof Tally, message?: string): void => {
    results.byKind[kind][outcome] += 1;
    if (message !== undefined && results.failures.length < MAX_FAILURES_KEPT)
      results.failures.push(`${new Date().toISOString()} ${kind}: ${outcome}: ${message}`);
  };
  const loop = async (kind: LoopKind): Promise<void> => {
    const keepAlive = kind.startsWith("kept");
    const stream = kind.endsWith(" streamed") && !kind.endsWith("not streamed");
    let connection: RawHttpConnection | undefined;
    let sequence = 0;
    while (!stop.aborted) {
      const started = performance.now();
      sequence += 1;
      try {
        if (connection?.closed === true) {
          connection = undefined;
          results.reconnects += 1;
        }
        connection ??= await RawHttpConnection.open(host, port, REQUEST_TIMEOUT_MS);
        const answer = await connection.exchange(
          postRequest(host, port, "/v1/chat/completions", chatBody(stream, 2, `${kind} ${sequence}`), keepAlive),
          REQUEST_TIMEOUT_MS,
        );
        if (!keepAlive || answer.closes) {
          connection.close();
          connection = undefined;
        }
        const problem = answerProblem(answer, stream);
        if (problem === undefined) record(kind, "ok");
        else record(kind, "failed", problem);
      } catch (error) {
        connection?.close();
        connection = undefined;
        const outcome: ExchangeFailure = error instanceof ExchangeError ? error.kind : "failed";
        record(kind, outcome, error instanceof Error ? error.message : String(error));
      }
      const wait = 1000 / ratePerLoop - (performance.now() - started);
      if (wait > 0) await Bun.sleep(wait);
    }
    connection?.close();
  };
  const burstLoop = async (): Promise<void> => {
    while (!stop.aborted) {
      try {
        const connection = await RawHttpConnection.open(host, port, REQUEST_TIMEOUT_MS);
        const answer = await connection.exchange(getRequest(host, port, "/livez"), REQUEST_TIMEOUT_MS);
        connection.close();
        if (answer.status === 200) record(BURST_KIND, "ok");
        else record(BURST_KIND, "failed", `status ${answer.status}`);
      } catch (error) {
        record(BURST_KIND, error instanceof ExchangeError ? error.kind : "failed", error instanceof Error ? error.message : String(error));
      }
    }
  };
  await Promise.all([...LOOP_KINDS.map(loop), ...Array.from({ length: burst }, burstLoop)]);
  return results;
}
