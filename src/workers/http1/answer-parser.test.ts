import { describe, expect, test } from "bun:test";
import { AnswerFramingError, AnswerParser, type AnswerHead } from "./answer-parser.ts";

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

function parse(pieces: readonly string[], maxHead = 1024): { head?: AnswerHead; body: string; ended: boolean; parser: AnswerParser } {
  const out: { head?: AnswerHead; body: string; ended: boolean } = { body: "", ended: false };
  const parser = new AnswerParser(
    {
      head: (head) => {
        out.head = head;
      },
      body: (piece) => {
        out.body += new TextDecoder().decode(piece);
      },
      end: () => {
        out.ended = true;
      },
    },
    maxHead,
  );
  for (const piece of pieces) parser.push(bytes(piece));
  return { ...out, parser };
}

describe("AnswerParser", () => {
  test("a Content-Length answer split anywhere gives its status, headers and exact body", () => {
    const whole = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"a":"xyz"}';
    for (let cut = 1; cut < whole.length; cut++) {
      const out = parse([whole.slice(0, cut), whole.slice(cut)]);
      expect(out.head?.status).toBe(200);
      expect(out.head?.headers.get("content-type")).toBe("application/json");
      expect(out.head?.length).toBe(11);
      expect(out.body).toBe('{"a":"xyz"}');
      expect(out.ended).toBe(true);
      expect(out.parser.reusable).toBe(true);
    }
  });

  test("a chunked answer with extensions and trailers is de-chunked, one byte at a time too", () => {
    const whole =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n";
    expect(parse([whole]).body).toBe("hello world");
    const out = parse(whole.split(""));
    expect(out.body).toBe("hello world");
    expect(out.ended).toBe(true);
  });

  test("an answer without a length ends with the connection and is not reusable", () => {
    const out = parse(["HTTP/1.1 200 OK\r\n\r\nsome", " bytes"]);
    expect(out.ended).toBe(false);
    expect(out.parser.closed()).toBe(true);
    expect(out.body).toBe("some bytes");
    expect(out.parser.reusable).toBe(false);
  });

  test("interim 100 and 103 answers are skipped; 204 has no body", () => {
    const out = parse(["HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"]);
    expect(out.head?.status).toBe(204);
    expect(out.head?.length).toBeUndefined();
    expect(out.ended).toBe(true);
  });

  test("Connection: close makes the connection unfit for reuse", () => {
    expect(parse(["HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"]).parser.reusable).toBe(false);
  });

  test("an HTTP/1.0 answer makes the connection unfit for reuse", () => {
    const out = parse(["HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}"]);
    expect([out.body, out.ended, out.parser.reusable]).toEqual(["{}", true, false]);
  });

  test("a cut-off answer does not end when its connection closes", () => {
    const out = parse(["HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"]);
    expect(out.parser.closed()).toBe(false);
    expect(out.ended).toBe(false);
  });

  const refused: [string, string][] = [
    ["a status line that is not HTTP/1.x", "HTTP/2 200\r\n\r\n"],
    ["a status past 599", "HTTP/1.1 600 Beyond\r\nContent-Length: 0\r\n\r\n"],
    ["a status below 100", "HTTP/1.1 099 Below\r\nContent-Length: 0\r\n\r\n"],
    ["a malformed header line", "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"],
    ["an obsolete folded header", "HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n"],
    ["two different Content-Lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"],
    ["a negative Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"],
    ["a chunk size that is not hex", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x10\r\n"],
    ["chunk data longer than its size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n"],
    ["bytes after the answer", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nab"],
    ["a switch of protocols", "HTTP/1.1 101 Switching Protocols\r\n\r\n"],
    ["Transfer-Encoding beside Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"],
    ["Content-Length beside Transfer-Encoding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 5\r\n\r\n"],
    ["Transfer-Encoding on HTTP/1.0", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"],
  ];
  for (const [what, text] of refused) {
    test(`refuses ${what}`, () => {
      expect(() => parse([text])).toThrow(AnswerFramingError);
    });
  }

  test("refuses a head larger than its bound, whether or not its end has come", () => {
    const big = `HTTP/1.1 200 OK\r\nX-Big: ${"a".repeat(2000)}\r\n`;
    expect(() => parse([big])).toThrow(AnswerFramingError);
    expect(() => parse([`${big}\r\n`])).toThrow(AnswerFramingError);
  });

  test("refuses an endless chunk-size line", () => {
    expect(() => parse(["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "1".repeat(5000)])).toThrow(AnswerFramingError);
  });
});
