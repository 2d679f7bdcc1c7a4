/**
 * Whether the process a release names serves the port as this one does, so that the old process
 * may stop listening (port-release.ts). Anything that can open the control socket can ask, and
 * names any pid it likes; the pid named must be another process of this user, in this network
 * namespace, holding listening sockets on the port that take every connection this process's
 * own take (the same address, or a wildcard covering it). A process listening on 127.0.0.2 or in
 * another namespace serves another socket: releasing to it left 127.0.0.1:PORT refused.
 */

import { readlink, stat } from "node:fs/promises";
import { listenCovers } from "./listen-address.ts";
import { socketsListening, type ListeningSocket } from "./port-listener.ts";

/** What the check reads of a process; /proc by default, replaced in tests. */
export interface ProcessView {
  /** Its sockets listening on the port, among its open files, in its namespace. */
  listening(pid: number, port: number): Promise<readonly ListeningSocket[]>;
  /** Its network namespace (`net:[4026531840]`). */
  netNamespace(pid: number): Promise<string>;
  /** The uid that owns it. */
  owner(pid: number): Promise<number>;
}

export const PROC_VIEW: ProcessView = {
  listening: socketsListening,
  netNamespace: (pid) => readlink(`/proc/${pid}/ns/net`),
  owner: async (pid) => (await stat(`/proc/${pid}`)).uid,
};

export interface SuccessorQuestion {
  /** The pid the release names, if any. */
  readonly pid: number | undefined;
  readonly port: number;
  /** This process (the one serving the port). */
  readonly self: number;
  readonly uid: number;
}

/**
 * Why the port must not be let go to the process a release names, or undefined when it serves
 * every address this process listens on, on the port.
 */
export async function successorRefusal(question: SuccessorQuestion, view: ProcessView = PROC_VIEW): Promise<string | undefined> {
  const { pid, port, self, uid } = question;
  if (pid === undefined) return "no successor listening: the release names no process (pid) to serve the port";
  if (pid === self) return `no successor listening: pid ${pid} is this process`;
  try {
    const [owner, theirNamespace, ourNamespace] = await Promise.all([view.owner(pid), view.netNamespace(pid), view.netNamespace(self)]);
    if (owner !== uid) return `no successor listening: pid ${pid} belongs to uid ${owner}, not to this process's (uid ${uid})`;
    if (theirNamespace !== ourNamespace) {
      return `no successor listening: pid ${pid} is in another network namespace (${theirNamespace}, this process: ${ourNamespace}), where port ${port} is another port`;
    }
    const [theirs, ours] = await Promise.all([view.listening(pid, port), view.listening(self, port)]);
    const held = theirs.filter((socket) => socket.uid === uid);
    if (held.length === 0) return `no successor listening: pid ${pid} does not listen on port ${port}`;
    const uncovered = ours.filter((socket) => !listenCovers(addresses(held), [socket.address]));
    if (uncovered.length === 0) return undefined;
    return (
      `no successor listening: pid ${pid} listens on ${endpoints(held, port)}, which does not take the connections of ` +
      `${endpoints(uncovered, port)} that this process serves`
    );
  } catch (error) {
    return `no successor listening: cannot tell whether pid ${pid} serves port ${port} (${error instanceof Error ? error.message : String(error)})`;
  }
}

function addresses(sockets: readonly ListeningSocket[]): string[] {
  return sockets.map((socket) => socket.address);
}

function endpoints(sockets: readonly ListeningSocket[], port: number): string {
  return [...new Set(addresses(sockets))]
    .map((address) => (address.includes(":") ? `[${address}]:${port}` : `${address}:${port}`))
    .join(", ");
}
