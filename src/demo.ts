import { DEFAULTS, type ProxyConfig } from "./config/types.ts";
import { startEmulatedWorker } from "./emulator/index.ts";
import type { Logger } from "./observability/logger.ts";
import { startProxy, type RunningProxy } from "./server/serve.ts";

export interface Demo {
  readonly proxy: RunningProxy;
  readonly contextUrl: string;
  readonly generationUrl: string;
  stop(): Promise<void>;
}

/** One context and one generation emulated worker in-process, and the proxy in front of them. */
export async function startDemo(port: number, logger: Logger, version: string): Promise<Demo> {
  const latency = { prefillMs: 150, prefillMsPerToken: 2, tokenMs: 25, outputTokens: 24 };
  const context = startEmulatedWorker({ role: "context", ...latency });
  const generation = startEmulatedWorker({ role: "generation", ...latency });
  const config: ProxyConfig = {
    ...DEFAULTS,
    host: "127.0.0.1",
    port,
    contextServers: [context.url],
    generationServers: [generation.url],
    nodeId: 0,
    configFile: undefined,
  };
  let proxy: RunningProxy;
  try {
    // The demo's port is its own: beside a proxy already serving it, the kernel refuses (ListenError).
    proxy = startProxy(config, logger, version, { exclusivePort: true });
  } catch (error) {
    await Promise.all([context.stop(), generation.stop()]);
    throw error;
  }
  await proxy.waitForWorkers();
  return {
    proxy,
    contextUrl: context.url,
    generationUrl: generation.url,
    async stop() {
      await proxy.stop();
      await Promise.all([context.stop(), generation.stop()]);
    },
  };
}

export function demoBanner(demo: Demo): string {
  const url = demo.proxy.url.origin;
  const body = `{"model":"emulated-model","messages":[{"role":"user","content":"Tell me about disaggregated serving"}],"stream":true}`;
  return [
    `disagg-proxy demo`,
    `  proxy:             ${url}`,
    `  dashboard:         ${url}/dashboard`,
    `  context worker:    ${demo.contextUrl}`,
    `  generation worker: ${demo.generationUrl}`,
    ``,
    `Try:`,
    `  curl -N ${url}/v1/chat/completions -H 'content-type: application/json' -d '${body}'`,
    `  curl ${url}/cluster_info`,
    ``,
  ].join("\n");
}
