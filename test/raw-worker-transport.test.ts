import { describe, expect, test } from "bun:test";
import type { Socket } from "bun";
import { createServer, type AddressInfo } from "node:net";
import { createRawFetch } from "../src/workers/http1/raw-fetch.ts";
import { postForJson } from "../src/workers/client.ts";
import { postForStream } from "../src/workers/stream-call.ts";
import type { WorkerPost } from "../src/workers/worker-call.ts";
import type { Role } from "../src/config/types.ts";
import { createWorkerFetch } from "../src/workers/transport.ts";

/** A raw TCP worker: `answer` sees each request's head and writes whatever it likes. */
function rawWorker(answer: (socket: Socket<{ id: number }>, head: string) => void) {
  let connections = 0;
  const closed: number[] = [];
  const server = Bun.listen<{ id: number }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket) {
        socket.data = { id: ++connections };
      },
      data(socket, bytes) {
        const text = new TextDecoder().decode(bytes);
        if (text.includes("\r\n\r\n")) answer(socket, text);
      },
      close(socket) {
        closed.push(socket.data.id);
      },
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    connections: () => connections,
    closed,
    [Symbol.dispose]: () => server.stop(true),
  };
}

/** A call through the worker client as a leg makes it, to `origin`. */
function workerPost(origin: string, role: Role): WorkerPost {
  const signal = new AbortController().signal;
  return {
    role,
    origin,
    path: "/v1/completions",
    body: "{}",
    signal,
    timeoutMs: 60_000,
    fetch: createWorkerFetch({}),
    headers: {},
    maxAnswerBytes: 1024,
  };
}

/** What a call was refused with; undefined when it was not. */
const refusal = (call: Promise<unknown>): Promise<unknown> =>
  call.then(
    () => undefined,
    (error: unknown) => error,
  );

