/** Typed readers of YAML values: each names the key (as a dotted path) when a value is wrong. */

import { invalidConfig } from "./errors.ts";

export type Mapping = Record<string, unknown>;

export function optFraction(map: Mapping, key: string, path: string): number | undefined {
  const value = map[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !(value >= 0 && value <= 1))
    throw invalidConfig(path, `a number from 0 to 1, not ${JSON.stringify(value)}`);
  return value;
}

/**
 * PyYAML (YAML 1.1) reads these plain words as booleans where Bun's YAML 1.2 reader sees
 * strings. (A string "true" can only have been quoted, so it stays refused, as upstream refuses it.)
 */
const YAML11_TRUE = new Set(["yes", "Yes", "YES", "on", "On", "ON"]);
const YAML11_FALSE = new Set(["no", "No", "NO", "off", "Off", "OFF"]);

export function optBoolean(map: Mapping, key: string, path: string): boolean | undefined {
  const value = map[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value === "boolean") return value;
  if (typeof value === "string" && YAML11_TRUE.has(value)) return true;
  if (typeof value === "string" && YAML11_FALSE.has(value)) return false;
  throw invalidConfig(path, `true or false, not ${JSON.stringify(value)}`);
}

export function optInt(map: Mapping, key: string, path: string, min: number, max?: number): number | undefined {
  const value = map[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > (max ?? Number.MAX_SAFE_INTEGER)) {
    const range = max === undefined ? `>= ${min}` : `from ${min} to ${max}`;
    throw invalidConfig(path, `an integer ${range}, not ${JSON.stringify(value)}`);
  }
  return value;
}

/** A number above 0, a fraction allowed (Python's float): e.g. a timeout in seconds. */
export function optPositive(map: Mapping, key: string, path: string): number | undefined {
  const value = map[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0)
    throw invalidConfig(path, `a number above 0, not ${JSON.stringify(value)}`);
  return value;
}

export function optString(map: Mapping, key: string, path: string): string | undefined {
  const value = map[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value.trim() === "") throw invalidConfig(path, `a non-empty string, not ${JSON.stringify(value)}`);
  return value;
}

export function optChoice<T extends string>(map: Mapping, key: string, path: string, choices: readonly T[]): T | undefined {
  const value = map[key];
  if (value === undefined || value === null) return undefined;
  const choice = choices.find((candidate) => candidate === value);
  if (choice === undefined) throw invalidConfig(path, `one of ${choices.join(", ")}, not ${JSON.stringify(value)}`);
  return choice;
}

export function isMapping(value: unknown): value is Mapping {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
