/**
 * Compiles the proxy's WebAssembly sources into the TypeScript modules that carry them, so the
 * single executable needs no file beside it: `bun scripts/wasm.ts` writes them,
 * `bun scripts/wasm.ts --check` fails when one is not what its source compiles to (a test runs it).
 * wabt (the WebAssembly project's own toolkit) is a development dependency only.
 */

import { readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import wabtInit from "wabt";

/** Each source and the module it compiles into. */
export const WASM_SOURCES = [{ source: "src/json/integer-list.wat", module: "src/json/integer-list-wasm.ts", name: "INTEGER_LIST_WASM" }];

const ROOT = join(import.meta.dir, "..");

/** The module's text for a source: its compiled bytes as base64, with where they came from. */
export async function compiledModule(source: string, name: string): Promise<string> {
  const wabt = await wabtInit();
  const parsed = wabt.parseWat(basename(source), readFileSync(join(ROOT, source), "utf8"), { simd: true });
  try {
    parsed.validate();
    const { buffer } = parsed.toBinary({});
    return [
      `// Compiled from ${basename(source)} by scripts/wasm.ts (wabt): do not edit, run \`bun scripts/wasm.ts\`.`,
      // As oxfmt lays it out, so formatting leaves it as compiled.
      `export const ${name} =`,
      `  "${Buffer.from(buffer).toString("base64")}";`,
      "",
    ].join("\n");
  } finally {
    parsed.destroy();
  }
}

if (import.meta.main) {
  const check = process.argv.includes("--check");
  let stale = 0;
  for (const { source, module, name } of WASM_SOURCES) {
    const text = await compiledModule(source, name);
    const path = join(ROOT, module);
    if (!check) writeFileSync(path, text);
    else if (readFileSync(path, "utf8") !== text) {
      console.error(`${module} is not what ${source} compiles to: run bun scripts/wasm.ts`);
      stale++;
    }
  }
  process.exit(stale === 0 ? 0 : 1);
}
