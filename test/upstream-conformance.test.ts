/**
 * docs/upstream-conformance.md names our tests as `file › test name`: each must still exist, or
 * the list a new upstream release is checked against points at nothing.
 */

import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..");
/** `path › name` inside one or two backticks; a literal title may be cut short with `…`, a template one is cited whole. */
const REFERENCE = /(`{1,2})([\w./-]+\.test\.ts) › (.+?)\1/g;

/** A test title as its source writes it: literally, or as a template whose `${…}` parts match anything. */
function titlesOf(source: string): { literal: string[]; patterns: RegExp[] } {
  const literal: string[] = [];
  const patterns: RegExp[] = [];
  for (const match of source.matchAll(
    /(?:test|describe)(?:\.concurrent|\.serial)?(?:\.each\([\s\S]*?\))?\(\s*(["`])((?:\\.|(?!\1)[^\\])*)\1/g,
  )) {
    const [, quote, text = ""] = match;
    if (quote === "`" && text.includes("${")) {
      const escaped = text.split(/\$\{[^}]*\}/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
      patterns.push(new RegExp(`^${escaped.join(".*?")}`));
    } else {
      literal.push(text.replaceAll('\\"', '"'));
    }
  }
  return { literal, patterns };
}

test("every test docs/upstream-conformance.md names exists under that name", async () => {
  const doc = await Bun.file(join(ROOT, "docs", "upstream-conformance.md")).text();
  const references = [...doc.matchAll(REFERENCE)].map(([, , path = "", name = ""]) => ({ path, name }));
  expect(references.length).toBeGreaterThan(100);
  const missing: string[] = [];
  for (const { path, name } of references) {
    const file = join(ROOT, path);
    if (!existsSync(file)) {
      missing.push(`${path} (no such file)`);
      continue;
    }
    const wanted = name.split("…")[0]!.trim().replace(/[,;]$/, "").trim();
    const { literal, patterns } = titlesOf(await Bun.file(file).text());
    const found = literal.some((title) => title.startsWith(wanted)) || patterns.some((pattern) => pattern.test(wanted));
    if (!found) missing.push(`${path} › ${name}`);
  }
  expect(missing).toEqual([]);
});
