import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";

/**
 * The arrows of docs/architecture.md, checked: every import in src/ (type-only, re-exports and
 * dynamic imports included; tests aside) points to a strictly lower rank, files of one folder
 * form no cycle, and the emulator imports and is imported only as the table says. The rank
 * table is read from the document itself, so the two cannot disagree. No exceptions.
 */

const ROOT = join(import.meta.dir, "..");
const SRC = join(ROOT, "src");
const DOC = readFileSync(join(ROOT, "docs/architecture.md"), "utf8");

interface Table {
  readonly rank: ReadonlyMap<string, number>;
  readonly apart: ReadonlyMap<string, { readonly imports: readonly string[]; readonly importers: readonly string[] }>;
}

/** `| rank | `names` | text |` rows; folders end in "/". */
function readTable(doc: string): Table {
  const rank = new Map<string, number>();
  const apart = new Map<string, { imports: string[]; importers: string[] }>();
  for (const line of doc.split("\n")) {
    const cells = line.split("|").map((cell) => cell.trim());
    if (cells.length < 5) continue;
    const [, level, names, text] = cells;
    if (level === undefined || names === undefined || text === undefined || !/^(\d+|apart)$/.test(level)) continue;
    for (const name of ticked(names)) {
      if (level !== "apart") {
        rank.set(unitName(name), Number(level));
        continue;
      }
      const imports = ticked(/imports only ([^;]*)/.exec(text)?.[1] ?? "").map(unitName);
      const importers = ticked(/imported only by ([^(;]*)/.exec(text)?.[1] ?? "").map(unitName);
      apart.set(unitName(name), { imports, importers });
    }
  }
  return { rank, apart };
}

function ticked(text: string): string[] {
  return [...text.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? "");
}

function unitName(name: string): string {
  return name.replace(/\/$/, "");
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") && !path.endsWith(".test.ts") ? [path] : [];
  });
}

/** The folder under src/, or the file for top-level files. */
function unitOf(path: string): string {
  return relative(SRC, path).split("/")[0] ?? "";
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*"([^"]+)"|\bimport\(\s*"([^"]+)"\s*\)/g;

function importsOf(path: string): string[] {
  const text = readFileSync(path, "utf8");
  const targets: string[] = [];
  for (const match of text.matchAll(IMPORT)) {
    const spec = match[1] ?? match[2];
    if (spec === undefined || !spec.startsWith(".")) continue;
    const target = normalize(join(dirname(path), spec));
    if (target.startsWith(SRC + "/")) targets.push(target);
  }
  return targets;
}

const table = readTable(DOC);
const files = sourceFiles(SRC);
const edges = files.flatMap((from) => importsOf(from).map((to) => ({ from, to })));
const show = (path: string): string => relative(ROOT, path);

describe("layering (docs/architecture.md)", () => {
  test("the table names every folder and top-level file of src/, and the check sees imports", () => {
    const units = new Set(files.map(unitOf));
    const named = new Set([...table.rank.keys(), ...table.apart.keys()]);
    expect([...units].filter((unit) => !named.has(unit)).toSorted()).toEqual([]);
    expect([...named].filter((unit) => !units.has(unit)).toSorted()).toEqual([]);
    // Guards the parser itself: a type-only import, a re-export and a dynamic import are seen.
    const kinds = edges.map(({ from, to }) => `${show(from)} -> ${show(to)}`);
    expect(kinds).toContain("src/routes/deps.ts -> src/request/context.ts");
    expect(kinds).toContain("src/emulator/index.ts -> src/emulator/worker.ts");
    expect(kinds).toContain("src/main.ts -> src/emulator/index.ts");
  });

  test("every import points to a strictly lower rank (type-only imports included)", () => {
    const upward = edges.flatMap(({ from, to }) => {
      const [a, b] = [unitOf(from), unitOf(to)];
      if (a === b || table.apart.has(a) || table.apart.has(b)) return [];
      const [ra, rb] = [table.rank.get(a), table.rank.get(b)];
      return ra !== undefined && rb !== undefined && rb < ra ? [] : [`${show(from)} (${ra}) -> ${show(to)} (${rb})`];
    });
    expect(upward).toEqual([]);
  });

  test("the emulator imports only the shared helpers, and only main.ts and demo.ts import it", () => {
    const wrong = edges.flatMap(({ from, to }) => {
      const [a, b] = [unitOf(from), unitOf(to)];
      if (a === b) return [];
      const out = table.apart.get(a);
      if (out !== undefined && !out.imports.includes(b)) return [`${show(from)} -> ${show(to)}`];
      const into = table.apart.get(b);
      if (into !== undefined && !into.importers.includes(a)) return [`${show(from)} -> ${show(to)}`];
      return [];
    });
    expect(table.apart.size).toBeGreaterThan(0);
    expect(wrong).toEqual([]);
  });

  test("no file-level import cycle", () => {
    const next = new Map<string, string[]>();
    for (const { from, to } of edges) next.set(from, [...(next.get(from) ?? []), to]);
    const state = new Map<string, "open" | "done">();
    const cycles: string[] = [];
    const visit = (file: string, path: string[]): void => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        cycles.push([...path.slice(path.indexOf(file)), file].map(show).join(" -> "));
        return;
      }
      state.set(file, "open");
      for (const to of next.get(file) ?? []) visit(to, [...path, file]);
      state.set(file, "done");
    };
    for (const file of files) visit(file, []);
    expect(cycles).toEqual([]);
  });
});
