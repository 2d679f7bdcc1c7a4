/**
 * Property tests of the Responses dialect over random worker streams: an opening, any mix of
 * output deltas (any Unicode), worker keepalives (response.in_progress and SSE comments),
 * named or data-only frames with LF or CRLF line ends, then a terminal event — cut into random
 * chunks, with our keepalives at random chunk boundaries.
 */
import { describe, expect, test } from "bun:test";
import * as fc from "fast-check";
import { isJsonObject, type JsonObject, parseJson } from "../json/json.ts";
import { concatBytes } from "../bytes.ts";
import { SseFrameScanner } from "../sse/frame-scanner.ts";
import type { DialectStream } from "../streaming/dialect.ts";
import { responsesStream } from "./responses-dialect.ts";
import { buildResponsesOpening } from "./responses-opening.ts";
import { WORKER_RESPONSE, encoder } from "./responses-test-fixtures.ts";

// Generous: CI machines are shared, and bun test allows 5 s per test by default.
const TIMEOUT_MS = 30_000;
const RUNS = 2000;
const REQUEST: JsonObject = { model: "llama", input: "hi", stream: true, request_id: "resp_101_0123456789abcdef" };
const OPENING = buildResponsesOpening(REQUEST, 1_700_000_000_000);

type Body = { readonly type: string; readonly fields: JsonObject } | "comment";
interface Frame {
  readonly body: Body;
  readonly named: boolean;
  readonly crlf: boolean;
}

const text = fc.string({ unit: "grapheme", maxLength: 16 });
const body: fc.Arbitrary<Body> = fc.oneof(
  text.map((delta) => ({ type: "response.output_text.delta", fields: { item_id: "msg_1", output_index: 0, delta } })),
  text.map((delta) => ({ type: "response.reasoning_text.delta", fields: { item_id: "rs_1", delta } })),
  text.map((delta) => ({ type: "response.function_call_arguments.delta", fields: { item_id: "fc_1", delta } })),
  fc.constant({ type: "response.output_item.added", fields: { output_index: 0, item: { id: "msg_1", type: "message" } } }),
  fc.constant({ type: "response.in_progress", fields: { response: WORKER_RESPONSE } }),
  fc.constant<Body>("comment"),
);
const frame = (b: fc.Arbitrary<Body>): fc.Arbitrary<Frame> => fc.record({ body: b, named: fc.boolean(), crlf: fc.boolean() });
const withResponse = (type: string, status = "in_progress"): Body => ({ type, fields: { response: { ...WORKER_RESPONSE, status } } });
const workerFrames: fc.Arbitrary<Frame[]> = fc
  .tuple(
    frame(fc.constant(withResponse("response.created"))),
    frame(fc.constant(withResponse("response.in_progress"))),
    fc.array(frame(body), { maxLength: 12 }),
    frame(fc.constantFrom(withResponse("response.completed", "completed"), withResponse("response.incomplete", "incomplete"))),
  )
  .map(([created, inProgress, middle, last]) => [created, inProgress].concat(middle, [last]));

/** The worker's bytes: its events numbered from 0 (comments carry no number). */
function encode(frames: readonly Frame[]): Uint8Array {
  let sequence = 0;
  const parts = frames.map(({ body: b, named, crlf }) => {
    const end = crlf ? "\r\n" : "\n";
    if (b === "comment") return `: keepalive${end}${end}`;
    const data = JSON.stringify({ type: b.type, ...b.fields, sequence_number: sequence++ });
    return `${named ? `event: ${b.type}${end}` : ""}data: ${data}${end}${end}`;
  });
  return encoder.encode(parts.join(""));
}

function chunked(bytes: Uint8Array, fractions: readonly number[]): Uint8Array[] {
  const points = fractions.map((f) => Math.floor(f * bytes.length)).toSorted((a, b) => a - b);
  return [...points, bytes.length].map((point, i) => bytes.subarray(i === 0 ? 0 : (points[i - 1] ?? 0), point));
}

const cuts = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 20 });

/** Client bytes for the whole stream; a keepalive is asked for after chunk i when keepalives[i]. */
function relay(stream: DialectStream, chunks: readonly Uint8Array[], keepalives: readonly boolean[] = []): Uint8Array {
  const out: (Uint8Array | undefined)[] = [];
  for (const [i, chunk] of chunks.entries()) {
    out.push(stream.push(chunk));
    if (keepalives[i] === true) out.push(stream.keepalive());
  }
  const ended = stream.end();
  if (!(ended === undefined || ended instanceof Uint8Array)) throw new TypeError(`Stream counted as broken: ${ended.code}`);
  out.push(ended);
  return concatBytes(out.filter((part) => part !== undefined)) ?? new Uint8Array(0);
}

