/**
 * `npm run release`: dist/release/disagg-proxy-<version>-linux-{x64,arm64}.tar.gz, install.sh
 * and SHA256SUMS. Each tarball holds one directory, disagg-proxy-<version>-linux-<arch>/, with
 * the binary, the systemd unit, an example disagg_config.yaml, README.md, docs/ and LICENSE.
 *
 * Reproducible: the same commit builds the same bytes. Bun's compiler is deterministic for the
 * same inputs and outfile name (scripts/build.ts); the tarballs are (tar.ts), with every mtime
 * SOURCE_DATE_EPOCH when set, else the commit's date.
 */

import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { parseArgs } from "node:util";
import pkg from "../../package.json" with { type: "json" };
import { buildBinary, sourceCommit } from "../build.ts";
import { isTarget, TARGETS, type Target } from "./runtime.ts";
import { tarGz } from "./tar.ts";

const ROOT = join(import.meta.dir, "..", "..");
export const RELEASE_DIR = join(ROOT, "dist", "release");
export const INSTALL_SCRIPT = join(ROOT, "deploy", "install.sh");
const DOCS = join(ROOT, "docs");

/** Files every tarball carries beside the binary: name in the archive → source in the repository (all of docs/). */
export const TARBALL_FILES: Readonly<Record<string, string>> = {
  "disagg-proxy@.service": join(ROOT, "deploy", "disagg-proxy@.service"),
  "disagg_config.yaml": join(ROOT, "deploy", "disagg_config.yaml"),
  "README.md": join(ROOT, "README.md"),
  LICENSE: join(ROOT, "LICENSE"),
  ...Object.fromEntries(
    readdirSync(DOCS)
      .toSorted()
      .map((file) => [`docs/${file}`, join(DOCS, file)]),
  ),
};

export function tarballName(version: string, target: Target): string {
  return `disagg-proxy-${version}-linux-${TARGETS[target].arch}.tar.gz`;
}

/** SOURCE_DATE_EPOCH if set, else the commit's time, else 0 (outside git). */
export function sourceDateEpoch(env: Record<string, string | undefined> = process.env): number {
  const fromEnv = env["SOURCE_DATE_EPOCH"];
  if (fromEnv !== undefined && fromEnv !== "") {
    if (!/^\d+$/.test(fromEnv)) throw new Error(`SOURCE_DATE_EPOCH must be whole seconds, got ${fromEnv}`);
    return Number(fromEnv);
  }
  const git = Bun.spawnSync(["git", "log", "-1", "--format=%ct"], { cwd: ROOT, stdout: "pipe", stderr: "ignore" });
  const seconds = git.success ? Number(git.stdout.toString().trim()) : Number.NaN;
  return Number.isInteger(seconds) && seconds > 0 ? seconds : 0;
}

/** The tarball for one target, from a built binary, written into `outDir`; returns its path. */
export function writeTarball(binary: string, target: Target, outDir: string, version: string, mtime: number): string {
  const name = tarballName(version, target);
  const top = name.slice(0, -".tar.gz".length);
  const files = [
    { path: `${top}/disagg-proxy`, data: readFileSync(binary), executable: true },
    ...Object.entries(TARBALL_FILES).map(([file, source]) => ({ path: `${top}/${file}`, data: readFileSync(source), executable: false })),
  ];
  const path = join(outDir, name);
  writeFileSync(path, tarGz(files, mtime));
  return path;
}

/** `sha256sum` format: `<hex>  <name>`, sorted by name. */
export function sha256Sums(paths: readonly string[]): string {
  return paths
    .map((path) => `${createHash("sha256").update(readFileSync(path)).digest("hex")}  ${basename(path)}\n`)
    .toSorted((a, b) => (a.slice(66) < b.slice(66) ? -1 : 1))
    .join("");
}

/** install.sh beside the given tarballs, and SHA256SUMS over all of them. */
export function writeChecksummedRelease(tarballs: readonly string[], outDir: string): void {
  const install = join(outDir, "install.sh");
  writeFileSync(install, readFileSync(INSTALL_SCRIPT));
  chmodSync(install, 0o755);
  writeFileSync(join(outDir, "SHA256SUMS"), sha256Sums([...tarballs, install]));
}

export interface ReleaseOptions {
  readonly outDir: string;
  readonly targets: readonly Target[];
  readonly commit: string;
  readonly mtime: number;
}

/** Builds each target's binary (under dist/build/) and writes the whole release into `outDir`, emptied first. */
export async function buildRelease(options: ReleaseOptions): Promise<string[]> {
  rmSync(options.outDir, { recursive: true, force: true });
  mkdirSync(options.outDir, { recursive: true });
  const tarballs: string[] = [];
  for (const target of options.targets) {
    // Bun embeds the outfile's base name: always `disagg-proxy`, one directory per target.
    const binary = join(ROOT, "dist", "build", target, "disagg-proxy");
    await buildBinary({ entry: join(ROOT, "src", "main.ts"), outfile: binary, target }, options.commit);
    tarballs.push(writeTarball(binary, target, options.outDir, pkg.version, options.mtime));
  }
  writeChecksummedRelease(tarballs, options.outDir);
  return tarballs;
}

export function releaseOptionsFromArgv(argv: readonly string[]): ReleaseOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: { out: { type: "string", default: RELEASE_DIR }, target: { type: "string", multiple: true } },
    strict: true,
  });
  const targets = values.target ?? Object.keys(TARGETS);
  for (const target of targets) {
    if (!isTarget(target)) throw new Error(`unknown target ${target} (expected ${Object.keys(TARGETS).join(", ")})`);
  }
  return { outDir: values.out, targets: targets.filter(isTarget), commit: sourceCommit(), mtime: sourceDateEpoch() };
}

if (import.meta.main) {
  const options = releaseOptionsFromArgv(Bun.argv.slice(2));
  const tarballs = await buildRelease(options);
  process.stdout.write(readFileSync(join(options.outDir, "SHA256SUMS"), "utf8"));
  console.log(`released ${tarballs.length} tarballs (commit ${options.commit}, mtime ${options.mtime}) into ${options.outDir}`);
}
