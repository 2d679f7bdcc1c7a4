/**
 * THE option table: parseArgs, the usage text, the typed option values and the docs flag
 * table (scripts/flag-table.ts) all come from it, so they cannot drift apart.
 */

import type { OptionSpec, Section } from "./option-spec.ts";
import { COORDINATOR_OPTIONS } from "./options/coordinator.ts";
import { SERVE_EDGE_OPTIONS } from "./options/serve-edges.ts";
import { SERVE_HEALTH_OPTIONS } from "./options/serve-health.ts";
import { SERVE_RUN_OPTIONS } from "./options/serve-run.ts";
import { WORKER_OPTIONS } from "./options/worker.ts";

export type { OptionSpec, Section, ValueKind } from "./option-spec.ts";

export const OPTIONS = [
  { section: "global", name: "help", short: "h", key: "help", kind: "flag", description: "Print usage (per command: `<command> --help`)" },
  { section: "global", name: "version", key: "version", kind: "flag", description: "Print the version" },
  ...SERVE_RUN_OPTIONS,
  ...SERVE_HEALTH_OPTIONS,
  ...SERVE_EDGE_OPTIONS,
  ...COORDINATOR_OPTIONS,
  ...WORKER_OPTIONS,
] as const satisfies readonly OptionSpec[];

type Entry = (typeof OPTIONS)[number];

type ValueOf<E extends Entry> = E extends { kind: "enum"; choices: readonly (infer C)[] }
  ? C
  : E extends { kind: "urls" | "list" }
    ? string[]
    : E extends { kind: "string" }
      ? string
      : E extends { kind: "flag" }
        ? boolean
        : number;

/** The coordinator reads the same config as serve, so it takes serve's flags beside its own. */
type Inherited<S extends Section> = S extends "coordinator" ? "serve" : never;
const INHERITED: Readonly<Partial<Record<Section, Section>>> = { coordinator: "serve" };

/** What a section's flags parse to: only the flags the user gave are present. */
export type OptionValues<S extends Section> = {
  [E in Extract<Entry, { section: S | Inherited<S> }> as E["key"]]?: ValueOf<E>;
};

export type ServeFlags = OptionValues<"serve">;
export type WorkerFlags = OptionValues<"worker">;
export type CoordinatorFlags = OptionValues<"coordinator">;

/** The table seen as plain specs, for code that walks it without caring about literals. */
export const OPTION_SPECS: readonly OptionSpec[] = OPTIONS;

export function specsOf(section: Section): OptionSpec[] {
  return OPTION_SPECS.filter((spec) => spec.section === section);
}

/** Every flag a command takes: its own, then those of the command it inherits from. */
export function commandSpecs(section: Section): OptionSpec[] {
  const inherited = INHERITED[section];
  return inherited === undefined ? specsOf(section) : [...specsOf(section), ...specsOf(inherited)];
}
