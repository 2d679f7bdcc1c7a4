/**
 * Every host name the proxy must reach or bind at start-up, and the one check that they resolve.
 * A name that does not resolve stops start-up with one clear line and exit code 2, whichever
 * part of the configuration names it (a typo in an etcd URI used to surface as a raw
 * getaddrinfo error and exit 1, a listen host as another message). Worker addresses are left
 * out: workers may come up, and their names appear, after the proxy; they are polled.
 */

import { isIP } from "node:net";
import { withDeadline } from "../timers.ts";
import type { ProxyConfig } from "./types.ts";

export interface NamedHost {
  readonly host: string;
  /** The setting that names it, as the operator wrote it. */
  readonly namedBy: string;
}

export function namedHosts(config: Pick<ProxyConfig, "host" | "bindHost" | "discovery">): NamedHost[] {
  const hosts: NamedHost[] = [
    { host: config.bindHost ?? config.host, namedBy: config.bindHost === undefined ? "hostname (--host)" : "bind_host (--bind-host)" },
  ];
  const discovery = config.discovery;
  if (discovery !== undefined && (discovery.kind === "metadata" || discovery.storage === "etcd")) {
    const namedBy = discovery.kind === "metadata" ? "the metadata server (-m)" : "disagg_cluster.cluster_uri";
    for (const endpoint of discovery.endpoint.split(",")) hosts.push({ host: new URL(endpoint).hostname.replace(/^\[|\]$/g, ""), namedBy });
  }
  return hosts.filter((named) => isIP(named.host) === 0);
}

/** Resolves a name, or rejects; the caller bounds how long it may take. */
export type Lookup = (host: string) => Promise<unknown>;

/** The first named host that does not resolve, as the one line start-up stops with; undefined when all do. */
export async function unresolvedName(
  config: Pick<ProxyConfig, "host" | "bindHost" | "discovery">,
  lookup: Lookup,
  timeoutMs: number,
): Promise<string | undefined> {
  for (const { host, namedBy } of namedHosts(config)) {
    const reason = await resolves(host, lookup, timeoutMs);
    if (reason !== undefined) return `cannot resolve ${host} (named by ${namedBy}): ${reason}`;
  }
  return undefined;
}

async function resolves(host: string, lookup: Lookup, timeoutMs: number): Promise<string | undefined> {
  const reason = await withDeadline(
    lookup(host).then(() => undefined, reasonOf),
    timeoutMs,
  );
  return reason === "late" ? `no answer within ${timeoutMs / 1000} s` : reason;
}

function reasonOf(error: unknown): string {
  const code = typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : undefined;
  return code === undefined ? "the name does not resolve" : `the name does not resolve (${code.replace(/^DNS_/, "")})`;
}
