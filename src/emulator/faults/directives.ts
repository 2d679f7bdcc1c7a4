/**
 * Per-request emulator directives written into the prompt text.
 *
 * Grammar: `[[emu key=value key=value …]]` anywhere in the prompt text, any number of times.
 * A key may be prefixed `ctx.` (context phase only) or `gen.` (generation and aggregated phases
 * only); an unprefixed key applies to every phase. A prefixed key beats an unprefixed one;
 * among equals the later one wins. Values are non-negative integers, except `finish=stop`.
 * The directive text itself still counts as prompt words.
 */

export interface Directives {
  readonly prefillMs?: number;
  /** Time the request waits for the engine to schedule it, before anything else (a generation request: before it pulls its KV). */
  readonly queueMs?: number;
  readonly tokenMs?: number;
  readonly tokens?: number;
  /** The model emits its end token after the first output token. */
  readonly finishStop?: boolean;
  readonly rejectStatus?: number;
  readonly rejectAfterMs?: number;
  readonly cutAfterTokens?: number;
  readonly chunkBytes?: number;
  readonly silenceMs?: number;
  readonly silenceAfterTokens?: number;
  readonly errorEventAfterTokens?: number;
  readonly tools?: number;
  readonly reasoning?: number;
  readonly cached?: number;
}

export interface PhaseDirectives {
  readonly context: Directives;
  /** Also used by aggregated requests. */
  readonly generation: Directives;
  /** Every `[[emu …]]` block found, joined by a space: parsing it again gives the same result. */
  readonly text: string;
}

type NumericField = Exclude<keyof Directives, "finishStop">;

/** Directive key → field, with the smallest accepted value. */
const NUMERIC_KEYS: Readonly<Record<string, readonly [NumericField, number]>> = {
  prefill_ms: ["prefillMs", 0],
  queue_ms: ["queueMs", 0],
  token_ms: ["tokenMs", 0],
  tokens: ["tokens", 1],
  reject: ["rejectStatus", 400],
  reject_after_ms: ["rejectAfterMs", 0],
  cut: ["cutAfterTokens", 0],
  chunk: ["chunkBytes", 1],
  silence_ms: ["silenceMs", 0],
  silence_after: ["silenceAfterTokens", 0],
  error_event: ["errorEventAfterTokens", 0],
  tools: ["tools", 0],
  reasoning: ["reasoning", 0],
  cached: ["cached", 0],
};

const BLOCK = /\[\[emu(?:\s+([^\]]*))?\]\]/g;

type Scope = "all" | "ctx" | "gen";
type Mutable = { -readonly [K in keyof Directives]: Directives[K] };

/** Parses every directive block in the text. Throws SyntaxError naming the bad key or value. */
export function parseDirectives(promptText: string): PhaseDirectives {
  const scoped: Record<Scope, Mutable> = { all: {}, ctx: {}, gen: {} };
  const blocks: string[] = [];
  for (const match of promptText.matchAll(BLOCK)) {
    blocks.push(match[0]);
    for (const pair of (match[1] ?? "").split(/\s+/).filter((p) => p !== "")) {
      applyPair(scoped, pair);
    }
  }
  return {
    context: { ...scoped.all, ...scoped.ctx },
    generation: { ...scoped.all, ...scoped.gen },
    text: blocks.join(" "),
  };
}

function applyPair(scoped: Record<Scope, Mutable>, pair: string): void {
  const equals = pair.indexOf("=");
  if (equals <= 0) throw new SyntaxError(`Cannot parse emulator directive "${pair}": expected key=value`);
  const [scope, key] = splitScope(pair.slice(0, equals));
  const value = pair.slice(equals + 1);
  const target = scoped[scope];
  if (key === "finish") {
    if (value !== "stop") throw new SyntaxError(`Cannot parse emulator directive "${pair}": finish only takes "stop"`);
    target.finishStop = true;
    return;
  }
  const spec = NUMERIC_KEYS[key];
  if (spec === undefined) throw new SyntaxError(`Cannot parse emulator directive "${pair}": unknown key "${key}"`);
  const [field, minimum] = spec;
  target[field] = parseValue(pair, value, minimum);
}

function splitScope(name: string): [Scope, string] {
  if (name.startsWith("ctx.")) return ["ctx", name.slice(4)];
  if (name.startsWith("gen.")) return ["gen", name.slice(4)];
  return ["all", name];
}

function parseValue(pair: string, value: string, minimum: number): number {
  if (!/^\d+$/.test(value)) throw new SyntaxError(`Cannot parse emulator directive "${pair}": value is not an integer`);
  const number = Number(value);
  if (number < minimum || !Number.isSafeInteger(number)) {
    throw new SyntaxError(`Cannot parse emulator directive "${pair}": value must be at least ${minimum}`);
  }
  return number;
}
