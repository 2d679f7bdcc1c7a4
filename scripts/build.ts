/**
 * Builds the single executable: `bun scripts/build.ts [--entry src/main.ts] [--outfile dist/disagg-proxy]
 * [--target bun-linux-x64|bun-linux-arm64]`.
 * Same as `bun build <entry> --compile --minify --sourcemap --bytecode --format=esm
 * --no-compile-autoload-dotenv --no-compile-autoload-bunfig --define BUILD_COMMIT=… --define BUILD_TARGET=…
 * [--target … --compile-executable-path …] --outfile …`, through Bun.build so errors come back as
 * data instead of shell text.
 *
 * Same inputs give the same bytes (measured on Bun 1.4.5, x64 and arm64): the one thing that
 * varies is the outfile's base name, which Bun embeds (`/$bunfs/root/<name>`), so release
 * builds always name it `disagg-proxy`.
 */

import { parseArgs } from "node:util";
import { hostTarget, isTarget, runtimeFor, TARGETS, type Target } from "./release/runtime.ts";

export interface BuildOptions {
  readonly entry: string;
  readonly outfile: string;
  /** This machine's own target when absent. */
  readonly target?: Target;
}

/** `git rev-parse --short=12 HEAD`, `-dirty` when tracked files differ from it; `unknown` outside git. */
export function sourceCommit(cwd = import.meta.dir): string {
  const git = (...args: string[]): string | undefined => {
    const run = Bun.spawnSync(["git", ...args], { cwd, stdout: "pipe", stderr: "ignore" });
    return run.success ? run.stdout.toString().trim() : undefined;
  };
  const sha = git("rev-parse", "--short=12", "HEAD");
  if (sha === undefined || sha === "") return "unknown";
  const changes = git("status", "--porcelain", "--untracked-files=no");
  return changes === "" ? sha : `${sha}-dirty`;
}

export async function buildBinary(options: BuildOptions, commit = sourceCommit()): Promise<void> {
  const target =
    options.target ??
    hostTarget() ??
    fail(`no target for ${process.platform}-${process.arch}: pass one of ${Object.keys(TARGETS).join(", ")}`);
  const result = await Bun.build({
    entrypoints: [options.entry],
    compile: {
      outfile: options.outfile,
      target,
      // Another target's runtime comes from the npm package package-lock.json pins (runtime.ts).
      ...(target === hostTarget() ? {} : { executablePath: runtimeFor(target) }),
      // A stray .env or bunfig.toml in the directory the proxy is started from must not
      // silently change its behaviour.
      autoloadDotenv: false,
      autoloadBunfig: false,
    },
    minify: true,
    // Embedded in the binary, so stack traces name src/ files and lines.
    sourcemap: "linked",
    bytecode: true,
    // --bytecode without esm fails on top-level await (style.md §3.11).
    format: "esm",
    define: { BUILD_COMMIT: JSON.stringify(commit), BUILD_TARGET: JSON.stringify(target) },
    throw: false,
  });
  if (!result.success) {
    throw new AggregateError(result.logs, `Build of ${options.entry} failed:\n${result.logs.map(String).join("\n")}`);
  }
}

function fail(message: string): never {
  throw new Error(message);
}

function optionsFromArgv(argv: readonly string[]): BuildOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      entry: { type: "string", default: "src/main.ts" },
      outfile: { type: "string", default: "dist/disagg-proxy" },
      target: { type: "string" },
    },
    strict: true,
  });
  const target = values.target;
  if (target !== undefined && !isTarget(target)) fail(`--target must be one of ${Object.keys(TARGETS).join(", ")}`);
  return { entry: values.entry, outfile: values.outfile, ...(target === undefined ? {} : { target }) };
}

if (import.meta.main) {
  const options = optionsFromArgv(Bun.argv.slice(2));
  const commit = sourceCommit();
  await buildBinary(options, commit);
  console.log(`built ${options.outfile} (${options.target ?? hostTarget()}, commit ${commit})`);
}
