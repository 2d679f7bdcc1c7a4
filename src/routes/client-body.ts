import { badRequest, bodyTooLarge, ProxyError } from "../errors.ts";
import type { JsonObject } from "../json/json.ts";
import { JSON_SHAPE_LIMITS, JsonShapeGuard, LONG_STRING_BYTES, type JsonShapeLimits, type JsonShapeProblem } from "../json/json-shape.ts";
import { parseJsonSource, type ParsedBody } from "../json/json-source.ts";
import { withDeadline } from "../timers.ts";
import { type BodyBuffer, ChunkedBodyBuffer, DeclaredBodyBuffer } from "./body-buffer.ts";

/** A piece larger than this is scanned in slices with a turn of the event loop between them. */
const SCAN_SLICE_BYTES = 1024 * 1024;

/** A body may come in this many pieces whatever their size, and one more per BYTES_PER_PIECE bytes. */
const FREE_PIECES = 1024;
const BYTES_PER_PIECE = 256;

/**
 * Bodies declared shorter than this are parsed whole, their long strings not decoded on their
 * own (json/json-source.ts): the three copies of a string that cutting saves cost little at this
 * size, and the cut costs more than the parse. 100 KB system prompt, in-process
 * (bench/micro/agent-phases.ts): the body read 73 → 54 µs, the generation body 36 → 22.
 */
const WHOLE_PARSE_BYTES = 1024 * 1024;

/** Pieces read between two turns of the event loop. */
const YIELD_EVERY_PIECES = 64;

export interface BodyLimits {
  /** Larger bodies get 413. */
  readonly maxBytes: number;
  /** A body arriving slower than this on average, once the grace period is over, is cut (408). */
  readonly minBytesPerSecond: number;
  readonly graceMs: number;
  /** Nesting depth and value count (default JSON_SHAPE_LIMITS). */
  readonly shape?: JsonShapeLimits;
}

/** The client's JSON object body (see readClientJson). */
export async function readClientBody(request: Request, limits: BodyLimits): Promise<JsonObject> {
  return (await readClientJson(request, limits)).body;
}

/**
 * Reads the client's JSON object body: bounded in size (413), in slowness (408, whatever
 * its framing), in nesting depth (400) and in values for its size (413), the last two
 * checked on the bytes as they arrive, so a hostile body is refused before it is parsed.
 * The bytes come back with it, laid out by member, for workers to be sent them again.
 * `unparsed` hears of a body read whole that is not a JSON object, with its bytes.
 */
export async function readClientJson(
  request: Request,
  limits: BodyLimits,
  unparsed?: (bytes: Uint8Array, error: ProxyError) => void,
): Promise<ParsedBody> {
  const declared = declaredLength(request);
  if (declared !== undefined && declared > limits.maxBytes) throw bodyTooLarge(limits.maxBytes);
  // A body declared shorter than WHOLE_PARSE_BYTES is parsed whole: its long strings are not cut out.
  const longStrings = declared !== undefined && declared < WHOLE_PARSE_BYTES ? Number.POSITIVE_INFINITY : LONG_STRING_BYTES;
  const guard = new JsonShapeGuard(limits.shape ?? JSON_SHAPE_LIMITS, Math.min(declared ?? limits.maxBytes, limits.maxBytes), longStrings);
  const bytes = await readBounded(request, limits, declared, guard).catch((thrown: unknown) => {
    // Reading fails only when the client goes away mid-body (the runtime's AbortError): a
    // departure (499), not a failure of the proxy.
    throw thrown instanceof ProxyError
      ? thrown
      : new ProxyError("CLIENT_GONE", 499, "Client disconnected while sending the body", { cause: thrown });
  });
  const problem = guard.finish(bytes.length);
  if (problem) throw shapeError(problem);
  try {
    return parseJsonSource(bytes, guard.layout());
  } catch (error) {
    // A body read whole that is not a JSON object (or not UTF-8): its bytes go to `unparsed`.
    if (error instanceof ProxyError) unparsed?.(bytes, error);
    throw error;
  }
}

