/**
 * A setting the runtime reads once, from the environment, before any script runs: the process
 * replaces itself (same pid, same arguments) with it set before it does anything else. An
 * operator's own value is kept.
 *
 * - BUN_CONFIG_MAX_HTTP_REQUESTS: Bun's HTTP client (fetch: https: workers, etcd, the proxy's
 *   own reads) runs at most 256 requests at once without it (the largest value it takes is
 *   65535, a larger one silently falls back to 256; Bun 1.4.5).
 *
 * MIMALLOC_PURGE_DELAY is left to the runtime (100 ms) since issue #37: with the proxy's own
 * worker client, never giving freed pages back (-1) no longer saved CPU (agent-sized requests
 * 1.03x, chat 0.98x against it, bench/compare.ts), while it kept every transient peak resident
 * (the chaos soak ended at 101–118 MiB instead of 88–90). docs/performance.md#capacity.
 */

const CAP = "BUN_CONFIG_MAX_HTTP_REQUESTS";
const START_UP_ENVIRONMENT: Readonly<Record<string, string>> = { [CAP]: "65535" };

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
  const missing = Object.entries(START_UP_ENVIRONMENT).filter(([name]) => env[name] === undefined || env[name] === "");
  // Without the allocator's setting the process only runs slower: the state speaks of the cap.
  const state = (reason: string): CapacityState => (missing.some(([name]) => name === CAP) ? { ready: false, reason } : { ready: true });
  if (missing.length === 0) return { ready: true };
  if (typeof execve !== "function") return state("this runtime cannot re-execute itself");
  try {
    execve(process.execPath, [process.execPath, ...process.execArgv, ...ownArguments()], { ...env, ...Object.fromEntries(missing) });
  } catch (error) {
    return state(`re-executing ${process.execPath} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  // A real execve does not return on success; an injected one may.
  return state("re-execution returned");
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
