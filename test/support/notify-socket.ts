/**
 * systemd's side of sd_notify(3) for tests: a datagram socket bound at a path (what
 * $NOTIFY_SOCKET names), read without blocking. Bun has no Unix datagram socket: libc through bun:ffi.
 */

import { dlopen, FFIType, ptr } from "bun:ffi";

/** A datagram socket bound where systemd's would be, read without blocking: systemd's side, in libc calls. */
export function notifySocket(path: string): { read(): string | undefined; close(): void } {
  const libc = dlopen("libc.so.6", {
    socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    bind: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
    recv: { args: [FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i64 },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
  });
  const fd = libc.symbols.socket(1, 2, 0);
  const address = new Uint8Array(110);
  new DataView(address.buffer).setUint16(0, 1, true);
  address.set(Buffer.from(path), 2);
  if (libc.symbols.bind(fd, ptr(address), 2 + path.length + 1) !== 0) throw new Error(`cannot bind ${path}`);
  const buffer = new Uint8Array(4096);
  const MSG_DONTWAIT = 0x40;
  return {
    read() {
      const got = Number(libc.symbols.recv(fd, ptr(buffer), buffer.length, MSG_DONTWAIT));
      return got < 0 ? undefined : Buffer.from(buffer.subarray(0, got)).toString();
    },
    close() {
      libc.symbols.close(fd);
      libc.close();
    },
  };
}
