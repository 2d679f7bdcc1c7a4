import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { notifySystemd } from "../src/process/sd-notify.ts";
import { notifySocket } from "./support/notify-socket.ts";

const dir = mkdtempSync(join(tmpdir(), "sd-notify-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

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
