/** A worker answering what a proxy's start-up and health checks ask, honest or hostile (issue #24, item 3). */

const MiB = 1024 * 1024;

/** The hostile worker's version string: 4 MiB, over the read bound of the proxy's own reads. */
export const HUGE_VERSION = `1.3.0rc28${"x".repeat(4 * MiB)}`;

export interface InfoWorker {
  readonly server: Bun.Server<undefined>;
  /** /server_info is held until this is called, so the proxy's /livez is being polled when it arrives. */
  release(): void;
}

/** Hostile: 32 MiB of `[` as /server_info (chunked, no length) and a 4 MiB version; else small, true answers. The caller stops it. */
export function infoWorker(hostile: boolean): InfoWorker {
  const piece = new Uint8Array(MiB).fill(0x5b);
  const { promise: released, resolve: release } = Promise.withResolvers<void>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === "/server_info") await released;
      if (path === "/server_info" && hostile) {
        let sent = 0;
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent++ === 32) controller.close();
            else controller.enqueue(piece);
          },
        });
        return new Response(body, { headers: { "content-type": "application/json" } });
      }
      if (path === "/server_info") return Response.json({ disaggregated_params: {} });
      if (path === "/version") return Response.json({ version: hostile ? HUGE_VERSION : "1.3.0rc28" });
      return new Response(null, { status: 200 });
    },
  });
  return { server, release };
}
