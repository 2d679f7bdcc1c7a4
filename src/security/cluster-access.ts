/**
 * Who may use the HTTP cluster storage. Upstream's store is open unless an api_key is set,
 * then it wants `Authorization: Bearer <key>` (tensorrt_llm/serve/cluster_storage.py
 * @ 057d4a79, 403 "Invalid API key"); its client refuses to send a key over plain HTTP to a
 * non-loopback host. Here it is never an open door: without a key only loopback and the
 * networks the operator names may register; with a key, the key is required (and the named
 * networks, when given, still bound where it may come from).
 */

import { timingSafeEqual } from "node:crypto";
import { addressBytes, inNetwork, parseNetwork, type Network } from "./networks.ts";

export interface ClusterAccessOptions {
  readonly allowFrom: readonly string[];
  readonly key: string | undefined;
}

export type AccessVerdict = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

const LOOPBACK: readonly Network[] = [network("127.0.0.0/8"), network("::1/128")];

/** Networks reach here checked (config/load.ts refuses a bad one at start-up). */
function network(text: string): Network {
  const parsed = parseNetwork(text);
  if (parsed === undefined) throw new TypeError(`not a network: ${JSON.stringify(text)}`);
  return parsed;
}

/** A refused address is logged at most this often, so a scanner cannot flood the log. */
const REFUSAL_LOG_INTERVAL_MS = 60_000;
/** Addresses remembered for that; beyond it the memory starts over. */
const MAX_REMEMBERED_REFUSALS = 1024;

export class ClusterAccess {
  readonly #allowFrom: readonly Network[];
  readonly #key: Uint8Array | undefined;
  readonly #lastLogged = new Map<string, number>();

  constructor(options: ClusterAccessOptions) {
    this.#allowFrom = options.allowFrom.map(network);
    this.#key = options.key === undefined ? undefined : new TextEncoder().encode(options.key);
  }

  /** The rule in force, for the start-up log. */
  describe(): string {
    const networks = ["loopback", ...this.#allowFrom.map((n) => n.text)].join(", ");
    if (this.#key === undefined) return `registrations accepted from ${networks} only (no cluster key)`;
    if (this.#allowFrom.length === 0) return "registrations need the cluster key as a Bearer token, from any address";
    return `registrations need the cluster key as a Bearer token, from ${networks}`;
  }

  /** Whether a refusal from this address should be logged now (at most once a minute per address). */
  shouldLogRefusal(address: string, now: number = performance.now()): boolean {
    const last = this.#lastLogged.get(address);
    if (last !== undefined && now - last < REFUSAL_LOG_INTERVAL_MS) return false;
    if (this.#lastLogged.size >= MAX_REMEMBERED_REFUSALS) this.#lastLogged.clear();
    this.#lastLogged.set(address, now);
    return true;
  }

  check(remoteAddress: string | undefined, authorization: string | null): AccessVerdict {
    const address = remoteAddress === undefined ? undefined : addressBytes(remoteAddress);
    const fromLoopback = address !== undefined && LOOPBACK.some((n) => inNetwork(n, address));
    const fromAllowed = address !== undefined && this.#allowFrom.some((n) => inNetwork(n, address));
    if (this.#key === undefined) {
      return fromLoopback || fromAllowed
        ? { allowed: true }
        : { allowed: false, reason: "address not allowed (loopback and --cluster-allow-from only)" };
    }
    if (this.#allowFrom.length > 0 && !fromLoopback && !fromAllowed)
      return { allowed: false, reason: "address not allowed by --cluster-allow-from" };
    const given = /^Bearer\s+(.+)$/i.exec(authorization ?? "")?.[1]?.trim();
    if (given === undefined) return { allowed: false, reason: "no Bearer token" };
    const bytes = new TextEncoder().encode(given);
    const same = bytes.length === this.#key.length && timingSafeEqual(bytes, this.#key);
    return same ? { allowed: true } : { allowed: false, reason: "Invalid API key" };
  }
}
