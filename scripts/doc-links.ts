/**
 * The relative links of Markdown documents, checked: each names an existing file and, with a
 * `#anchor`, a heading of that file by GitHub's anchor. Used by test/docs-links.test.ts and the
 * release check (scripts/release/check.ts).
 */

import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";

/** GitHub's anchor for a heading: markup dropped, lower case, punctuation but `-` and `_` dropped, each space a `-`. */
export function slug(heading: string): string {
  const text = heading.replaceAll(/\[([^\]]*)\]\([^)]*\)/g, "$1").replaceAll(/[`*]/g, "");
  return text
    .trim()
    .toLowerCase()
    .replaceAll(/[^\p{L}\p{N}\s_-]/gu, "")
    .replaceAll(" ", "-");
}

/** The document's lines outside fenced code blocks, with inline code spans blanked out. */
function proseLines(markdown: string): string[] {
  const lines: string[] = [];
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    else if (!fenced) lines.push(line.replaceAll(/`[^`]*`/g, (code) => " ".repeat(code.length)));
  }
  return lines;
}

/** Every anchor a document's headings give, numbered as GitHub numbers repeated ones. */
export function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  const fenced = { inside: false };
  for (const line of markdown.split("\n")) {
    if (/^\s*```/.test(line)) fenced.inside = !fenced.inside;
    const heading = fenced.inside ? undefined : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    let name = base;
    for (let n = 1; found.has(name); n++) name = `${base}-${n}`;
    found.add(name);
  }
  return found;
}

/** `[text](target)` and `![alt](target)` targets outside code, as written. */
export function linkTargets(markdown: string): string[] {
  const targets: string[] = [];
  for (const line of proseLines(markdown)) {
    for (const match of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) targets.push(match[1] ?? "");
  }
  return targets;
}

/**
 * The broken relative links of `files` (paths under `root`), as `file: target: why`. A link whose
 * target (relative to `root`) `checked` declines is skipped, as a tarball's links to files it does not ship.
 */
export function brokenLinks(root: string, files: readonly string[], checked: (target: string) => boolean = () => true): string[] {
  const broken: string[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), "utf8");
    for (const target of linkTargets(text)) {
      if (/^[a-z][a-z\d+.-]*:/i.test(target)) continue;
      const [path = "", anchor] = target.split("#", 2);
      const resolved = path === "" ? file : normalize(join(dirname(file), decodeURIComponent(path)));
      if (!checked(resolved)) continue;
      const absolute = join(root, resolved);
      if (resolved.startsWith("..") || !existsSync(absolute)) {
        broken.push(`${file}: ${target}: no such file`);
      } else if (anchor !== undefined && anchor !== "") {
        const isDocument = statSync(absolute).isFile() && resolved.endsWith(".md");
        if (!isDocument || !anchors(readFileSync(absolute, "utf8")).has(anchor)) broken.push(`${file}: ${target}: no such heading`);
      }
    }
  }
  return broken;
}
