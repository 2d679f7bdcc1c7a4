/**
 * Default node_id. trtllm-serve uses `uuid.getnode() % 256`: the last byte of the host's MAC.
 * Taking the interfaces in name order keeps the value stable across restarts of one host.
 */

import { networkInterfaces, type NetworkInterfaceInfo } from "node:os";

type Interfaces = Readonly<Record<string, readonly NetworkInterfaceInfo[] | undefined>>;

const NO_MAC = "00:00:00:00:00:00";

/** Last byte of the first real MAC address (by interface name), or 0 when there is none. */
export function nodeIdFromInterfaces(interfaces: Interfaces): number {
  for (const name of Object.keys(interfaces).toSorted()) {
    for (const info of interfaces[name] ?? []) {
      if (info.internal || info.mac === NO_MAC) continue;
      const last = Number.parseInt(info.mac.split(":").at(-1) ?? "", 16);
      if (Number.isInteger(last)) return last % 256;
    }
  }
  return 0;
}

export function hostNodeId(): number {
  try {
    return nodeIdFromInterfaces(networkInterfaces());
  } catch {
    // Some sandboxes forbid listing interfaces. Python falls back to a random id; a fixed 0
    // keeps ids reproducible, and operators with several proxies set node_id anyway.
    return 0;
  }
}
