import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Scratch {
  /** A new empty directory under the system's temporary directory. */
  dir(prefix: string): string;
  /** Removes every directory made so far (call from afterAll: release tests copy ~110 MB binaries). */
  removeAll(): void;
}

export function scratch(): Scratch {
  const made: string[] = [];
  return {
    dir(prefix) {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      made.push(dir);
      return dir;
    },
    removeAll() {
      for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
    },
  };
}
