/**
 * A stand-in for upstream's coordinator (coordinator_server.py [id 56726411408]): msgpack bodies,
 * POST /select and /finish, GET /health; it records what it was sent and answers as the test
 * sets it (a server, a status, or never). For the client's own behaviour; the real one is
 * `disagg-proxy coordinator`.
 */

import { readMsgpack, type MsgpackMap } from "../../src/json/msgpack-read.ts";
import { writeMsgpack, type WireMap } from "../../src/json/msgpack-write.ts";

export type StandInAnswer = { readonly server: string } | { readonly status: number; readonly error?: string } | "hang" | "garbage";

export interface StandInCoordinator extends AsyncDisposable {
  readonly url: string;
  readonly port: number;
  readonly selects: MsgpackMap[];
  readonly finishes: MsgpackMap[];
  /** `role req_id` of each /select that came while that leg was still placed (no /finish between): the second would be released by the first's finish. */
  readonly selectsWhileHeld: string[];
  /** What /select answers next (default: the first server of `servers`). */
  answer: (body: MsgpackMap) => StandInAnswer;
  healthy: boolean;
  /** What GET /cluster_info answers. */
  clusterInfo: WireMap;
  /** Called as each /finish arrives, before it is answered. */
  onFinish: (body: MsgpackMap) => void;
  stop(): Promise<void>;
}

function reply(value: WireMap, status = 200): Response {
  return new Response(writeMsgpack(value), { status, headers: { "content-type": "application/msgpack" } });
}

/** `role req_id` of a select or finish body. */
function legOf(body: MsgpackMap): string {
  const [role, reqId] = [body["role"], body["req_id"]];
  return `${typeof role === "string" ? role : "?"} ${typeof reqId === "bigint" ? reqId : "?"}`;
}

export function startStandInCoordinator(servers: readonly string[], port = 0): StandInCoordinator {
  const selects: MsgpackMap[] = [];
  const finishes: MsgpackMap[] = [];
  const selectsWhileHeld: string[] = [];
  const held = new Set<string>();
  const state = {
    answer: (_body: MsgpackMap): StandInAnswer => ({ server: servers[0] ?? "127.0.0.1:1" }),
    healthy: true,
    clusterInfo: { is_ready: true, server_lists: { context: [], generation: [] } } as WireMap,
    onFinish: (_body: MsgpackMap): void => {},
  };
  const hung: (() => void)[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === "/health") return new Response(null, { status: state.healthy ? 200 : 503 });
      if (path === "/cluster_info") return reply(state.clusterInfo);
      const body = readMsgpack(new Uint8Array(await request.arrayBuffer())) as MsgpackMap;
      if (path === "/finish") {
        state.onFinish(body);
        finishes.push(body);
        held.delete(legOf(body));
        return reply({});
      }
      if (path !== "/select") return new Response("not found", { status: 404 });
      selects.push(body);
      if (held.has(legOf(body))) selectsWhileHeld.push(legOf(body));
      const answer = state.answer(body);
      if (typeof answer === "object" && "server" in answer) held.add(legOf(body));
      if (answer === "hang") return new Promise<Response>((resolve) => hung.push(() => resolve(reply({}, 500))));
      if (answer === "garbage") return new Response("<html>proxy error</html>", { status: 200 });
      const reqId = body["req_id"];
      if ("server" in answer)
        return reply({ server: answer.server, info: { server_info: null }, req_id: typeof reqId === "bigint" ? reqId : null });
      return reply({ error: answer.error ?? "No available servers" }, answer.status);
    },
  });
  const stop = async (): Promise<void> => {
    for (const release of hung.splice(0)) release();
    await server.stop(true);
  };
  return {
    url: `http://127.0.0.1:${server.port}`,
    port: server.port ?? 0,
    selects,
    finishes,
    selectsWhileHeld,
    get answer() {
      return state.answer;
    },
    set answer(fn) {
      state.answer = fn;
    },
    get clusterInfo() {
      return state.clusterInfo;
    },
    set clusterInfo(info) {
      state.clusterInfo = info;
    },
    get onFinish() {
      return state.onFinish;
    },
    set onFinish(fn) {
      state.onFinish = fn;
    },
    get healthy() {
      return state.healthy;
    },
    set healthy(value) {
      state.healthy = value;
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
