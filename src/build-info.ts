/**
 * What this executable is: the package version, and, stamped in by scripts/build.ts through
 * `--define`, the commit and the target it was built for. Run from source, it says so.
 */

import pkg from "../package.json" with { type: "json" };

/** Injected by scripts/build.ts; absent when running from source. */
declare const BUILD_COMMIT: string | undefined;
declare const BUILD_TARGET: string | undefined;

export const VERSION: string = pkg.version;

export interface BuildInfo {
  readonly version: string;
  /** The git commit the binary was built from (with `-dirty` for uncommitted changes); undefined from source. */
  readonly commit: string | undefined;
  /** Bun's compile target, e.g. `bun-linux-arm64`; undefined from source. */
  readonly target: string | undefined;
  /** The Bun runtime actually running (the one embedded in a compiled binary). */
  readonly bun: string;
}

export function buildInfo(): BuildInfo {
  return {
    version: VERSION,
    commit: typeof BUILD_COMMIT === "string" ? BUILD_COMMIT : undefined,
    target: typeof BUILD_TARGET === "string" ? BUILD_TARGET : undefined,
    bun: Bun.version,
  };
}

/** `--version`: one line, the version first, so scripts can take the second word. */
export function versionLine(info: BuildInfo = buildInfo()): string {
  const origin = info.commit === undefined ? "from source" : `commit ${info.commit}`;
  const target = info.target ?? `${process.platform}-${process.arch}`;
  return `disagg-proxy ${info.version} (${origin}, bun ${info.bun}, ${target})`;
}
