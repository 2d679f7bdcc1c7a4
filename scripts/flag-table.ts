/**
 * Prints the flag table of docs/configuration.md from the CLI's option table, so the docs cannot
 * drift from the CLI (test/readme.test.ts): `bun scripts/flag-table.ts > /tmp/flags.md`, then paste.
 */

import { OPTIONS } from "../src/cli.ts";
import type { OptionSpec, Section } from "../src/config/cli-options.ts";
import { describe, flagWords } from "../src/config/usage.ts";

const TITLES: ReadonlyArray<readonly [Section, string]> = [
  ["serve", "`disagg-proxy [serve]`: the proxy (default command)"],
  ["coordinator", "`disagg-proxy coordinator`: the routing brain of several serving processes (it takes every serve flag too)"],
  ["worker", "`disagg-proxy worker`: an emulated TensorRT-LLM worker"],
  ["demo", "`disagg-proxy demo`: emulated workers plus a proxy, on this machine"],
  ["global", "Every command"],
];

/** Markdown pipes inside a cell would split it. */
function cell(text: string): string {
  return text.replaceAll("|", "\\|");
}

function row(spec: OptionSpec): string {
  const fallback = spec.default === undefined ? "" : `\`${cell(spec.default)}\``;
  return `| \`${cell(flagWords(spec).trim())}\` | ${fallback} | ${cell(describe(spec, false))} |`;
}

export function flagTable(): string {
  const specs: readonly OptionSpec[] = OPTIONS;
  return TITLES.map(([section, title]) => {
    const rows = specs.filter((spec) => spec.section === section).map(row);
    return [`#### ${title}`, "", "| Flag | Default | Meaning |", "|---|---|---|", ...rows, ""].join("\n");
  }).join("\n");
}

if (import.meta.main) process.stdout.write(flagTable());
