import { afterAll, expect, test } from "bun:test";
import { dlopen, FFIType, ptr } from "bun:ffi";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { notifySystemd } from "./sd-notify.ts";

const dir = mkdtempSync(join(tmpdir(), "sd-notify-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A datagram socket bound where systemd's would be, read without blocking: systemd's side, in libc calls. */
function notifySocket(path: string): { read(): string | undefined; close(): void } {
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
  expect(libc.symbols.bind(fd, ptr(address), 2 + path.length + 1)).toBe(0);
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

test("READY=1 reaches the socket $NOTIFY_SOCKET names, as one datagram", () => {
  const path = join(dir, "notify");
  const systemd = notifySocket(path);
  try {
    expect(notifySystemd("READY=1", path)).toBe(true);
    expect(systemd.read()).toBe("READY=1");
    expect(systemd.read()).toBeUndefined();
  } finally {
    systemd.close();
  }
});

test("without $NOTIFY_SOCKET (not under systemd) nothing is sent; a socket nobody reads is an error", () => {
  expect(notifySystemd("READY=1", undefined)).toBe(false);
  expect(notifySystemd("READY=1", "")).toBe(false);
  expect(() => notifySystemd("READY=1", join(dir, "nobody"))).toThrow("sd_notify: sendto");
});
