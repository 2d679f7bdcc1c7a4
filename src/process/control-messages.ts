/**
 * What the port's control socket says (control-socket.ts carries it): who holds the port, and
 * the registrations handed over. Both sides read the other's replies as untrusted JSON.
 */

import type { HandedItem } from "../discovery/index.ts";
import { isJsonObject } from "../json/json.ts";

/** Who serves a port, as the control socket's hello says. */
export interface ProcessInfo {
  readonly pid: number;
  readonly version: string;
  /** ISO 8601, UTC. */
  readonly startedAt: string;
  /** The address it listens on (bind_host, else hostname); absent from a process of an earlier release. */
  readonly host?: string;
}

/** Hello and state are answered at once; release after the listener closed. */
export const CONTROL_TIMEOUT_MS = 10_000;

/** The old process's answer to a release it already granted to another process. */
export const ALREADY_RELEASED = "already released";

export function processInfoOf(reply: Record<string, unknown>): ProcessInfo {
  const { pid, version, startedAt, host } = reply;
  if (typeof pid !== "number" || typeof version !== "string" || typeof startedAt !== "string") {
    throw new Error(`the control socket's holder answered ${JSON.stringify(reply).slice(0, 200)}, not a disagg-proxy hello`);
  }
  return typeof host === "string" ? { pid, version, startedAt, host } : { pid, version, startedAt };
}

/** The registrations in a reply; anything not shaped as one is left out. */
export function handedItems(value: unknown): HandedItem[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((item: unknown): HandedItem[] => {
    if (!isJsonObject(item)) return [];
    const { key, value: text, ttlMs, from } = item;
    if (typeof key !== "string" || typeof text !== "string") return [];
    return [{ key, value: text, ttlMs: typeof ttlMs === "number" ? ttlMs : undefined, from: typeof from === "string" ? from : undefined }];
  });
}
