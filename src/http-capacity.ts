/**
 * Bun's HTTP client runs at most 256 requests at once unless BUN_CONFIG_MAX_HTTP_REQUESTS is
 * in the environment when the runtime starts (it is read once, before any script runs; the
 * largest value it takes is 65535, a larger one silently falls back to 256; measured on Bun
 * 1.4.5). A proxy needs more: so the process replaces itself, same pid, same arguments, with
 * the variable set, before it does anything else. An operator's own value is kept.
 */

const VARIABLE = "BUN_CONFIG_MAX_HTTP_REQUESTS";
const FULL_CAPACITY = "65535";

export type CapacityState = "ready" | "unavailable";

/**
 * Re-executes the process with the variable set when it is missing; returns only when no
 * re-exec is needed ("ready") or the platform cannot do one ("unavailable").
 */
export function ensureHttpCapacity(env: NodeJS.ProcessEnv = process.env): CapacityState {
  if (env[VARIABLE] !== undefined && env[VARIABLE] !== "") return "ready";
  if (typeof process.execve !== "function") return "unavailable";
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...ownArguments()], { ...env, [VARIABLE]: FULL_CAPACITY });
  // execve does not return on success.
  return "unavailable";
}

/**
 * The words after the executable: a compiled binary's argv[1] is its embedded entry point
 * (`/$bunfs/root/…`), which the binary supplies again itself; from source it is the script.
 */
function ownArguments(): string[] {
  const compiled = Bun.main.startsWith("/$bunfs/") || Bun.main.startsWith("B:/~BUN/");
  return process.argv.slice(compiled ? 2 : 1);
}
