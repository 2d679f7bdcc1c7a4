/**
 * A release for this machine's target only, made once per test run from the freshly built
 * binary (test/e2e/binary-harness.ts) with the same code as `npm run release`, in a temporary
 * directory: its tarball, install.sh and SHA256SUMS.
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { sourceDateEpoch, writeChecksummedRelease, writeTarball } from "../../scripts/release/release.ts";
import { hostTarget, type Target } from "../../scripts/release/runtime.ts";
import { BINARY, ensureBinary } from "../e2e/binary-harness.ts";

export interface HostRelease {
  readonly dir: string;
  readonly tarball: string;
  readonly target: Target;
}

let made: Promise<HostRelease> | undefined;

export function hostRelease(): Promise<HostRelease> {
  made ??= (async () => {
    await ensureBinary();
    const target = hostTarget();
    if (target === undefined) throw new Error(`no release target for ${process.platform}-${process.arch}`);
    const dir = mkdtempSync(join(tmpdir(), "disagg-proxy-host-release-"));
    // Shared by several test files: gone when the test run ends.
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    const tarball = writeTarball(BINARY, target, dir, pkg.version, sourceDateEpoch());
    writeChecksummedRelease([tarball], dir);
    return { dir, tarball, target };
  })();
  return made;
}