function declaredLength(request: Request): number | undefined {
  const header = request.headers.get("content-length");
  if (header === null) return undefined;
  const value = Number(header);
  return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

async function readBounded(request: Request, limits: BodyLimits, declared: number | undefined, guard: JsonShapeGuard): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array();
  // A short declared body cannot be judged on its rate before the grace period ends anyway:
  // read it whole under that one deadline (measured: 33 µs a request cheaper than the loop).
  if (declared !== undefined && declared <= (limits.graceMs / 1000) * limits.minBytesPerSecond) {
    const whole = await withDeadline(request.bytes(), limits.graceMs);
    if (whole === "late") throw tooSlow(limits.minBytesPerSecond);
    await scan(guard, whole);
    return whole;
  }
  // Anything longer is read piece by piece, its average rate judged at every wait, so that a
  // declared length buys no time: a stalled body is cut however large its Content-Length.
  const reader = request.body.getReader();
  const gathered: BodyBuffer = declared === undefined ? new ChunkedBodyBuffer() : new DeclaredBodyBuffer(declared);
  let pieces = 0;
  const deadline = new SlowBodyDeadline(
    limits,
    () => gathered.size,
    () => void reader.cancel().catch(() => {}),
  );
  try {
    for (;;) {
      deadline.waitStarts();
      const read = await reader.read();
      deadline.waiting = false;
      if (deadline.late) throw tooSlow(limits.minBytesPerSecond);
      if (read.done) break;
      const piece = read.value;
      if (gathered.size + piece.byteLength > limits.maxBytes) throw bodyTooLarge(limits.maxBytes);
      // Each piece costs about a microsecond of the runtime's own work whatever its size: a body
      // in 1-byte chunks would cost seconds a MiB. Past a generous allowance, pieces must carry
      // BYTES_PER_PIECE bytes on average (any client library's chunks carry kilobytes).
      pieces++;
      if (pieces > FREE_PIECES + (gathered.size + piece.byteLength) / BYTES_PER_PIECE) throw tooFragmented(pieces);
      if (piece.byteLength <= SCAN_SLICE_BYTES) {
        const problem = guard.feed(piece);
        if (problem) throw shapeError(problem);
      } else await scan(guard, piece);
      if (!gathered.append(piece)) throw badRequest("Request body is longer than its Content-Length");
      // Pieces already queued resolve as microtasks: without a turn now and then, a body that
      // is all there holds the event loop (health checks, other clients) until it is read.
      if (pieces % YIELD_EVERY_PIECES === 0) await Bun.sleep(0);
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    throw error;
  } finally {
    deadline.stop();
  }
  return gathered.bytes();
}

/**
 * The slow-body rule of one body read piece by piece: late when, waiting for the client, more
 * time has gone by than the grace period or than the bytes so far need at the floor rate. One
 * timer for the whole body, re-armed only when it fires and the body is not late (a timer per
 * piece cost more than the piece). Late, it calls `cut` (which ends the pending read); found
 * overdue while the proxy is busy with a piece, it judges again at the next wait.
 */
class SlowBodyDeadline {
  late = false;
  /** Whether the proxy is waiting for the client's next piece (only then can the body be late). */
  waiting = false;
  readonly #limits: BodyLimits;
  readonly #size: () => number;
  readonly #cut: () => void;
  readonly #started = performance.now();
  #timer: Timer | undefined;

  constructor(limits: BodyLimits, size: () => number, cut: () => void) {
    this.#limits = limits;
    this.#size = size;
    this.#cut = cut;
    this.#arm();
  }

  waitStarts(): void {
    // Found overdue while the proxy was busy with a piece: judged again now that it waits.
    if (this.#timer === undefined) this.#arm();
    this.waiting = true;
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Milliseconds left before the body, as large as it is now, is late. */
  #due(): number {
    return Math.max(this.#limits.graceMs, (this.#size() / this.#limits.minBytesPerSecond) * 1000) - (performance.now() - this.#started);
  }

  #arm(): void {
    this.#timer = setTimeout(() => this.#fired(), Math.max(0, this.#due()));
  }

  #fired(): void {
    this.#timer = undefined;
    if (this.#due() > 0) this.#arm();
    else if (this.waiting) {
      this.late = true;
      this.#cut();
    }
  }
}

/** Feeds the guard, yielding between slices of a large piece so no client stalls the others. */
async function scan(guard: JsonShapeGuard, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length; at += SCAN_SLICE_BYTES) {
    if (at > 0) await Bun.sleep(0);
    const problem = guard.feed(bytes.length <= SCAN_SLICE_BYTES ? bytes : bytes.subarray(at, at + SCAN_SLICE_BYTES));
    if (problem) throw shapeError(problem);
  }
}

function shapeError(problem: JsonShapeProblem): ProxyError {
  if (problem.bound === "depth") return new ProxyError("BODY_TOO_DEEP", 400, `Request body is nested deeper than ${problem.limit} levels`);
  return new ProxyError("BODY_TOO_LARGE", 413, `Request body has too many JSON values for its size (at most ${problem.limit})`);
}

/**
 * 400, not 413: the body is not too large (it may be a few kilobytes); how it was sent is what
 * is refused, and the remedy is larger chunks, not less content, which 413 would suggest.
 */
function tooFragmented(pieces: number): ProxyError {
  return new ProxyError(
    "BODY_TOO_FRAGMENTED",
    400,
    `Request body arrived in too many small pieces (${pieces}; fewer than one per ${BYTES_PER_PIECE} bytes is expected): send it in larger chunks`,
  );
}

function tooSlow(minBytesPerSecond: number): ProxyError {
  return new ProxyError("BODY_TOO_SLOW", 408, `Request body arrived slower than ${minBytesPerSecond} bytes per second`);
}
