/**
 * A Unix socket file left by a coordinator that was killed (SIGKILL, a crash) keeps the path
 * bound: the next coordinator could not listen there. Upstream's does (uvicorn's asyncio
 * create_unix_server removes a socket file at the path before binding); here the file is removed
 * only when nothing accepts on it, so a coordinator still running keeps its socket.
 */

import { lstatSync, rmSync } from "node:fs";
import { connect } from "node:net";

/** How long a connection to the file may take before it counts as answered (a live, busy coordinator). */
const CONNECT_TIMEOUT_MS = 1000;

/** Removes `path` when it is a socket nobody listens on; true when it did. */
export async function removeStaleSocket(path: string): Promise<boolean> {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (stat === undefined || !stat.isSocket()) return false;
  if (!(await refusesConnections(path))) return false;
  rmSync(path, { force: true });
  return true;
}

function refusesConnections(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ path });
    const done = (refused: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(refused);
    };
    const timer = setTimeout(() => done(false), CONNECT_TIMEOUT_MS);
    socket.once("connect", () => done(false));
    socket.once("error", (error: NodeJS.ErrnoException) => done(error.code === "ECONNREFUSED"));
  });
}
