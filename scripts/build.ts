/**
 * Builds the single executable: `bun scripts/build.ts [--entry src/main.ts] [--outfile dist/disagg-proxy]`.
 * Same as `bun build <entry> --compile --minify --sourcemap --bytecode --format=esm
 * --no-compile-autoload-dotenv --no-compile-autoload-bunfig --define BUILD_VERSION=… --outfile …`,
 * through Bun.build so errors come back as data instead of shell text.
 */

import { parseArgs } from "node:util";
import pkg from "../package.json" with { type: "json" };

export interface BuildOptions {
  readonly entry: string;
  readonly outfile: string;
}

/** `<package version>+<git short sha>`, or `+dev` outside a git checkout (or before the first commit). */
export function buildVersion(): string {
  const git = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { stdout: "pipe", stderr: "ignore" });
  const sha = git.success ? git.stdout.toString().trim() : "";
  return `${pkg.version}+${sha === "" ? "dev" : sha}`;
}

export async function buildBinary(options: BuildOptions, version = buildVersion()): Promise<void> {
  const result = await Bun.build({
    entrypoints: [options.entry],
    compile: {
      outfile: options.outfile,
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
    define: { BUILD_VERSION: JSON.stringify(version) },
    throw: false,
  });
  if (!result.success) {
    throw new AggregateError(result.logs, `Build of ${options.entry} failed:\n${result.logs.map(String).join("\n")}`);
  }
}

function optionsFromArgv(argv: readonly string[]): BuildOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: { entry: { type: "string", default: "src/main.ts" }, outfile: { type: "string", default: "dist/disagg-proxy" } },
    strict: true,
  });
  return { entry: values.entry, outfile: values.outfile };
}

if (import.meta.main) {
  const options = optionsFromArgv(Bun.argv.slice(2));
  const version = buildVersion();
  await buildBinary(options, version);
  console.log(`built ${options.outfile} (${version})`);
}
