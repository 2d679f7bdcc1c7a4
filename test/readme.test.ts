import { expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { flagTable } from "../scripts/flag-table.ts";
import { OPTIONS } from "../src/cli.ts";
import type { OptionSpec } from "../src/config/cli-options.ts";
import { DEFAULTS } from "../src/config/types.ts";
import { NEWEST_PROTOCOL_VERSION } from "../src/emulator/engine/protocol-generation.ts";

const specs: readonly OptionSpec[] = OPTIONS;

test("the flag table of docs/configuration.md is the one the option table generates", async () => {
  const reference = await Bun.file(`${import.meta.dir}/../docs/configuration.md`).text();
  const start = reference.indexOf("-->", reference.indexOf("<!-- flags:start")) + 3;
  const end = reference.indexOf("<!-- flags:end -->");
  expect(reference.indexOf("<!-- flags:start")).toBeGreaterThan(-1);
  expect(reference.slice(start, end).trim()).toBe(flagTable().trim());
});

test("the README is a front page: at most 30 KB, and it links to each docs/ file", async () => {
  const readme = await Bun.file(`${import.meta.dir}/../README.md`).text();
  expect(new TextEncoder().encode(readme).length).toBeLessThanOrEqual(30_000);
  const documents = readdirSync(`${import.meta.dir}/../docs`).filter((file) => file.endsWith(".md"));
  expect(documents.filter((file) => !readme.includes(`](docs/${file})`))).toEqual([]);
});

test("every numeric flag that is neither required nor a fault names its default", () => {
  const numeric = specs.filter(
    (spec) =>
      (spec.kind === "int" || spec.kind === "number" || spec.kind === "seconds") &&
      spec.required !== true &&
      !spec.description.startsWith("Fault:"),
  );
  expect(numeric.filter((spec) => spec.default === undefined).map((spec) => `${spec.section} --${spec.name}`)).toEqual([]);
});

test("a serve flag's documented default is the one the proxy applies (the option table's default is text only)", () => {
  const applied = DEFAULTS as unknown as Readonly<Record<string, unknown>>;
  const drifted = specs
    .filter((spec) => spec.section === "serve" && (typeof applied[spec.key] === "number" || typeof applied[spec.key] === "string"))
    .map((spec) => {
      const value = applied[spec.key] as number | string;
      return {
        flag: spec.name,
        documented: spec.default,
        applied: spec.kind === "seconds" && typeof value === "number" ? String(value / 1000) : String(value),
      };
    })
    .filter((row) => row.documented !== row.applied);
  expect(drifted).toEqual([]);
});

test("the emulated worker's documented protocol version is the one it plays by default", () => {
  expect(specs.find((spec) => spec.section === "worker" && spec.name === "protocol-version")?.default).toBe(NEWEST_PROTOCOL_VERSION);
});
