import { describe, expect, test } from "bun:test";
import { concatBytes } from "../bytes.ts";
import { TraceCapture } from "./trace-capture.ts";
import { responseLine } from "./trace-records.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function text(capture: TraceCapture): string {
  return decoder.decode(concatBytes(capture.pieces) ?? new Uint8Array());
}

describe("TraceCapture", () => {
  test("a short stream is kept whole, in order", () => {
    const capture = new TraceCapture(1024 * 1024);
    for (const piece of ["data: a\n\n", "data: b\n\n", "data: [DONE]\n\n"]) capture.streamed(encoder.encode(piece));
    expect(text(capture)).toBe("data: a\n\ndata: b\n\ndata: [DONE]\n\n");
    expect(capture.omittedBytes).toBe(0);
    expect(capture.kind).toBe("sse_text");
  });

  test("a long stream keeps its start and its last 64 KiB, and counts what it left out", () => {
    const capture = new TraceCapture(128 * 1024);
    const frame = (i: number): Uint8Array =>
      encoder.encode(`event: response.output_text.delta\ndata: {"n":${String(i).padStart(6, "0")},"pad":"${"x".repeat(960)}"}\n\n`);
    const total = 2000;
    let sent = 0;
    for (let i = 0; i < total; i++) {
      const piece = frame(i);
      sent += piece.byteLength;
      capture.streamed(piece);
    }
    const end = `event: response.completed\ndata: ${JSON.stringify({ type: "response.completed", response: { object: "response", status: "incomplete", incomplete_details: { reason: "max_output_tokens" } } })}\n\n`;
    capture.streamed(encoder.encode(end));
    sent += end.length;
    const kept = text(capture);
    expect(kept.startsWith(decoder.decode(frame(0)))).toBe(true);
    expect(kept.endsWith(end)).toBe(true);
    expect(capture.heldBytes).toBeLessThanOrEqual(128 * 1024 + 2048);
    expect(capture.omittedBytes).toBe(sent - kept.length);
    const line = JSON.parse(
      responseLine({
        traceId: "tr_1",
        session: "_no_session",
        finishedAt: "t",
        status: "completed",
        disaggRequestId: 1n,
        httpStatus: undefined,
        termination: undefined,
        kind: "sse_text",
        text: kept,
        omittedBytes: capture.omittedBytes,
        upstream: undefined,
        responses: true,
      }),
    ) as Record<string, unknown>;
    expect(line["response"]).toMatchObject({ kind: "sse_text", truncated: true, omitted_bytes: capture.omittedBytes });
    // How the reply ended is still read from its kept end.
    expect(line).toMatchObject({ response_status: "incomplete", incomplete_reason: "max_output_tokens" });
  });
});
