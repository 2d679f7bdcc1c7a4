import { describe, expect, test } from "bun:test";
import { DEFAULTS } from "../src/config/types.ts";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { silentLogger } from "../src/observability/logger.ts";
import { startProxy } from "../src/server/serve.ts";
import { startCluster } from "./support/cluster.ts";

describe("health and discovery", () => {
  test("/health is 503 until a context and a generation worker are ready, then 200", async () => {
    await using ctx = startEmulatedWorker({ role: "context" });
    const config = {
      ...DEFAULTS,
      host: "127.0.0.1",
      port: 0,
      contextServers: [ctx.url],
      generationServers: ["http://127.0.0.1:9"],
      serverStartTimeoutMs: 100,
      serverStartPollMs: 20,
      nodeId: 0,
      configFile: undefined,
    };
    const proxy = startProxy(config, silentLogger, "test");
    try {
      expect((await fetch(`${proxy.url.origin}/health`)).status).toBe(503);
      expect(await proxy.waitForWorkers()).toBe(false);
      expect((await fetch(`${proxy.url.origin}/health`)).status).toBe(503);
      const info = (await (await fetch(`${proxy.url.origin}/cluster_info`)).json()) as { is_ready: boolean };
      expect(info.is_ready).toBe(false);
      const refused = await fetch(`${proxy.url.origin}/v1/chat/completions`, {
        method: "POST",
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }] }),
      });
      expect(refused.status).toBe(503);
    } finally {
      await proxy.stop();
    }
  });

  test("/v1/models, /version and /cluster_info answer once ready", async () => {
    await using cluster = await startCluster();
    expect((await fetch(`${cluster.url}/health`)).status).toBe(200);
    const models = (await (await fetch(`${cluster.url}/v1/models`)).json()) as { data: { id: string }[] };
    expect(models.data[0]!.id).toBe("emulated-model");
    expect(((await (await fetch(`${cluster.url}/version`)).json()) as { version: string }).version).toBe("test");
    const info = (await (await fetch(`${cluster.url}/cluster_info`)).json()) as {
      is_ready: boolean;
      server_lists: { context: string[]; generation: string[] };
    };
    expect(info.is_ready).toBe(true);
    expect(info.server_lists.context).toEqual([cluster.contexts[0]!.url]);
    expect(info.server_lists.generation).toEqual([cluster.generations[0]!.url]);
  });
});
