/** One request/response on a connection, as a promise of its timings, SSE frame count and (optionally) body. */

import type { HttpConnection } from "./connection.ts";

export interface Exchange {
  readonly status: number;
  /** performance.now() when the request was written, the status line arrived, the body began and ended. */
  readonly sentAt: number;
  readonly headAt: number;
  readonly firstBodyAt: number | undefined;
  /** When the first complete SSE frame had arrived (time to first event). */
  readonly firstFrameAt: number | undefined;
  readonly endAt: number;
  /** Complete SSE frames (blank-line terminated) in the body. */
  readonly frames: number;
  readonly bodyBytes: number;
  /** The body, when asked for. */
  readonly body: Uint8Array | undefined;
  readonly reusable: boolean;
}

export interface ExchangeOptions {
  readonly keepBody?: boolean;
  /** Called as the status line arrives (for TTFB), and on each body piece (for disconnects). */
  readonly onHead?: (status: number) => void;
  readonly onBody?: (framesSoFar: number) => void;
}

const LF = 0x0a;
const encoder = new TextEncoder();

/** Request bytes for a JSON POST on a keep-alive connection. */
export function postRequest(host: string, path: string, json: string): Uint8Array {
  const body = encoder.encode(json);
  const head = `POST ${path} HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`;
  const bytes = new Uint8Array(head.length + body.length);
  bytes.set(encoder.encode(head));
  bytes.set(body, head.length);
  return bytes;
}

export function exchange(conn: HttpConnection, request: Uint8Array, options: ExchangeOptions = {}): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const parts: Uint8Array[] = [];
    let status = 0;
    let headAt = 0;
    let firstBodyAt: number | undefined;
    let firstFrameAt: number | undefined;
    let frames = 0;
    let bodyBytes = 0;
    let lastWasLf = false;
    const sentAt = performance.now();
    conn.send(request, {
      head(code) {
        status = code;
        headAt = performance.now();
        options.onHead?.(code);
      },
      body(bytes) {
        firstBodyAt ??= performance.now();
        bodyBytes += bytes.length;
        if (options.keepBody === true) parts.push(bytes.slice());
        for (let i = bytes.indexOf(LF); i >= 0; i = bytes.indexOf(LF, i + 1)) {
          if (i === 0 ? lastWasLf : bytes[i - 1] === LF) frames++;
        }
        if (bytes.length > 0) lastWasLf = bytes[bytes.length - 1] === LF;
        if (frames > 0) firstFrameAt ??= performance.now();
        options.onBody?.(frames);
      },
      end(reusable) {
        const endAt = performance.now();
        const body = options.keepBody === true ? join(parts, bodyBytes) : undefined;
        resolve({ status, sentAt, headAt, firstBodyAt, firstFrameAt, endAt, frames, bodyBytes, body, reusable });
      },
      failed: reject,
    });
  });
}

function join(parts: readonly Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1 && parts[0]) return parts[0];
  const out = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
