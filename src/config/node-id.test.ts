import { expect, test } from "bun:test";
import type { NetworkInterfaceInfo } from "node:os";
import { hostNodeId, nodeIdFromInterfaces } from "./node-id.ts";

function nic(mac: string, internal = false): NetworkInterfaceInfo {
  return { address: "10.0.0.1", netmask: "255.0.0.0", family: "IPv4", mac, internal, cidr: null };
}

test("node id is the last MAC byte of the first real interface by name", () => {
  const interfaces = { lo: [nic("00:00:00:00:00:00", true)], eth1: [nic("02:42:ac:11:00:7f")], eth0: [nic("02:42:ac:11:00:c8")] };
  expect(nodeIdFromInterfaces(interfaces)).toBe(0xc8);
});

test("node id is 0 when no interface has a MAC address", () => {
  expect(nodeIdFromInterfaces({ lo: [nic("00:00:00:00:00:00", true)] })).toBe(0);
  expect(nodeIdFromInterfaces({})).toBe(0);
});

test("the host's node id is stable and in 0..255", () => {
  const id = hostNodeId();
  expect(id).toBe(hostNodeId());
  expect(id).toBeGreaterThanOrEqual(0);
  expect(id).toBeLessThanOrEqual(255);
});
