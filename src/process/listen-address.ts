/**
 * A listen address and the port: what a listen host stands for, whether a listener on one
 * address takes every connection one on another takes, and whether something already accepts
 * connections there. The take-over (take-over.ts) asks these before this process listens.
 */

import { createConnection, isIP } from "node:net";
import { networkInterfaces } from "node:os";

/** Every address a listen host stands for: an IP literal itself, a name what it resolves to. */
export type ListenAddresses = (host: string) => Promise<readonly string[]>;

export const resolvedAddresses: ListenAddresses = async (host) =>
  isIP(unbracketed(host)) !== 0 ? [unbracketed(host)] : (await Bun.dns.lookup(host)).map((entry) => entry.address);

function unbracketed(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

/**
 * Whether a listener on `next` takes every connection one on `current` takes, so that `current`
 * may stop listening: `::` every IPv6 address, `0.0.0.0` every IPv4 address, any other only its
 * own. `::` is not counted for IPv4: a socket with IPV6_V6ONLY takes none, and /proc's tables
 * show it as a dual-stack one (an impostor so bound got 0.0.0.0's port released).
 */
export function listenCovers(next: readonly string[], current: readonly string[]): boolean {
  const anyV6 = next.includes("::");
  const anyV4 = next.includes("0.0.0.0");
  return current.every((address) => next.includes(address) || (isIP(address) === 6 ? anyV6 : anyV4));
}

/** How long a probe of the port waits for a connection to be accepted. */
const PROBE_TIMEOUT_MS = 1_000;

/**
 * The address at which something already accepts connections on the port, or undefined. With
 * SO_REUSEPORT a second proxy binds the port beside the first whatever the control sockets say,
 * so one whose runtime directory differs (another environment) is caught here, before it listens.
 */
export async function listenerOn(host: string, port: number): Promise<string | undefined> {
  const bare = unbracketed(host);
  const probes =
    bare === "0.0.0.0"
      ? ["127.0.0.1"]
      : bare === "::"
        ? ["::1", "127.0.0.1"]
        : (await resolvedAddresses(host).catch(() => [])).filter(isOwnAddress);
  for (const address of probes)
    if (await accepts(address, port)) return address.includes(":") ? `[${address}]:${port}` : `${address}:${port}`;
  return undefined;
}

/** Only this machine's own addresses are probed: a listen address elsewhere fails to bind, and is no reason to connect out. */
export function isOwnAddress(address: string): boolean {
  if (address === "::1" || address.startsWith("127.")) return true;
  return Object.values(networkInterfaces()).some((entries) => entries?.some((entry) => entry.address === address) === true);
}

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port, timeout: PROBE_TIMEOUT_MS });
    const done = (accepted: boolean): void => {
      socket.destroy();
      resolve(accepted);
    };
    socket.once("connect", () => done(true));
    socket.once("timeout", () => done(false));
    socket.once("error", () => done(false));
  });
}
