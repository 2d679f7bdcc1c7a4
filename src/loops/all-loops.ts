import type { EventLoops } from "./event-loops.ts";
import type { RunningProxy } from "../server/serve.ts";

/**
 * The main loop's proxy as the process's: what the signals and an upgrade's release do to it
 * (new worker lists, drain, hand-over, stop) is done to every extra loop too
 * (num_workers > 1). Everything else is the main loop's own.
 */
export function withLoops(proxy: RunningProxy, loops: EventLoops): RunningProxy {
  return {
    get url() {
      return proxy.url;
    },
    app: proxy.app,
    listen: () => proxy.listen(),
    waitForWorkers: () => proxy.waitForWorkers(),
    reloadTls: () => proxy.reloadTls(),
    registrations: () => proxy.registrations(),
    adoptRegistrations: (items) => proxy.adoptRegistrations(items),
    // The HTTP cluster storage is served by one event loop only (config/load.ts).
    forwardStorage: (forward) => proxy.forwardStorage(forward),
    storageCall: (call) => proxy.storageCall(call),
    replaceWorkers(context, generation) {
      const changes = proxy.replaceWorkers(context, generation);
      // Each extra loop also re-reads its TLS files and client keys on this message.
      loops.reload(context, generation);
      return changes;
    },
    async drain(timeoutMs) {
      await Promise.all([proxy.drain(timeoutMs), loops.drain(timeoutMs)]);
    },
    handOver(timeoutMs) {
      const own = proxy.handOver(timeoutMs);
      const others = loops.handOver(timeoutMs);
      return {
        listenerClosed: Promise.all([own.listenerClosed, others.listenerClosed]).then(() => undefined),
        finished: Promise.all([own.finished, others.finished]).then(() => undefined),
      };
    },
    async stop() {
      await Promise.all([proxy.stop(), loops.stop()]);
    },
  };
}
