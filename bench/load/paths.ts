/**
 * The two ways a load-generator user can get one disaggregated answer: through the proxy (one
 * request), or straight to the workers in sequence (context_only, then generation_only), with
 * the worker bodies built by the proxy's own code in src/pipeline/bodies.ts.
 */

import { isJsonObject, parseJson, type JsonObject } from "../../src/json/json.ts";
import { contextBody, generationBody, needsGeneration, verifyContextAnswer } from "../../src/pipeline/bodies.ts";
import type { ApiKind, PipelineInput } from "../../src/pipeline/types.ts";
import { DisaggIdAllocator } from "../../src/request/disagg-id.ts";
import { HttpConnection } from "../http/connection.ts";
import { exchange, postRequest, type Exchange, type ExchangeOptions } from "../http/exchange.ts";

export interface Endpoint {
  readonly hostname: string;
  readonly port: number;
  /** host:port, for the Host header. */
  readonly host: string;
}

export function endpointOf(url: string): Endpoint {
  const parsed = new URL(url);
  return { hostname: parsed.hostname, port: Number(parsed.port), host: parsed.host };
}

/** One client request: the route it is sent to on the proxy, and the worker API behind it. */
export interface Workload {
  readonly route: string;
  readonly api: ApiKind;
  readonly body: JsonObject;
}

export interface Path {
  /** One answer, start to end; throws when a connection breaks. */
  call(options?: ExchangeOptions): Promise<Exchange>;
  /** Drops the user's connections abruptly (a client that leaves mid-request). */
  abort(): void;
  close(): void;
}

const WORKER_PATH: Readonly<Record<ApiKind, string>> = {
  chat: "/v1/chat/completions",
  completions: "/v1/completions",
  responses: "/v1/responses",
};
const decoder = new TextDecoder();

/** A connection that is re-opened when the previous one closed (after a disconnect or a fault). */
class Reconnecting {
  readonly #endpoint: Endpoint;
  #conn: HttpConnection | undefined;

  constructor(endpoint: Endpoint) {
    this.#endpoint = endpoint;
  }

  async get(): Promise<HttpConnection> {
    if (this.#conn === undefined || this.#conn.closed) {
      this.#conn = await HttpConnection.open(this.#endpoint.hostname, this.#endpoint.port);
    }
    return this.#conn;
  }

  abort(): void {
    this.#conn?.abort();
  }

  close(): void {
    this.#conn?.close();
  }
}

export function proxyPath(proxy: Endpoint, workload: Workload): Path {
  const request = postRequest(proxy.host, workload.route, JSON.stringify(workload.body));
  const conn = new Reconnecting(proxy);
  return {
    call: async (options) => exchange(await conn.get(), request, options),
    abort: () => conn.abort(),
    close: () => conn.close(),
  };
}

/** Direct calls use the proxy's id scheme too, so workers see the same ids they would behind it. */
export function directPath(context: Endpoint, generation: Endpoint, workload: Workload, ids: DisaggIdAllocator): Path {
  const ctxConn = new Reconnecting(context);
  const genConn = new Reconnecting(generation);
  const path = WORKER_PATH[workload.api];
  // The body builders read only these fields of the pipeline's input (the routing hints are the routers').
  const input = { api: workload.api, body: workload.body, stream: workload.body["stream"] === true } as PipelineInput;
  return {
    async call(options) {
      const id = ids.next();
      const ctxJson = JSON.stringify(contextBody(input, id, "context_first"));
      const first = await exchange(await ctxConn.get(), postRequest(context.host, path, ctxJson), { keepBody: true });
      if (first.status !== 200 || first.body === undefined) return first;
      const answer = parseJson(decoder.decode(first.body));
      if (!isJsonObject(answer)) throw new Error("The context worker's answer is not a JSON object");
      const continueId = verifyContextAnswer(workload.api, answer, id);
      if (!needsGeneration(workload.api, answer)) return first;
      const genJson = JSON.stringify(generationBody(input, answer, continueId, "context_first"));
      const second = await exchange(await genConn.get(), postRequest(generation.host, path, genJson), options);
      return { ...second, sentAt: first.sentAt };
    },
    abort() {
      ctxConn.abort();
      genConn.abort();
    },
    close() {
      ctxConn.close();
      genConn.close();
    },
  };
}

export function newIds(): DisaggIdAllocator {
  return new DisaggIdAllocator(1, { processId: 1 });
}
