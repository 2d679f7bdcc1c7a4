/**
 * The byte-level data checks (dataIs, dataStartsWith) must agree with the decoded `data` of
 * the same frame for every frame shape: several data lines, `data` without a colon or value,
 * fields that merely start with "data", comments, CR / LF / CRLF line ends.
 */
import { describe, expect, test } from "bun:test";
import * as fc from "fast-check";
import { dataHead, dataHeadIn, dataIs, dataStartsWith } from "./frame.ts";
import { SseFrameScanner } from "./frame-scanner.ts";

const encoder = new TextEncoder();
const DONE = encoder.encode("[DONE]");
const ERROR = encoder.encode('{"error"');

function frameOf(text: string): ReturnType<SseFrameScanner["push"]>[number] {
  const [frame] = new SseFrameScanner().push(encoder.encode(text));
  if (frame === undefined) throw new Error(`no frame in ${JSON.stringify(text)}`);
  return frame;
}

describe("byte-level data checks", () => {
  test("recognise [DONE] and error frames as the decoded data does", () => {
    expect(dataIs(frameOf("data: [DONE]\n\n"), DONE)).toBe(true);
    expect(dataIs(frameOf("data:[DONE]\r\n\r\n"), DONE)).toBe(true);
    expect(dataIs(frameOf(": note\ndata: [DONE]\n\n"), DONE)).toBe(true);
    expect(dataIs(frameOf("data: [DONE]\ndata: more\n\n"), DONE)).toBe(false);
    expect(dataIs(frameOf("data: [DONE] \n\n"), DONE)).toBe(false);
    expect(dataIs(frameOf("datum: [DONE]\n\n"), DONE)).toBe(false);
    expect(dataStartsWith(frameOf('data: {"error": {"message": "x"}}\n\n'), ERROR)).toBe(true);
    expect(dataStartsWith(frameOf('data: {"id": 1}\n\n'), ERROR)).toBe(false);
    expect(dataHead(frameOf(": keepalive\n\n"))).toBeUndefined();
    const empty = dataHead(frameOf("data\n\n"));
    expect(empty && empty.end - empty.start).toBe(0);
  });

  const names = fc.constantFrom("data", "data", "datax", "dat", "event", "", "id");
  const values = fc.constantFrom("[DONE]", '{"error": 1}', '{"error"', "", " [DONE]", '{"id": 2}', "x", "[DONE]x");
  const lineEnds = fc.constantFrom("\n", "\r\n", "\r");
  const lines = fc.array(fc.tuple(names, fc.constantFrom(":", ": ", ""), values), { minLength: 1, maxLength: 4 });

  test("agree with the decoded data on random frames", () => {
    fc.assert(
      fc.property(lines, lineEnds, (parts, end) => {
        const body = parts
          .map(([name, colon, value]) => (name === "" ? `:${value}` : colon === "" ? name : `${name}${colon}${value}`))
          .join(end);
        const bytes = encoder.encode(`${body}${end}${end}x`);
        const frames = new SseFrameScanner().push(bytes);
        for (const frame of frames) {
          expect(dataIs(frame, DONE)).toBe(frame.data === "[DONE]");
          expect(dataStartsWith(frame, ERROR)).toBe(frame.data?.startsWith('{"error"') === true);
        }
        // The scanner's CR flag lets the relay skip the search for CR without changing the answer.
        new SseFrameScanner().scan(bytes, {
          frame(source, start, stop, _comment, _lent, hasCr) {
            expect(dataHeadIn(source, start, stop, hasCr)).toEqual(dataHeadIn(source, start, stop, true));
          },
        });
      }),
      { numRuns: 3000 },
    );
  });
});
