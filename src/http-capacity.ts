/**
 * Bun's HTTP client runs at most 256 requests at once unless BUN_CONFIG_MAX_HTTP_REQUESTS is
 * in the environment when the runtime starts (it is read once, before any script runs; the
 * largest value it takes is 65535, a larger one silently falls back to 256; measured on Bun
 * 1.4.5). A proxy needs more: so the process replaces itself, same pid, same arguments, with
 * the variable set, before it does anything else. An operator's own value is kept.
 */

const VARIABLE = "BUN_CONFIG_MAX_HTTP_REQUESTS";
const FULL_CAPACITY = "65535";

/** Why the process runs with the runtime's 256 when it does: said once in the start-up warning. */
export type CapacityState = { readonly ready: true } | { readonly ready: false; readonly reason: string };

type Execve = (path: string, args: string[], env: Record<string, string | undefined>) => void;

/**
 * Re-executes the process with the variable set when it is missing; returns only when no
 * re-exec is needed, or when the platform cannot do one. A failed execve (ENOEXEC for a
 * foreign-architecture binary run through qemu-user without binfmt, EACCES, a seccomp filter)
 * leaves this process as it was, so it carries on at the lower cap rather than dying.
 */
export function ensureHttpCapacity(env: NodeJS.ProcessEnv = process.env, execve: Execve | undefined = runtimeExecve()): CapacityState {
  if (env[VARIABLE] !== undefined && env[VARIABLE] !== "") return { ready: true };
  if (typeof execve !== "function") return { ready: false, reason: "this runtime cannot re-execute itself" };
  try {
    execve(process.execPath, [process.execPath, ...process.execArgv, ...ownArguments()], { ...env, [VARIABLE]: FULL_CAPACITY });
  } catch (error) {
    return { ready: false, reason: `re-executing ${process.execPath} failed: ${error instanceof Error ? error.message : String(error)}` };
  }
  // A real execve does not return on success; an injected one may.
  return { ready: false, reason: "re-execution returned" };
}

/** The runtime's execve, bound, where the runtime has one (Bun ≥ 1.2.x; Node ≥ 23.11). */
function runtimeExecve(): Execve | undefined {
  return "execve" in process ? (path, args, env) => process.execve?.(path, args, env) : undefined;
}

/**
 * The words after the executable: a compiled binary's argv[1] is its embedded entry point
 * (`/$bunfs/root/…`), which the binary supplies again itself; from source it is the script.
 */
function ownArguments(): string[] {
  const compiled = Bun.main.startsWith("/$bunfs/") || Bun.main.startsWith("B:/~BUN/");
  return process.argv.slice(compiled ? 2 : 1);
}
