/**
 * Every relative link of README.md, deploy/README.md and docs/*.md names a file that exists and,
 * with an anchor, one of its headings (scripts/doc-links.ts, which the release check runs too).
 */

import { afterAll, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { anchors, brokenLinks, slug } from "../scripts/doc-links.ts";
import { scratch } from "./support/scratch.ts";

const ROOT = join(import.meta.dir, "..");
const temp = scratch();
afterAll(() => temp.removeAll());

const documents = [
  "README.md",
  "deploy/README.md",
  ...readdirSync(join(ROOT, "docs"), { encoding: "utf8" })
    .filter((file) => file.endsWith(".md"))
    .map((file) => `docs/${file}`),
];

test("every relative link in README.md and docs/ names an existing file and heading", () => {
  expect(brokenLinks(ROOT, documents)).toEqual([]);
});

test("each docs/ file opens with its title and a line saying what it covers", () => {
  const untold = documents
    .filter((file) => file.startsWith("docs/"))
    .filter((file) => {
      const [title = "", blank, first = ""] = readFileSync(join(ROOT, file), "utf8").split("\n");
      return !title.startsWith("# ") || blank !== "" || first.trim() === "";
    });
  expect(untold).toEqual([]);
});

test("a link to a missing file, a missing heading or out of the tree is reported; code is not read", () => {
  const root = temp.dir("disagg-proxy-links-");
  mkdirSync(join(root, "docs"));
  writeFileSync(join(root, "docs", "b.md"), "# B\n\n## Two words `code`\n\n## Two words code\n");
  const a = [
    "# A",
    "[ok](b.md#two-words-code) [ok too](b.md#two-words-code-1) [self](#a) [web](https://example.com/x#y)",
    "[no file](c.md) [no heading](b.md#three) [outside](../../etc/passwd)",
    "`[in code](d.md)`",
    "```",
    "[in a block](e.md)",
    "```",
  ].join("\n");
  writeFileSync(join(root, "docs", "a.md"), a);
  expect(brokenLinks(root, ["docs/a.md"])).toEqual([
    "docs/a.md: c.md: no such file",
    "docs/a.md: b.md#three: no such heading",
    "docs/a.md: ../../etc/passwd: no such file",
  ]);
  expect(brokenLinks(root, ["docs/a.md"], (target) => target === "docs/b.md")).toEqual(["docs/a.md: b.md#three: no such heading"]);
});

test("anchors are GitHub's: markup and punctuation dropped, spaces to hyphens, repeats numbered", () => {
  expect(slug("Several event loops (`num_workers`)")).toBe("several-event-loops-num_workers");
  expect(slug("Memory of accepted bodies: at most 4× their size")).toBe("memory-of-accepted-bodies-at-most-4-their-size");
  expect(slug("The proxy's own reads of a [worker](x.md)")).toBe("the-proxys-own-reads-of-a-worker");
  expect([...anchors("# A\n## A\n```\n# not a heading\n```\n## A\n")]).toEqual(["a", "a-1", "a-2"]);
});
