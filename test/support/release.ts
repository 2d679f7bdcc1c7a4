/**
 * A release for this machine's target only, made from the freshly built binary
 * (test/e2e/binary-harness.ts) with the same code as `npm run release`, in dist/test-release/:
 * its tarball, install.sh and SHA256SUMS. Made once for a given binary and release code, however
 * many test processes ask (compressing the ~110 MB binary takes ~20 s on a loaded 2-core
 * machine). Read-only for the tests that use it.
 */

import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { sourceDateEpoch, tarballName, writeChecksummedRelease, writeTarball } from "../../scripts/release/release.ts";
import { hostTarget, type Target } from "../../scripts/release/runtime.ts";
import { BINARY, ensureBinary } from "../e2e/binary-harness.ts";
import { inputsKey, madeOnce } from "./built-once.ts";

const ROOT = join(import.meta.dir, "..", "..");
const DIR = join(ROOT, "dist", "test-release");
/** What goes into the release besides the binary, and the code that makes it. */
const INPUTS = ["scripts/release", "deploy", "README.md", "docs", "LICENSE", "package.json"];

export interface HostRelease {
  readonly dir: string;
  readonly tarball: string;
  readonly target: Target;
}

export async function hostRelease(): Promise<HostRelease> {
  await ensureBinary();
  const target = hostTarget();
  if (target === undefined) throw new Error(`no release target for ${process.platform}-${process.arch}`);
  const epoch = sourceDateEpoch();
  // The binary's own stamp names what it was built from.
  const key = inputsKey(ROOT, INPUTS, [readFileSync(`${BINARY}.inputs`, "utf8"), String(epoch)]);
  await madeOnce({
    lock: `${DIR}.lock`,
    stamp: `${DIR}.inputs`,
    key,
    timeoutMs: 180_000,
    async make() {
      const building = join(ROOT, "dist", `.test-release-${process.pid}`);
      rmSync(building, { recursive: true, force: true });
      mkdirSync(building, { recursive: true });
      writeChecksummedRelease([writeTarball(BINARY, target, building, pkg.version, epoch)], building);
      rmSync(DIR, { recursive: true, force: true });
      renameSync(building, DIR);
    },
  });
  return { dir: DIR, tarball: join(DIR, tarballName(pkg.version, target)), target };
}

/**
 * A release made by the same code around a two-line shell script standing in for the ~110 MB
 * binary, into `dir`: for install.sh's checks and steps, which handle the binary as bytes (it
 * only runs `--version` to show it). Installing it takes milliseconds instead of seconds.
 */
export function standInRelease(dir: string): HostRelease {
  const target = hostTarget();
  if (target === undefined) throw new Error(`no release target for ${process.platform}-${process.arch}`);
  const binary = join(dir, "stand-in");
  writeFileSync(binary, `#!/bin/sh\necho "disagg-proxy ${pkg.version} (a stand-in for the binary)"\n`, { mode: 0o755 });
  const out = join(dir, "release");
  mkdirSync(out);
  const tarball = writeTarball(binary, target, out, pkg.version, sourceDateEpoch());
  writeChecksummedRelease([tarball], out);
  return { dir: out, tarball, target };
}