function opened(): { stream: DialectStream; opening: Uint8Array } {
  const stream = responsesStream({ opening: OPENING });
  const opening = stream.opening();
  if (opening === undefined) throw new TypeError("No opening was built");
  return { stream, opening };
}

interface ClientEvent {
  readonly event: string | undefined;
  readonly payload: JsonObject;
}

/** The client's events; comment frames are skipped, every other frame must hold a JSON object. */
function clientEvents(bytes: Uint8Array): ClientEvent[] {
  return new SseFrameScanner()
    .push(bytes)
    .filter((f) => !f.isComment)
    .map((f) => {
      const payload = parseJson(f.data ?? "");
      if (!isJsonObject(payload)) throw new TypeError(`Not a JSON object: ${f.data}`);
      return { event: f.event, payload };
    });
}

/** Numbered 0..n-1 without gaps, each named after its own type, and one response id throughout. */
function expectOneSequenceAndOneId(events: readonly ClientEvent[]): void {
  expect(events.map((e) => e.payload["sequence_number"])).toEqual(events.map((_, i) => i));
  for (const { event, payload } of events) if (event !== undefined) expect(payload["type"]).toBe(event);
  const ids = new Set(
    events
      .map((e) => e.payload["response"])
      .filter(isJsonObject)
      .map((r) => r["id"]),
  );
  expect([...ids]).toEqual([REQUEST["request_id"]]);
}

describe("Responses dialect properties", () => {
  test(
    "answered in time, any chunking is relayed byte for byte",
    () => {
      fc.assert(
        fc.property(workerFrames, cuts, (frames, fractions) => {
          const worker = encode(frames);
          const stream = responsesStream({ opening: OPENING });
          expect(Buffer.from(relay(stream, chunked(worker, fractions))).equals(worker)).toBe(true);
        }),
        { numRuns: RUNS },
      );
    },
    TIMEOUT_MS,
  );

  test(
    "opened early, any chunking of a worker stream gives the same client bytes",
    () => {
      fc.assert(
        fc.property(workerFrames, cuts, (frames, fractions) => {
          const worker = encode(frames);
          const whole = opened();
          const split = opened();
          const expected = concatBytes([whole.opening, relay(whole.stream, [worker])]);
          const actual = concatBytes([split.opening, relay(split.stream, chunked(worker, fractions))]);
          expect(Buffer.from(actual ?? []).equals(expected ?? new Uint8Array(0))).toBe(true);
        }),
        { numRuns: RUNS },
      );
    },
    TIMEOUT_MS,
  );

  test(
    "after an opening, with keepalives anywhere, client numbers run 0..n gap-free under one response id and only our opening and keepalives show",
    () => {
      fc.assert(
        fc.property(workerFrames, cuts, fc.array(fc.boolean(), { maxLength: 21 }), (frames, fractions, keepalives) => {
          const { stream, opening } = opened();
          const chunks = chunked(encode(frames), fractions);
          const events = clientEvents(concatBytes([opening, relay(stream, chunks, keepalives)]) ?? new Uint8Array(0));
          expectOneSequenceAndOneId(events);
          // Every worker event but its opening and its keepalives reaches the client, in order.
          const relayed = frames.flatMap((f) =>
            f.body === "comment" || /created|in_progress/.test(f.body.type) ? [] : [JSON.stringify(f.body.type)],
          );
          const seen = events.map((e) => JSON.stringify(e.payload["type"])).filter((t) => !/created|in_progress/.test(t));
          expect(seen).toEqual(relayed);
          // The client's opening and keepalives are ours: one response.created, no worker copy of either.
          const ours = events.filter((e) => /created|in_progress/.test(JSON.stringify(e.payload["type"])));
          expect(ours.filter((e) => e.payload["type"] === "response.created")).toHaveLength(1);
          for (const e of ours) expect(e.payload["response"]).toEqual(OPENING ?? {});
        }),
        { numRuns: RUNS },
      );
    },
    TIMEOUT_MS,
  );

  test(
    "answered in time, keepalives anywhere keep the worker's numbers gap-free under one response id",
    () => {
      fc.assert(
        fc.property(workerFrames, cuts, fc.array(fc.boolean(), { maxLength: 21 }), (frames, fractions, keepalives) => {
          const stream = responsesStream({ opening: OPENING });
          const events = clientEvents(relay(stream, chunked(encode(frames), fractions), keepalives));
          expectOneSequenceAndOneId(events);
        }),
        { numRuns: RUNS },
      );
    },
    TIMEOUT_MS,
  );
});
