import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeMsgpack } from "../src/json/msgpack-write.ts";
import { CoordinatorClient } from "../src/routing/coordinator-client.ts";
import { startStandInCoordinator } from "./support/stand-in-coordinator.ts";
import { eventually } from "./support/wait.ts";

// A global disagg id as upstream mints them: above 2^53, so it must travel as a msgpack integer.
const REQ_ID = (1n << 62n) + 12_345n;

function recorder(): { unreachable: string[]; back: number; events: ConstructorParameters<typeof CoordinatorClient>[1] } {
  const seen = { unreachable: [] as string[], back: 0 };
  return {
    get unreachable() {
      return seen.unreachable;
    },
    get back() {
      return seen.back;
    },
    events: {
      onUnreachable: (_url, error) => seen.unreachable.push(error),
      onBack: () => seen.back++,
    },
  };
}

describe("coordinator client (upstream's CoordinatorDelegatingRouter wire)", () => {
  test("a placement is asked of the coordinator as upstream's serving process asks, and its leg is finished there once", async () => {
    await using coordinator = startStandInCoordinator(["127.0.0.1:8101"]);
    const client = new CoordinatorClient({ url: coordinator.url, timeoutMs: 2000 }, recorder().events);
    const outcome = await client.select({
      role: "context",
      routingKey: { kind: "conversation", id: "conv-1" },
      reqId: REQ_ID,
      excludeServer: "127.0.0.1:8200",
    });
    expect(outcome.kind).toBe("placed");
    if (outcome.kind !== "placed") return;
    expect(outcome.server).toBe("127.0.0.1:8101");
    expect({ ...coordinator.selects[0] }).toEqual({
      role: "context",
      routing_key: "conv-1",
      req_id: REQ_ID,
      exclude_server: "127.0.0.1:8200",
    });
    outcome.lease.finish(true);
    outcome.lease.finish(false);
    await eventually(() => client.pendingFinishes === 0 && coordinator.finishes.length > 0);
    expect(coordinator.finishes).toHaveLength(1);
    expect({ ...coordinator.finishes[0] }).toEqual({ role: "context", req_id: REQ_ID, success: true });
    client.close();
  });

  test("an unreachable coordinator is said once, placements go local at once, and it is asked again until it answers", async () => {
    const first = startStandInCoordinator(["127.0.0.1:8101"]);
    const port = first.port;
    await first.stop();
    const seen = recorder();
    const client = new CoordinatorClient({ url: `http://127.0.0.1:${port}`, timeoutMs: 100 }, seen.events);
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        client.select({ role: "generation", routingKey: { kind: "none" }, reqId: REQ_ID + BigInt(i), excludeServer: undefined }),
      ),
    );
    expect(outcomes.map((outcome) => outcome.kind)).toEqual(Array(5).fill("unreachable"));
    expect(await client.select({ role: "generation", routingKey: { kind: "none" }, reqId: REQ_ID, excludeServer: undefined })).toEqual({
      kind: "unreachable",
    });
    expect(seen.unreachable).toHaveLength(1);
    expect(client.reachable).toBe(false);
    await using again = startStandInCoordinator(["127.0.0.1:8102"], port);
    await eventually(() => client.reachable, 3000, "the probe finds the coordinator back");
    expect(seen.back).toBe(1);
    const placed = await client.select({ role: "generation", routingKey: { kind: "none" }, reqId: REQ_ID, excludeServer: undefined });
    expect(placed.kind).toBe("placed");
    expect(again.selects).toHaveLength(1);
    expect(seen.unreachable).toHaveLength(1);
    client.close();
  });

  test("a coordinator slower than the timeout is left, and what it may have placed is finished as failed", async () => {
    await using coordinator = startStandInCoordinator(["127.0.0.1:8101"]);
    coordinator.answer = () => "hang";
    const seen = recorder();
    const client = new CoordinatorClient({ url: coordinator.url, timeoutMs: 150 }, seen.events);
    const outcome = await client.select({
      role: "context",
      routingKey: { kind: "conversation", id: "c" },
      reqId: REQ_ID,
      excludeServer: undefined,
    });
    expect(outcome).toEqual({ kind: "unreachable" });
    expect(seen.unreachable[0]).toContain("timed out");
    await eventually(() => coordinator.finishes.length === 1, 2000, "the finish of the abandoned placement");
    expect({ ...coordinator.finishes[0] }).toEqual({ role: "context", req_id: REQ_ID, success: false });
    client.close();
  });

  test("the coordinator's 503 and 429 are its answer (no worker, all at their limit), not an outage", async () => {
    await using coordinator = startStandInCoordinator([]);
    const client = new CoordinatorClient({ url: coordinator.url, timeoutMs: 2000 }, recorder().events);
    coordinator.answer = () => ({ status: 503, error: "No available servers after excluding 127.0.0.1:1" });
    const refused = await client.select({ role: "context", routingKey: { kind: "none" }, reqId: REQ_ID, excludeServer: undefined });
    expect(refused).toEqual({ kind: "refused", status: 503, message: "No available servers after excluding 127.0.0.1:1" });
    coordinator.answer = () => ({ status: 429, error: "every worker is at its limit" });
    expect((await client.select({ role: "context", routingKey: { kind: "none" }, reqId: REQ_ID, excludeServer: undefined })).kind).toBe(
      "refused",
    );
    expect(client.reachable).toBe(true);
    expect(coordinator.finishes).toHaveLength(0);
    client.close();
  });

  test("an answer that is not a coordinator's (a 200 page, a 500) turns placement local and is finished", async () => {
    await using coordinator = startStandInCoordinator(["127.0.0.1:8101"]);
    coordinator.answer = () => "garbage";
    const seen = recorder();
    const client = new CoordinatorClient({ url: coordinator.url, timeoutMs: 2000 }, seen.events);
    expect(await client.select({ role: "context", routingKey: { kind: "none" }, reqId: REQ_ID, excludeServer: undefined })).toEqual({
      kind: "unreachable",
    });
    expect(seen.unreachable).toEqual(["POST /select answered 200 (not a coordinator's answer)"]);
    await eventually(() => coordinator.finishes.length === 1);
    client.close();
  });
});

test("a unix:/path.sock coordinator is reached over its socket (upstream's COORDINATOR_UDS_SCHEME)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "coordinator-uds-"));
  const socket = join(dir, "coordinator.sock");
  const seen: string[] = [];
  const server = Bun.serve({
    unix: socket,
    async fetch(request) {
      seen.push(`${request.method} ${new URL(request.url).pathname}`);
      await request.arrayBuffer();
      return new Response(writeMsgpack({ server: "127.0.0.1:8101", info: {}, req_id: null }), {
        headers: { "content-type": "application/msgpack" },
      });
    },
  });
  try {
    const client = new CoordinatorClient({ url: `unix:${socket}`, timeoutMs: 2000 }, recorder().events);
    const outcome = await client.select({ role: "generation", routingKey: { kind: "none" }, reqId: REQ_ID, excludeServer: undefined });
    expect(outcome.kind).toBe("placed");
    expect(seen).toEqual(["POST /select"]);
    client.close();
  } finally {
    await server.stop(true);
  }
});
