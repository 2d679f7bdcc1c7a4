/**
 * `bun --preload bench/micro/raw-fetch-preload.ts src/main.ts serve …`: the proxy from source
 * with its worker calls made by the `Bun.connect` prototype (bench/micro/raw-client.ts) instead
 * of the runtime's fetch, for issue #29's end-to-end measurement (`bun bench/compare.ts` with a
 * wrapper script as the "binary"). Only plain http:// calls are taken over; anything else goes
 * to the real fetch. A benchmark harness, not a test: the proxy's code is unchanged.
 *
 * An answer that is not an event stream is resolved once whole, as `new Response(bytes)` (the
 * proxy reads it whole at once anyway); an event stream resolves at its headers with a body fed
 * by the socket.
 */

import { RawClient, type RawRequest } from "./raw-client.ts";

const realFetch = globalThis.fetch;
const client = new RawClient({ idleMs: 4_000, maxIdle: 1_024 });

async function bodyBytes(body: unknown): Promise<Uint8Array | string | undefined> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string" || body instanceof Uint8Array) return body;
  if (body instanceof ReadableStream) return new Uint8Array(await new Response(body).arrayBuffer());
  return new Uint8Array(await new Response(body as Blob).arrayBuffer());
}

function headerRecord(headers: unknown): Record<string, string> {
  if (headers === undefined || headers === null) return {};
  if (headers instanceof Headers) return Object.fromEntries(headers.entries());
  if (Array.isArray(headers)) return Object.fromEntries(headers as [string, string][]);
  return headers as Record<string, string>;
}

async function rawFetch(input: string | URL | Request, init: BunFetchRequestInit = {}): Promise<Response> {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  if (!url.startsWith("http://") || input instanceof Request) return realFetch(input, init);
  const at = url.indexOf("/", 7);
  const origin = at < 0 ? url : url.slice(0, at);
  const path = at < 0 ? "/" : url.slice(at);
  const body = await bodyBytes(init.body);
  const headers = headerRecord(init.headers);
  if (headers["content-length"] !== undefined) delete headers["content-length"];
  const request: RawRequest = {
    method: (init.method ?? "GET") as "GET" | "POST",
    path,
    headers,
    ...(body === undefined ? {} : { body }),
    ...(init.signal ? { signal: init.signal } : {}),
  };
  return new Promise((resolve, reject) => {
    let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
    let whole: { status: number; headers: Headers; parts: Uint8Array[]; size: number } | undefined;
    client.request(origin, request, {
      head(status, answerHeaders) {
        if ((answerHeaders.get("content-type") ?? "").includes("text/event-stream")) {
          const stream = new ReadableStream<Uint8Array>({
            start(c) {
              controller = c;
            },
          });
          resolve(new Response(stream, { status, headers: answerHeaders }));
        } else whole = { status, headers: answerHeaders, parts: [], size: 0 };
      },
      body(bytes) {
        if (whole !== undefined) {
          whole.parts.push(bytes.slice());
          whole.size += bytes.length;
        } else controller?.enqueue(bytes.slice());
      },
      end() {
        if (whole !== undefined) {
          const joined = whole.parts.length === 1 ? whole.parts[0] : Buffer.concat(whole.parts, whole.size);
          resolve(new Response(joined, { status: whole.status, headers: whole.headers }));
        } else controller?.close();
      },
      fail(error) {
        const reason = init.signal?.aborted ? init.signal.reason : Object.assign(error, { code: "ECONNRESET" });
        reject(reason);
        try {
          controller?.error(reason);
        } catch {
          // already closed
        }
      },
    });
  });
}

globalThis.fetch = Object.assign<typeof rawFetch, Pick<typeof fetch, "preconnect">>(rawFetch, { preconnect: realFetch.preconnect });