const ok = (body: string): string => `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;

describe("the raw worker transport", () => {
  test("sequential calls share one kept-alive connection", async () => {
    using worker = rawWorker((socket) => socket.write(ok('{"n":1}')));
    const { fetch } = createRawFetch({ keepAliveMs: 4000 });
    for (let i = 0; i < 5; i++) expect(await (await fetch(`${worker.url}/v1/x`, { method: "POST", body: "{}" })).json()).toEqual({ n: 1 });
    expect(worker.connections()).toBe(1);
  });

  test("a connection idle for the keep-alive bound is never reused", async () => {
    using worker = rawWorker((socket) => socket.write(ok("{}")));
    const { fetch } = createRawFetch({ keepAliveMs: 30 });
    await (await fetch(`${worker.url}/a`)).text();
    await Bun.sleep(60);
    await (await fetch(`${worker.url}/a`)).text();
    expect(worker.connections()).toBe(2);
  });

  test("the request goes out with Host, the caller's headers and the body's length", async () => {
    let seen = "";
    using worker = rawWorker((socket, head) => {
      seen = head;
      socket.write(ok("{}"));
    });
    const { fetch } = createRawFetch({ keepAliveMs: 4000 });
    await (await fetch(`${worker.url}/v1/chat/completions?x=1`, { method: "POST", headers: { "x-one": "1" }, body: "héllo" })).text();
    expect(seen.startsWith("POST /v1/chat/completions?x=1 HTTP/1.1\r\n")).toBe(true);
    expect(seen).toContain(`host: ${worker.url.slice(7)}\r\n`);
    expect(seen).toContain("x-one: 1\r\n");
    expect(seen).toContain("content-length: 6\r\n");
    expect(seen.endsWith("\r\n\r\nhéllo")).toBe(true);
  });

  test("a header holding a line break, a NUL or a character past Latin-1, in its name or value, is refused before anything is sent", async () => {
    using worker = rawWorker((socket) => socket.write(ok("{}")));
    const { fetch, whole } = createRawFetch({ keepAliveMs: 4000 });
    const options = { limit: 16, tooLarge: () => new RangeError("too large") };
    for (const headers of [
      { "x-id": "a\r\nx-evil: 1" },
      { "x-id": "a\nb" },
      { "x-id": "a\0b" },
      { "x-id": "a\u0100" },
      { "x-evil\r\nx": "1" },
      { "x-\0": "1" },
    ]) {
      expect(await refusal(fetch(`${worker.url}/a`, { headers }))).toBeInstanceOf(TypeError);
      expect(await refusal(whole(`${worker.url}/a`, { method: "POST", headers, body: "{}" }, options))).toBeInstanceOf(TypeError);
    }
    expect(await refusal(fetch(`${worker.url}/a`, { headers: [["x-id", "a\rb"]] }))).toBeInstanceOf(TypeError);
    expect(worker.connections()).toBe(0);
    expect(await fetch(`${worker.url}/a`, { headers: new Headers({ "x-id": "a\u00ff" }) })).toBeInstanceOf(Response);
  });

  test("a reset before any answer rejects with ECONNRESET, as fetch reports the keep-alive race", async () => {
    using worker = rawWorker((socket) => socket.terminate());
    const { fetch } = createRawFetch({ keepAliveMs: 4000 });
    const failure = await fetch(`${worker.url}/a`).catch((error: unknown) => error);
    expect((failure as { code?: string }).code).toBe("ECONNRESET");
  });

  test("a refused connection rejects with ECONNREFUSED", async () => {
    const port = (() => {
      using worker = rawWorker(() => {});
      return Number(worker.url.split(":")[2]);
    })();
    const failure = await createRawFetch({ keepAliveMs: 4000 })
      .fetch(`http://127.0.0.1:${port}/a`)
      .catch((error: unknown) => error);
    expect((failure as { code?: string }).code).toBe("ECONNREFUSED");
  });

  test("an abort during the body fails the body with the signal's reason and closes the connection", async () => {
    using worker = rawWorker((socket) =>
      socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"),
    );
    const { fetch } = createRawFetch({ keepAliveMs: 4000 });
    const controller = new AbortController();
    const response = await fetch(`${worker.url}/a`, { signal: controller.signal });
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("hello");
    const reason = new Error("request ended");
    controller.abort(reason);
    expect(await reader.read().catch((error: unknown) => error)).toBe(reason);
    while (worker.closed.length === 0) await Bun.sleep(1);
    expect(worker.closed).toEqual([1]);
  });

  test("an answer cut off mid-body fails the body, and the next call opens a new connection", async () => {
    let calls = 0;
    using worker = rawWorker((socket) => {
      calls++;
      if (calls === 1) {
        socket.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial");
        socket.end();
      } else socket.write(ok("{}"));
    });
    const { fetch } = createRawFetch({ keepAliveMs: 4000 });
    const first = await fetch(`${worker.url}/a`);
    expect(await first.text().catch(() => "failed")).toBe("failed");
    expect(await (await fetch(`${worker.url}/a`)).text()).toBe("{}");
    expect(worker.connections()).toBe(2);
  });

  test("a large streamed answer is read whole while the consumer lags (backpressure, no loss)", async () => {
    const piece = "x".repeat(64 * 1024);
    using worker = rawWorker((socket) => {
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${piece.length * 64}\r\n\r\n`);
      let sent = 0;
      const more = (): void => {
        while (sent < 64 && socket.write(piece) === piece.length) sent++;
        if (sent < 64) setTimeout(more, 1);
      };
      more();
    });
    const response = await createRawFetch({ keepAliveMs: 4000 }).fetch(`${worker.url}/a`);
    const reader = response.body!.getReader();
    let size = 0;
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      size += read.value.byteLength;
      if (size % 7 === 0) await Bun.sleep(0);
    }
    expect(size).toBe(piece.length * 64);
  });

  test("pieces held for a lagging reader keep their bytes while later socket reads arrive (the runtime does not reuse a read's buffer)", async () => {
    // 24 pieces of 16 KiB, each filled with its own byte: a reused read buffer would show another piece's byte.
    const pieces = Array.from({ length: 24 }, (_piece, n) => Buffer.alloc(16 * 1024, 0x41 + n));
    const written = Promise.withResolvers<void>();
    using worker = rawWorker((socket) => {
      socket.write(`HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: ${16 * 1024 * pieces.length}\r\n\r\n`);
      let sent = 0;
      const more = (): void => {
        while (sent < pieces.length && socket.write(pieces[sent]!) === 16 * 1024) sent++;
        if (sent < pieces.length) setTimeout(more, 1);
        else written.resolve();
      };
      more();
    });
    const answer = await createRawFetch({ keepAliveMs: 4000 }).stream(`${worker.url}/a`, {}, undefined);
    // Nothing is read until the worker has written everything: the pieces pile up held (and the socket pauses).
    await written.promise;
    const received: Uint8Array[] = [];
    for (let read = await answer.reader.read(); !read.done; read = await answer.reader.read()) received.push(read.value);
    expect(Buffer.compare(Buffer.concat(received), Buffer.concat(pieces))).toBe(0);
  });

  test("a header value past ASCII goes out as its Latin-1 byte, as fetch sends a ByteString", async () => {
    let seen: Uint8Array = new Uint8Array();
    const server = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        data(socket, bytes) {
          seen = bytes;
          socket.write(ok("{}"));
        },
      },
    });
    try {
      await (
        await createRawFetch({ keepAliveMs: 4000 }).fetch(`http://127.0.0.1:${server.port}/a`, { headers: { "x-name": "café" } })
      ).text();
      expect(Buffer.from(seen).includes(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0d, 0x0a]))).toBe(true);
    } finally {
      server.stop(true);
    }
  });

  test("a body in parts reaches the worker byte for byte and in order, its large parts written past full socket buffers", async () => {
    // Large parts go to the socket as they are: each 8 MiB one overflows the socket's buffer, so the rest waits for drain.
    const big = 8 * 1024 * 1024;
    const parts = [
      Buffer.from('{"a":"'),
      Buffer.alloc(big, 0x61),
      Buffer.from('","b":"'),
      Buffer.from("small"),
      Buffer.alloc(big, 0x62),
      Buffer.from('"}'),
    ];
    const expected = Buffer.concat(parts);
    const received: Uint8Array[] = [];
    let size = 0;
    const server = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        data(socket, bytes) {
          received.push(new Uint8Array(bytes));
          size += bytes.length;
          // The head is well under a kilobyte: the request is whole once that much more than the body came.
          if (size >= expected.length + 64 && Buffer.concat(received).indexOf("\r\n\r\n") + 4 + expected.length === size)
            socket.write(ok('{"ok":true}'));
        },
      },
    });
    try {
      const answer = await createRawFetch({ keepAliveMs: 4000 }).whole(
        `http://127.0.0.1:${server.port}/v1/completions`,
        { method: "POST", headers: { "x-name": "café" }, body: parts },
        { limit: 1024, tooLarge: () => new RangeError("too large") },
      );
      expect(answer.status).toBe(200);
      const request = Buffer.concat(received);
      const end = request.indexOf("\r\n\r\n");
      const head = request.subarray(0, end);
      expect(head.includes(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0d, 0x0a]))).toBe(true);
      expect(head.toString("latin1")).toContain(`content-length: ${expected.length}`);
      expect(Buffer.compare(request.subarray(end + 4), expected)).toBe(0);
    } finally {
      server.stop(true);
    }
  });

  const wholeOptions = { limit: 16, tooLarge: () => new RangeError("too large") };

  test("a declared answer that came in one piece is that piece's bytes, uncopied; one in many pieces is gathered whole", async () => {
    const large = `{"ids":[${Array.from({ length: 60_000 }, (_, n) => n).join(",")}]}`;
    let body = '{"ok":true}';
    using worker = rawWorker((socket) => socket.write(ok(body)));
    const { whole } = createRawFetch({ keepAliveMs: 4000 });
    const options = { limit: 1024 * 1024, tooLarge: () => new RangeError("too large") };
    const small = await whole(`${worker.url}/a`, {}, options);
    expect(new TextDecoder().decode(small.bytes)).toBe(body);
    // A view into the socket's piece, which began with the answer's head.
    expect(small.bytes.byteOffset).toBeGreaterThan(0);
    body = large;
    const gathered = await whole(`${worker.url}/a`, {}, options);
    expect(gathered.bytes.byteLength).toBeGreaterThan(128 * 1024);
    expect(new TextDecoder().decode(gathered.bytes)).toBe(large);
  });

  test("a whole answer past its bound is refused, while an error's is cut to its first bytes", async () => {
    let status = 200;
    using worker = rawWorker((socket) =>
      socket.write(`HTTP/1.1 ${status} X\r\nTransfer-Encoding: chunked\r\n\r\n14\r\n${"e".repeat(20)}\r\n0\r\n\r\n`),
    );
    const { whole } = createRawFetch({ keepAliveMs: 4000 });
    expect(await refusal(whole(`${worker.url}/a`, {}, wholeOptions))).toBeInstanceOf(RangeError);
    status = 500;
    const answer = await whole(`${worker.url}/a`, {}, wholeOptions);
    expect([answer.status, new TextDecoder().decode(answer.bytes)]).toEqual([500, "e".repeat(16)]);
  });

  test("a whole answer that does not come within its timeout fails with a TimeoutError and drops its connection", async () => {
    using worker = rawWorker(() => {});
    const { whole } = createRawFetch({ keepAliveMs: 4000 });
    const failure = await whole(`${worker.url}/a`, {}, { ...wholeOptions, timeout: { ms: 20 } }).catch((error: unknown) => error);
    expect((failure as Error).name).toBe("TimeoutError");
    while (worker.closed.length === 0) await Bun.sleep(1);
    expect(worker.closed).toEqual([1]);
  });

  test("a streamed answer is read piece by piece from the socket, and cancelling it closes the connection", async () => {
    using worker = rawWorker((socket) => {
      socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata:1\r\n");
      setTimeout(() => socket.write("6\r\ndata:2\r\n"), 5);
    });
    const answer = await createRawFetch({ keepAliveMs: 4000 }).stream(`${worker.url}/a`, {}, { ms: 1000 });
    expect([answer.status, answer.headers.get("content-type")]).toEqual([200, "text/event-stream"]);
    const pieces: string[] = [];
    for (let n = 0; n < 2; n++) pieces.push(new TextDecoder().decode((await answer.reader.read()).value));
    expect(pieces).toEqual(["data:1", "data:2"]);
    const pending = answer.reader.read();
    await answer.reader.cancel();
    expect((await pending).done).toBe(true);
    while (worker.closed.length === 0) await Bun.sleep(1);
    expect(worker.closed).toEqual([1]);
  });

  test("a streamed answer whose head does not come in time fails with a TimeoutError", async () => {
    using worker = rawWorker(() => {});
    const failure = await createRawFetch({ keepAliveMs: 4000 })
      .stream(`${worker.url}/a`, {}, { ms: 20 })
      .catch((error: unknown) => error);
    expect((failure as Error).name).toBe("TimeoutError");
  });

  test("a declared-length answer is shown to its guard whole, and a refusal fails the call", async () => {
    using worker = rawWorker((socket) => socket.write(ok('{"ids":[1,2,3]}')));
    const { whole } = createRawFetch({ keepAliveMs: 4000 });
    const seen: number[] = [];
    const refuse = (piece: Uint8Array): void => {
      seen.push(piece.byteLength);
      throw new SyntaxError("refused");
    };
    expect(
      await refusal(whole(`${worker.url}/a`, {}, { limit: 64, tooLarge: () => new RangeError("too large"), onPiece: refuse })),
    ).toBeInstanceOf(SyntaxError);
    const answer = await whole(`${worker.url}/a`, {}, { limit: 64, tooLarge: () => new RangeError("too large") });
    expect(new TextDecoder().decode(answer.bytes)).toBe('{"ids":[1,2,3]}');
    expect(seen).toEqual([15]);
    expect(worker.connections()).toBe(1);
  });

  test("an answer framed by both Transfer-Encoding and Content-Length is refused and its connection dropped", async () => {
    using worker = rawWorker((socket) =>
      socket.write("HTTP/1.1 200 OK\r\nContent-Length: 64\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
    );
    const failure = await createRawFetch({ keepAliveMs: 4000 })
      .whole(`${worker.url}/a`, {}, wholeOptions)
      .catch((error: unknown) => error);
    expect((failure as Error).name).toBe("AnswerFramingError");
    while (worker.closed.length === 0) await Bun.sleep(1);
    expect(worker.closed).toEqual([1]);
  });

  test("an HTTP/1.0 worker's connection is never reused", async () => {
    using worker = rawWorker((socket) => socket.write("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}"));
    const { whole } = createRawFetch({ keepAliveMs: 4000 });
    for (let i = 0; i < 2; i++) expect(new TextDecoder().decode((await whole(`${worker.url}/a`, {}, wholeOptions)).bytes)).toBe("{}");
    expect(worker.connections()).toBe(2);
  });

  test("a whole 204 answer that declares a length has an empty body", async () => {
    using worker = rawWorker((socket) => socket.write("HTTP/1.1 204 No Content\r\nContent-Length: 64\r\n\r\n"));
    const answer = await createRawFetch({ keepAliveMs: 4000 }).whole(`${worker.url}/a`, {}, { ...wholeOptions, limit: 1024 });
    expect([answer.status, answer.bytes.byteLength]).toEqual([204, 0]);
  });

  test("a non-streamed call answered with an event stream is refused at its head, not read until its timeout", async () => {
    using worker = rawWorker((socket) =>
      socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"),
    );
    const failure = await postForJson(workerPost(worker.url, "context")).catch((error: unknown) => error);
    expect((failure as { code?: string }).code).toBe("WORKER_BAD_ANSWER");
    expect((failure as Error).message).toContain("event stream");
    while (worker.closed.length === 0) await Bun.sleep(1);
  });

  test("a streamed answer whose end waited unread while its reader lagged counts as idle from its pause", async () => {
    const sent = Promise.withResolvers<void>();
    using worker = rawWorker((socket) => {
      socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
      const piece = (n: number): void => {
        if (n === 40) {
          socket.write("0\r\n\r\n");
          sent.resolve();
          return;
        }
        socket.write("1\r\nx\r\n");
        setTimeout(() => piece(n + 1), 1);
      };
      piece(0);
    });
    const { fetch } = createRawFetch({ keepAliveMs: 50 });
    const reader = (await fetch(`${worker.url}/a`)).body!.getReader();
    await reader.read();
    // The worker wrote its end while the reader lagged: its keep-alive clock runs from there.
    await sent.promise;
    await Bun.sleep(80);
    while (!(await reader.read()).done);
    await (await fetch(`${worker.url}/a`)).body!.cancel();
    expect(worker.connections()).toBe(2);
  });

  test("a call aborted while waiting its turn to connect opens no connection", async () => {
    using worker = rawWorker((socket) => socket.write(ok("{}")));
    const { whole } = createRawFetch({ keepAliveMs: 4000 });
    const options = { ...wholeOptions, limit: 1024 };
    // 64 connections are opened to an origin at once: these 100 calls, made in one turn, queue the last 36.
    const controllers = Array.from({ length: 100 }, () => new AbortController());
    const calls = controllers.map((controller) => whole(`${worker.url}/a`, { signal: controller.signal }, options).catch(() => "aborted"));
    for (const controller of controllers.slice(64)) controller.abort();
    expect((await Promise.all(calls)).filter((answer) => answer === "aborted")).toHaveLength(36);
    // A call after them waits behind them for its turn: once it is answered, they had theirs.
    await whole(`${worker.url}/a`, { keepalive: false }, options);
    expect(worker.connections()).toBe(65);
  });

  test("a connection lost within the answer's head is no unread loss: the worker began answering", async () => {
    using worker = rawWorker((socket) => {
      socket.write("HTTP/1.1 200 OK\r\nContent-Le");
      socket.end();
    });
    const failure = await postForJson(workerPost(worker.url, "generation")).catch((error: unknown) => error);
    expect((failure as { code?: string }).code).toBe("WORKER_UNREACHABLE");
    expect((failure as { unread?: boolean }).unread).toBe(false);
  });

  test("a streamed call to an http: worker is read straight from its socket, with no ReadableStream between", async () => {
    using worker = rawWorker((socket) =>
      socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata:1\r\n0\r\n\r\n"),
    );
    const stream = await postForStream(workerPost(worker.url, "generation"));
    expect(stream.reader).not.toBeInstanceOf(ReadableStreamDefaultReader);
    expect(new TextDecoder().decode((await stream.reader.read()).value)).toBe("data:1");
    expect((await stream.reader.read()).done).toBe(true);
  });

  test("a connection opened for one request (keepalive: false) is closed after it, even when the worker would keep it", async () => {
    using worker = rawWorker((socket) => socket.write(ok("{}")));
    const { whole } = createRawFetch({ keepAliveMs: 4000 });
    const options = { ...wholeOptions, limit: 1024 };
    await whole(`${worker.url}/a`, { keepalive: false }, options);
    await whole(`${worker.url}/a`, {}, options);
    expect(worker.connections()).toBe(2);
    while (worker.closed.length === 0) await Bun.sleep(1);
    expect(worker.closed).toEqual([1]);
  });

  test("a call refused before anything is sent (a bad header) leaves no deadline behind", async () => {
    const scheduled: string[] = [];
    const deadlines = {
      schedule: () => {
        scheduled.push("scheduled");
        return () => scheduled.push("dropped");
      },
    };
    const { whole } = createRawFetch({ keepAliveMs: 4000 });
    const options = { ...wholeOptions, timeout: { ms: 10, deadlines } };
    const failure = await whole("http://127.0.0.1:9/a", { headers: { "x-id": "a\r\nb" } }, options).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TypeError);
    expect(scheduled).toEqual([]);
  });

  test("an answer framed by the connection's close is cut, not ended, by a reset", async () => {
    // Bun's listener cannot reset a connection; node's can.
    const server = createServer((socket) =>
      socket.once("data", () => {
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"partial":');
        setTimeout(() => socket.resetAndDestroy(), 5);
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const failure = await createRawFetch({ keepAliveMs: 4000 })
        .whole(`http://127.0.0.1:${port}/a`, {}, { ...wholeOptions, limit: 1024 })
        .catch((error: unknown) => error);
      expect((failure as { code?: string }).code).toBe("ERR_ANSWER_CUT");
    } finally {
      server.close();
    }
  });

  test("an answer whose status is outside 100 to 599 fails the call on every path, never hangs it", async () => {
    using worker = rawWorker((socket) => socket.write("HTTP/1.1 600 Beyond\r\nContent-Length: 2\r\n\r\n{}"));
    const { fetch, whole } = createRawFetch({ keepAliveMs: 4000 });
    const failures = await Promise.all([
      fetch(`${worker.url}/health`).catch((error: unknown) => error),
      whole(`${worker.url}/a`, {}, wholeOptions).catch((error: unknown) => error),
    ]);
    expect(failures.map((failure) => (failure as Error).name)).toEqual(["AnswerFramingError", "AnswerFramingError"]);
  });

  test("a connection lost after an interim answer is no unread loss either", async () => {
    using worker = rawWorker((socket) => {
      socket.write("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n");
      socket.end();
    });
    const failure = await postForJson(workerPost(worker.url, "generation")).catch((error: unknown) => error);
    expect((failure as { unread?: boolean }).unread).toBe(false);
  });

  test("a whole answer whose Content-Length comes twice, alike, is read as one length", async () => {
    using worker = rawWorker((socket) => socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}"));
    const answer = await createRawFetch({ keepAliveMs: 4000 }).whole(`${worker.url}/a`, {}, wholeOptions);
    expect(new TextDecoder().decode(answer.bytes)).toBe("{}");
  });
});
