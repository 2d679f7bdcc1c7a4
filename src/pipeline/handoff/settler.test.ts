import { expect, test } from "bun:test";
import { DEFAULTS, type ProxyConfig } from "../../config/types.ts";
import { silentLogger } from "../../observability/logger.ts";
import { Placement } from "../../routing/placement.ts";
import { createWorkerFetch } from "../../workers/transport.ts";
import { DisaggIdAllocator } from "../../request/disagg-id.ts";
import { HandoffSettler } from "./settler.ts";

const G = "http://g:1";
const config: ProxyConfig = {
  ...DEFAULTS,
  host: "127.0.0.1",
  port: 0,
  contextServers: ["http://c:1"],
  generationServers: [G],
  nodeId: 1,
  configFile: undefined,
};

test("an attempt that runs on after its client left keeps its worker counted in flight until it ends", async () => {
  const placement = new Placement(config);
  const settler = new HandoffSettler(
    { settings: config, placement, ids: new DisaggIdAllocator(0), logger: silentLogger, workerFetch: createWorkerFetch({}) },
    () => {},
  );
  const { promise: attempt, resolve } = Promise.withResolvers<undefined>();
  const { promise: followed, resolve: done } = Promise.withResolvers<undefined>();
  const outcome = {
    reason: "client_gone" as const,
    follow: () => {
      done(undefined);
      return Promise.resolve(undefined);
    },
    onFailure: () => undefined,
  };
  settler.adopt(attempt, () => {}, outcome, { role: "generation", origin: G, requestKey: 7n });
  expect(placement.table.load("generation", G)).toBe(1);
  resolve(undefined);
  await followed;
  await Bun.sleep(0);
  expect(placement.table.load("generation", G)).toBe(0);
  settler.stop();
});
