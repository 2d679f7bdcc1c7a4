/**
 * A worker that answers model requests however a test needs (broken, hostile, odd): a real
 * loopback server that is healthy and has empty /server_info, never a mocked fetch.
 */
export function fakeWorker(answer: (request: Request) => Response | Promise<Response>): Bun.Server<undefined> {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === "/health") return new Response(null, { status: 200 });
      if (path === "/server_info") return Response.json({});
      return answer(request);
    },
  });
}
