/**
 * The least a Bun relay can hold per open stream, for the memory scenario to compare with:
 * `bun bench/cluster/reference-relay.ts CONTEXT_URL GENERATION_URL native|js` runs the context
 * leg, then relays the generation stream either natively (`new Response(upstream.body)`: no
 * JS per chunk, so no keepalives and no view of the frames) or through a JS pull stream (what
 * any relay that watches frames or inserts keepalives needs). First stdout line: its URL.
 */

import { isJsonObject, parseJson } from "../../src/json.ts";
import { contextBody, generationBody } from "../../src/pipeline/bodies.ts";
import type { PipelineInput } from "../../src/pipeline/types.ts";
import { newIds } from "../load/paths.ts";

const PATH = "/v1/chat/completions";
const JSON_HEADERS = { "content-type": "application/json" };

type Mode = "native" | "js";

function main(argv: readonly string[]): void {
  const [contextUrl, generationUrl, mode] = argv;
  if (contextUrl === undefined || generationUrl === undefined || (mode !== "native" && mode !== "js")) {
    throw new Error("usage: reference-relay.ts CONTEXT_URL GENERATION_URL native|js");
  }
  const ids = newIds();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    development: false,
    idleTimeout: 0,
    fetch: (request) => relay(request, contextUrl, generationUrl, mode, ids.next()),
  });
  process.stdout.write(`${server.url.origin}\n`);
  process.once("SIGTERM", () => {
    void server.stop(true).then(() => process.exit(0));
  });
}

async function relay(request: Request, contextUrl: string, generationUrl: string, mode: Mode, id: bigint): Promise<Response> {
  const body = parseJson(await request.text());
  if (!isJsonObject(body)) return new Response("bad body", { status: 400 });
  const input = { api: "chat", body, stream: true } as PipelineInput;
  const first = await fetch(`${contextUrl}${PATH}`, { method: "POST", headers: JSON_HEADERS, body: JSON.stringify(contextBody(input, id, "context_first")) });
  const answer = parseJson(await first.text());
  if (!isJsonObject(answer)) return new Response("bad answer", { status: 502 });
  const upstream = await fetch(`${generationUrl}${PATH}`, {
    method: "POST",
    headers: JSON_HEADERS,
    body: JSON.stringify(generationBody(input, answer, id, "context_first")),
    signal: request.signal,
  });
  const headers = { "content-type": "text/event-stream" };
  if (mode === "native" || upstream.body === null) return new Response(upstream.body, { headers });
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
  return new Response(relayed, { headers });
}

main(Bun.argv.slice(2));
