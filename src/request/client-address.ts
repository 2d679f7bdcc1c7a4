/**
 * Who sent a request, for its log line: the peer's address, or, when the peer is one of the
 * --trusted-proxy networks, the address it forwarded (--client-address-header: X-Forwarded-For,
 * read right to left past every trusted hop as nginx's real_ip_recursive does, or a header of
 * one address); and the client's User-Agent.
 */

import { addressBytes, inNetwork, parseNetwork, type Network } from "../security/networks.ts";

/** An X-Forwarded-For longer than this is not read (its hops beyond are a client's word anyway). */
const MAX_FORWARDED_CHARS = 4096;
/** A User-Agent is logged up to this many characters. */
const MAX_USER_AGENT_CHARS = 256;

export interface ClientFacts {
  /** The client's address (IPv4-mapped IPv6 shown as IPv4); undefined when the runtime gave none. */
  readonly address: string | undefined;
  readonly userAgent: string | undefined;
}

/**
 * The networks a forwarding proxy may be in (--trusted-proxy), given as CIDRs or addresses
 * (checked at start-up), and the header it names the client in (default x-forwarded-for).
 */
export type ClientSettings = { readonly trustedProxies: readonly string[]; readonly clientAddressHeader: string };

/** Where a request's peer address is looked up (its connection: an object, not a closure held per request). */
export interface PeerSource {
  peer(): string | undefined;
}

/** The requests of one event loop and the peer of each (looked up only when asked, while the request lives). */
export class Clients {
  readonly #trusted: readonly Network[];
  readonly #header: string;
  readonly #peers = new WeakMap<Request, PeerSource>();

  constructor(settings: ClientSettings) {
    this.#trusted = settings.trustedProxies.flatMap((text) => parseNetwork(text) ?? []);
    this.#header = settings.clientAddressHeader;
  }

  /** The front door notes each request's connection (server/dispatch.ts). */
  note(request: Request, connection: PeerSource): void {
    this.#peers.set(request, connection);
  }

  of(request: Request): ClientFacts {
    const peer = this.#peers.get(request)?.peer();
    const userAgent = request.headers.get("user-agent")?.slice(0, MAX_USER_AGENT_CHARS) ?? undefined;
    // The forwarded header is read only when some proxy is trusted to set it.
    const forwarded = this.#trusted.length === 0 ? null : request.headers.get(this.#header);
    return { address: clientAddressOf(peer, forwarded, this.#trusted), userAgent };
  }
}

/** The client's address: `peer` unless it is a trusted proxy; then the right-most forwarded hop that is not one. */
export function clientAddressOf(peer: string | undefined, forwardedFor: string | null, trusted: readonly Network[]): string | undefined {
  let address = peer === undefined ? undefined : shown(peer);
  if (address === undefined || trusted.length === 0 || forwardedFor === null || forwardedFor.length > MAX_FORWARDED_CHARS) return address;
  const hops = forwardedFor.split(",").map((hop) => hop.trim());
  while (isTrusted(address, trusted)) {
    const hop = hops.pop();
    // A hop that is no address ends the walk: what the last trusted proxy saw is kept.
    if (hop === undefined || addressBytes(hop) === undefined) return address;
    address = shown(hop);
  }
  return address;
}

function isTrusted(address: string, trusted: readonly Network[]): boolean {
  const bytes = addressBytes(address);
  return bytes !== undefined && trusted.some((network) => inNetwork(network, bytes));
}

/** ::ffff:10.1.2.3 (an IPv4 peer on a dual-stack socket) as 10.1.2.3. */
function shown(address: string): string {
  if (!address.startsWith("::")) return address;
  return address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, "$1");
}
