/**
 * The Bun runtime a compiled binary for another target is built on.
 *
 * `bun build --compile --target=bun-linux-arm64` on its own downloads
 * `<npm registry>/@oven/bun-linux-aarch64/-/bun-linux-aarch64-<its version>.tgz` (it reads
 * NPM_CONFIG_REGISTRY, not .npmrc) into ~/.bun/install/cache/bun-linux-aarch64-v<version>,
 * measured on Bun 1.4.5. We fetch the same package with npm instead and hand its `bin/bun` to
 * Bun (`--compile-executable-path`), so that the runtime is the exact tarball package-lock.json
 * pins (its sha512 is checked), npm's registry settings and cache apply, and a fresh clone needs
 * nothing but the npm registry.
 */

import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { isJsonObject } from "../../src/json/json.ts";

const ROOT = join(import.meta.dir, "..", "..");

/** The compile targets we ship, and the npm package holding each one's Bun runtime. */
export const TARGETS = {
  "bun-linux-x64": { arch: "x64", runtimePackage: "@oven/bun-linux-x64" },
  "bun-linux-arm64": { arch: "arm64", runtimePackage: "@oven/bun-linux-aarch64" },
} as const;

export type Target = keyof typeof TARGETS;

export function isTarget(name: string): name is Target {
  return Object.hasOwn(TARGETS, name);
}

/** The host's own target, when we ship one for it. */
export function hostTarget(): Target | undefined {
  const name = `bun-${process.platform}-${process.arch}`;
  return isTarget(name) ? name : undefined;
}

interface LockedPackage {
  readonly version: string;
  readonly integrity: string;
}

/** The runtime package's version and sha512 as package-lock.json records them (as `bun`'s optional dependency). */
export function lockedRuntime(target: Target, lockfile = join(ROOT, "package-lock.json")): LockedPackage {
  const lock: unknown = JSON.parse(readFileSync(lockfile, "utf8"));
  const name = TARGETS[target].runtimePackage;
  const packages = isJsonObject(lock) ? lock["packages"] : undefined;
  const entry = isJsonObject(packages) ? packages[`node_modules/${name}`] : undefined;
  const version = isJsonObject(entry) ? entry["version"] : undefined;
  const integrity = isJsonObject(entry) ? entry["integrity"] : undefined;
  if (typeof version !== "string" || typeof integrity !== "string") throw new Error(`${name} is not in package-lock.json`);
  if (version !== Bun.version) {
    throw new Error(`package-lock.json pins ${name}@${version} but Bun ${Bun.version} is running: run npm ci`);
  }
  return { version, integrity };
}

/** `sha512-<base64>` of a file, as npm writes integrity. */
export function integrityOf(path: string): string {
  return `sha512-${createHash("sha512").update(readFileSync(path)).digest("base64")}`;
}

/**
 * Path of the Bun executable for `target`, fetched once through `npm pack` (from npm's cache
 * when npm ci already has it) and kept under node_modules/.cache.
 */
export function runtimeFor(target: Target): string {
  const { runtimePackage } = TARGETS[target];
  const locked = lockedRuntime(target);
  const dir = join(ROOT, "node_modules", ".cache", "bun-runtimes", `${runtimePackage.replace("/", "+")}-${locked.version}`);
  const executable = join(dir, "bun");
  if (existsSync(executable)) return executable;

  const staging = `${dir}.partial`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const pack = Bun.spawnSync(["npm", "pack", "--silent", "--pack-destination", staging, `${runtimePackage}@${locked.version}`], {
    cwd: staging,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (!pack.success) throw new Error(`npm pack ${runtimePackage}@${locked.version} failed: ${pack.stderr.toString()}`);
  const tarball = join(staging, pack.stdout.toString().trim().split("\n").at(-1) ?? "");
  const integrity = integrityOf(tarball);
  if (integrity !== locked.integrity) {
    throw new Error(`${tarball} has ${integrity}; package-lock.json expects ${locked.integrity}`);
  }
  const untar = Bun.spawnSync(["tar", "-xzf", tarball, "-C", staging, "package/bin/bun"], { stderr: "pipe" });
  if (!untar.success) throw new Error(`extracting bin/bun from ${tarball} failed: ${untar.stderr.toString()}`);
  renameSync(join(staging, "package", "bin", "bun"), join(staging, "bun"));
  rmSync(join(staging, "package"), { recursive: true });
  rmSync(tarball);
  rmSync(dir, { recursive: true, force: true });
  renameSync(staging, dir);
  return executable;
}
