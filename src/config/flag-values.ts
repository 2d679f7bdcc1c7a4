/** Command-line words → typed option values, driven by the option table. */

import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { commandSpecs, specsOf, type OptionSpec, type OptionValues, type Section } from "./cli-options.ts";
import { UsageError } from "./errors.ts";
import { normaliseUrlList } from "./urls.ts";

type RawValue = string | boolean | (string | boolean)[];
type Value = string | number | boolean | string[];

/** The parseArgs configuration of one command: its own flags plus --help/--version. */
export function parseArgsConfig(section: Section): ParseArgsOptionsConfig {
  const config: ParseArgsOptionsConfig = {};
  for (const spec of [...commandSpecs(section), ...specsOf("global")]) {
    const type = spec.kind === "flag" ? "boolean" : "string";
    // Every spelling collects its words as a list, so the last one given wins whichever spelling it used.
    const multiple = spec.kind !== "flag";
    config[spec.name] = { type, multiple, ...(spec.short === undefined ? {} : { short: spec.short }) };
    for (const spelling of spec.spellings ?? []) config[spelling] = { type, multiple };
  }
  return config;
}

/**
 * Parse the words after the command word. Positionals are refused: the command word was the
 * only one, and a stray word is more likely a forgotten `--flag` than something to ignore.
 */
export function parseSection<S extends Section>(section: S, args: readonly string[]): OptionValues<S> & OptionValues<"global"> {
  const { values, tokens } = parseWords(section, args);
  const out: Record<string, Value> = {};
  for (const spec of [...commandSpecs(section), ...specsOf("global")]) {
    const raw = wordsOf(spec, values, tokens);
    if (raw !== undefined) out[spec.key] = convert(spec, raw);
  }
  for (const spec of commandSpecs(section)) {
    // --help and --version need no other flag, so a missing required one only matters without them.
    if (spec.required === true && out[spec.key] === undefined && out["help"] !== true && out["version"] !== true) {
      throw new UsageError(`${section} needs --${spec.name}`);
    }
  }
  if (!fitsSection(section, out)) throw new TypeError(`Option table of ${section} yields values it does not declare`);
  return out;
}

/** Proves to the type checker what convert() guarantees: each value fits its spec's kind. */
function fitsSection<S extends Section>(section: S, out: Record<string, Value>): out is OptionValues<S> & OptionValues<"global"> {
  const byKey = new Map([...commandSpecs(section), ...specsOf("global")].map((spec) => [spec.key, spec]));
  return Object.entries(out).every(([key, value]) => {
    const spec = byKey.get(key);
    return spec !== undefined && fitsKind(spec, value);
  });
}

function fitsKind(spec: OptionSpec, value: Value): boolean {
  if (spec.kind === "flag") return typeof value === "boolean";
  if (spec.kind === "urls" || spec.kind === "list") return Array.isArray(value);
  if (spec.kind === "string") return typeof value === "string";
  if (spec.kind === "enum") return typeof value === "string" && spec.choices?.includes(value) === true;
  return typeof value === "number";
}

interface Token {
  readonly kind: string;
  readonly name?: string;
  readonly value?: string | undefined;
}

/** Whether the user spelled an option this way (e.g. the deprecated `--config_file`). */
export function usedSpelling(section: Section, args: readonly string[], spelling: string): boolean {
  return parseWords(section, args).tokens.some((token) => token.kind === "option" && token.name === spelling);
}

/** The words given for a spec under any of its spellings, in command-line order. */
function wordsOf(spec: OptionSpec, values: Record<string, RawValue | undefined>, tokens: readonly Token[]): RawValue | undefined {
  const names = new Set([spec.name, ...(spec.spellings ?? [])]);
  if (spec.kind === "flag") return [...names].some((name) => values[name] === true) ? true : undefined;
  const words = tokens
    .filter((token) => token.kind === "option" && token.name !== undefined && names.has(token.name))
    .map((token) => token.value ?? "");
  return words.length === 0 ? undefined : words;
}

function parseWords(section: Section, args: readonly string[]): { values: Record<string, RawValue | undefined>; tokens: readonly Token[] } {
  try {
    return parseArgs({ args: [...args], options: parseArgsConfig(section), strict: true, allowPositionals: false, tokens: true });
  } catch (error) {
    // parseArgs throws TypeError with a clear message; keep it, drop the stack.
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function convert(spec: OptionSpec, raw: RawValue): Value {
  if (spec.kind === "flag") return raw === true;
  const texts = (Array.isArray(raw) ? raw : [raw]).map(String);
  if (spec.kind === "urls") {
    return normaliseUrlList(texts, (bad) => invalid(spec, bad, `host:port or http(s)://host:port`));
  }
  if (spec.kind === "list")
    return texts
      .flatMap((text) => text.split(","))
      .map((item) => item.trim())
      .filter((item) => item !== "");
  // Not repeatable: parseArgs gave one string.
  const text = texts.at(-1) ?? "";
  if (spec.kind === "enum") return choiceOf(spec, text);
  if (spec.kind === "seconds") return Math.round(secondsOf(spec, text) * 1000);
  if (spec.kind === "int" || spec.kind === "number") return numberOf(spec, text);
  if (text.trim() === "") throw invalid(spec, text, "a non-empty string");
  return text;
}

function choiceOf(spec: OptionSpec, text: string): string {
  const given = spec.caseInsensitive === true ? text.toLowerCase() : text;
  const choice = spec.aliases?.[given] ?? given;
  if (spec.choices?.includes(choice) !== true) throw invalid(spec, text, `one of ${acceptedWords(spec)}`);
  return choice;
}

/** Every word a choice flag accepts: its choices, then the other tools' spellings it takes for them. */
function acceptedWords(spec: OptionSpec): string {
  const words = [...(spec.choices ?? []), ...Object.keys(spec.aliases ?? {})].join(", ");
  return spec.caseInsensitive === true ? `${words} (in any case)` : words;
}

function secondsOf(spec: OptionSpec, text: string): number {
  const seconds = /^(\d+\.?\d*|\.\d+)$/.test(text) ? Number(text) : Number.NaN;
  if (!(seconds > 0) || !Number.isFinite(seconds)) throw invalid(spec, text, "a number of seconds > 0");
  return seconds;
}

function numberOf(spec: OptionSpec, text: string): number {
  const integer = spec.kind === "int";
  const pattern = integer ? /^\d+$/ : /^(\d+\.?\d*|\.\d+)$/;
  const value = pattern.test(text) ? Number(text) : Number.NaN;
  const min = spec.min ?? 0;
  const max = spec.max ?? Number.MAX_SAFE_INTEGER;
  if (!(value >= min && value <= max)) {
    const what = integer ? "an integer" : "a number";
    throw invalid(spec, text, spec.max === undefined ? `${what} >= ${min}` : `${what} from ${min} to ${max}`);
  }
  return value;
}

function invalid(spec: OptionSpec, text: string, expectation: string): UsageError {
  return new UsageError(`Invalid value for --${spec.name}: "${text}" (expected ${expectation})`);
}
