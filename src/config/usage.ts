/** Help text, rendered from the option table. */

import { commandSpecs, specsOf, type OptionSpec, type Section } from "./cli-options.ts";

export type Command = "serve" | "coordinator" | "worker" | "demo";

const SYNOPSIS: Record<Command, string> = {
  serve: "disagg-proxy [serve] [-c disagg_config.yaml] [--context URL]... [--generation URL]... [options]",
  coordinator: "disagg-proxy coordinator [-c disagg_config.yaml] [--port PORT] [serve's options]",
  worker: "disagg-proxy worker --role context|generation|mixed --port PORT [options]",
  demo: "disagg-proxy demo [--port PORT]",
};

const PURPOSE: Record<Command, string> = {
  serve: "Run the proxy in front of context and generation workers (the default command; `disaggregated` works too).",
  coordinator:
    "Run the routing brain several serving processes share, in upstream's coordinator protocol (POST /select, /finish): the workers, their health, the routers and their KV-block index, in one process. It listens on --port, else disagg_coordinator_url's port, else the config's port - 1.",
  worker: "Run an emulated TensorRT-LLM worker, for tests and demos.",
  demo: "Start emulated workers and a proxy on this machine, ready for curl.",
};

const COMMANDS: readonly Command[] = ["serve", "coordinator", "worker", "demo"];

/** `<flag words>` as docs/configuration.md and help show them, e.g. `-c, --config FILE`. */
export function flagWords(spec: OptionSpec): string {
  const arg = spec.kind === "flag" ? "" : ` ${spec.arg ?? "VALUE"}`;
  const names = [spec.name, ...(spec.spellings ?? [])].map((name) => `--${name}`).join(", ");
  return `${spec.short === undefined ? "    " : `-${spec.short}, `}${names}${arg}`;
}

/** Description plus the notes a reader needs: choices, repeatable, required, default (unless a table shows it apart). */
export function describe(spec: OptionSpec, withDefault = true): string {
  const notes = [
    spec.choices === undefined ? undefined : spec.choices.join(" | "),
    spec.repeatable === true ? "repeatable" : undefined,
    spec.required === true ? "required" : undefined,
    spec.default === undefined || !withDefault ? undefined : `default ${spec.default}`,
  ].filter((note) => note !== undefined);
  return notes.length === 0 ? spec.description : `${spec.description} (${notes.join("; ")})`;
}

function optionLines(...sections: Section[]): string[] {
  return linesOf(sections.flatMap((section) => specsOf(section)));
}

function linesOf(specs: readonly OptionSpec[]): string[] {
  const width = Math.max(...specs.map((spec) => flagWords(spec).length));
  return specs.map((spec) => `  ${flagWords(spec).padEnd(width)}  ${describe(spec)}`);
}

function commandText(command: Command): string {
  const specs = [...commandSpecs(command), ...specsOf("global")];
  return [`Usage: ${SYNOPSIS[command]}`, "", PURPOSE[command], "", "Options:", ...linesOf(specs)].join("\n");
}

/** Help for one command, or (no command) the overview followed by every command's options. */
export function usageText(version: string, command?: Command): string {
  if (command !== undefined) return `${commandText(command)}\n`;
  const overview = [
    `disagg-proxy ${version}: front door for disaggregated LLM serving, a drop-in for trtllm-serve disaggregated`,
    "",
    "Usage:",
    ...COMMANDS.map((name) => `  ${SYNOPSIS[name]}`),
    "  disagg-proxy --version | --help",
    "",
  ];
  const sections = COMMANDS.map((name) => [`${name}: ${PURPOSE[name]}`, ...optionLines(name), ""].join("\n"));
  return [...overview, ...sections, "Global:", ...optionLines("global"), ""].join("\n");
}
