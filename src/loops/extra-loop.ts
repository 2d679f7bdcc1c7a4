import type { MessagePort } from "node:worker_threads";
import { createLogger } from "../observability/logger.ts";
import { extraLoopShare, mainThreadLog, send, type LoopData, type ToLoop } from "./event-loops.ts";
import { startProxy, type RunningProxy } from "../server/serve.ts";

/**
 * An extra event loop (num_workers > 1), in its Bun Worker: the whole proxy on the main loop's
 * port (reusePort) with the process's shared load, answering the main thread's messages
 * (metrics, SIGHUP's reload, SIGTERM's drain). It joins the port once its own health checks
 * found the workers (or the start timeout passed), and says so. It never exits the process:
 * the main loop does.
 */
export async function runExtraLoop(data: LoopData, port: MessagePort, version: string): Promise<void> {
  const log = mainThreadLog(port);
  const logger = createLogger(data.config.logLevel, log.sink);
  // As the main loop does (main.ts): in a Worker a stray rejection would end the thread, and with it this loop's listener.
  process.on("unhandledRejection", (reason) => logger.error("unhandled rejection", { error: reason, loop: data.index }));
  const share = extraLoopShare(data, port);
  const failed = (error: unknown): void => send(port, { kind: "failed", message: error instanceof Error ? error.message : String(error) });
  // Its lines go first: the main thread may exit as soon as every loop said it drained.
  const drained = (): void => {
    log.flush();
    send(port, { kind: "drained" });
  };
  let proxy: RunningProxy;
  try {
    // Like an upgrade's new side, it joins the port once its workers are ready (deferListen).
    proxy = startProxy(data.config, logger, version, { loop: share, deferListen: true });
  } catch (error) {
    failed(error);
    return;
  }
  port.on("message", (message: ToLoop) => {
    if (message.kind === "reload") {
      proxy.replaceWorkers(message.context, message.generation);
      proxy.reloadTls();
      proxy.app.reloadClientKeys();
    } else if (message.kind === "drain") {
      void proxy.drain(message.timeoutMs).finally(drained);
    } else if (message.kind === "hand-over") {
      const { listenerClosed, finished } = proxy.handOver(message.timeoutMs);
      void listenerClosed.finally(() => send(port, { kind: "listener-closed" }));
      void finished.finally(drained);
    }
  });
  await proxy.waitForWorkers();
  try {
    proxy.listen();
  } catch (error) {
    failed(error);
    return;
  }
  logger.info("event loop listening", { loop: data.index, url: proxy.url.origin });
  send(port, { kind: "listening" });
}
