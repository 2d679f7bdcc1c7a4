import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { compiledModule, WASM_SOURCES } from "../scripts/wasm.ts";

describe("WebAssembly sources", () => {
  test("each module carries what its source compiles to (bun scripts/wasm.ts writes them)", async () => {
    for (const { source, module, name } of WASM_SOURCES)
      expect(readFileSync(join(import.meta.dir, "..", module), "utf8")).toBe(await compiledModule(source, name));
  });
});
