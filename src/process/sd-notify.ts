/**
 * sd_notify(3) for `Type=notify` units: one datagram to $NOTIFY_SOCKET. Bun has no Unix
 * datagram socket, so the three libc calls go through bun:ffi; `systemd-notify` would send from
 * a short-lived child, which systemd may fail to attribute to the unit once it has exited.
 * Without $NOTIFY_SOCKET (not under systemd) it does nothing.
 */

import { dlopen, FFIType, ptr } from "bun:ffi";
import type { Logger } from "../observability/logger.ts";

const AF_UNIX = 1;
const SOCK_DGRAM = 2;
const SOCK_CLOEXEC = 0o2000000;
/** sizeof(struct sockaddr_un): a 2-byte family and 108 bytes of path. */
const SOCKADDR_UN_BYTES = 110;

/** True when the message was sent; false without $NOTIFY_SOCKET. Throws when sending failed. */
export function notifySystemd(state: string, socketPath: string | undefined = process.env["NOTIFY_SOCKET"]): boolean {
  if (socketPath === undefined || socketPath === "") return false;
  // "@name" is the abstract namespace: a leading NUL byte instead of the @.
  const path = socketPath.startsWith("@") ? Buffer.concat([Buffer.from([0]), Buffer.from(socketPath.slice(1))]) : Buffer.from(socketPath);
  if (path.length > SOCKADDR_UN_BYTES - 3) throw new Error(`NOTIFY_SOCKET path too long: ${socketPath}`);
  const address = new Uint8Array(SOCKADDR_UN_BYTES);
  new DataView(address.buffer).setUint16(0, AF_UNIX, true);
  address.set(path, 2);
  const message = Buffer.from(state);
  const libc = dlopen("libc.so.6", {
    socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    sendto: { args: [FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i64 },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
  });
  try {
    const fd = libc.symbols.socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw new Error("sd_notify: socket() failed");
    try {
      // A pathname address is given with its terminating NUL; an abstract one without.
      const length = 2 + path.length + (socketPath.startsWith("@") ? 0 : 1);
      const sent = libc.symbols.sendto(fd, ptr(message), message.length, 0, ptr(address), length);
      if (Number(sent) !== message.length) throw new Error(`sd_notify: sendto ${socketPath} failed`);
    } finally {
      libc.symbols.close(fd);
    }
  } finally {
    libc.close();
  }
  return true;
}

/** systemd (Type=notify) learns the service is up: listening, or, when taking over, the old process released the port. */
export function notifyReady(logger: Logger): void {
  try {
    notifySystemd("READY=1");
  } catch (error) {
    logger.warn("could not tell systemd the service is ready", { error });
  }
}
