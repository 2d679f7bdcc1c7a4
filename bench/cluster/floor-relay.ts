/**
 * The floor: the least any two-leg Bun proxy can do, run beside the proxy in the same rounds.
 * `bun bench/cluster/floor-relay.ts CONTEXT_URL GENERATION_URL native|js`: `Bun.serve`, the
 * client body parsed, a context_only `fetch` whose JSON answer is parsed, a generation_only
 * `fetch` built from its hand-off, and the answer handed back either natively (`native`:
 * `new Response(upstream.body)`, no JS per chunk — the floor) or through a JS pull stream
 * (`js`: what any relay that watches frames or inserts keepalives needs). No validation,
 * keepalives, frame scanning, logging, metrics or retries. Both fetches carry the client's
 * abort signal, so a client that leaves closes its upstream connection (the close scenario).
 * First stdout line: its URL.
 *
 * The bodies are built here with plain `JSON.parse`/`JSON.stringify` and object spreads, not
 * with the proxy's src/pipeline/bodies.ts, so the floor does not move when the proxy does.
 */

type Json = Record<string, unknown>;
type Mode = "native" | "js";

/** Above any worker-local id (< 2^40, as the proxy's ids are) and below 2^53, so plain numbers stay exact. */
const FIRST_ID = 2 ** 41;
const JSON_HEADERS = { "content-type": "application/json" };

function main(argv: readonly string[]): void {
  const [contextUrl, generationUrl, mode] = argv;
  if (contextUrl === undefined || generationUrl === undefined || (mode !== "native" && mode !== "js")) {
    throw new Error("usage: floor-relay.ts CONTEXT_URL GENERATION_URL native|js");
  }
  let nextId = FIRST_ID;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    development: false,
    idleTimeout: 0,
    fetch: (request) => relay(request, contextUrl, generationUrl, mode, nextId++),
  });
  process.stdout.write(`${server.url.origin}\n`);
  process.once("SIGTERM", () => {
    void server.stop(true).then(() => process.exit(0));
  });
}

async function relay(request: Request, contextUrl: string, generationUrl: string, mode: Mode, id: number): Promise<Response> {
  const path = new URL(request.url).pathname;
  const body = JSON.parse(await request.text()) as Json;
  const contextParams = { request_type: "context_only", disagg_request_id: id, schedule_style: 0 };
  const first = await fetch(`${contextUrl}${path}`, {
    method: "POST",
    headers: JSON_HEADERS,
    body: JSON.stringify({ ...body, stream: false, stream_options: null, disaggregated_params: contextParams }),
    signal: request.signal,
  });
  const answer = JSON.parse(await first.text()) as Json;
  const choice = (answer["choices"] as Json[] | undefined)?.[0];
  const handOff = choice?.["disaggregated_params"] as Json | undefined;
  const upstream = await fetch(`${generationUrl}${path}`, {
    method: "POST",
    headers: JSON_HEADERS,
    body: JSON.stringify({
      ...body,
      disaggregated_params: { ...handOff, request_type: "generation_only", disagg_request_id: id, schedule_style: 0 },
      prompt_token_ids: answer["prompt_token_ids"],
    }),
    signal: request.signal,
  });
  const headers = { "content-type": upstream.headers.get("content-type") ?? "application/json" };
  if (mode === "native" || upstream.body === null) return new Response(upstream.body, { status: upstream.status, headers });
  const reader = upstream.body.getReader();
  const relayed = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const read = await reader.read();
      if (read.done) controller.close();
      else controller.enqueue(read.value);
    },
    cancel() {
      reader.cancel().catch(() => undefined);
    },
  });
  return new Response(relayed, { status: upstream.status, headers });
}

main(Bun.argv.slice(2));
