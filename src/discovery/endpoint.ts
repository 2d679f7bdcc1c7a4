/** TensorRT-LLM's etcd addresses → the `http://host:port` endpoints discovery takes. */

import { originOf } from "./origin.ts";

const ETCD_PORT = 2379;

/**
 * `etcd://host[:port]` (disagg_cluster's cluster_uri, possibly a comma list as upstream accepts),
 * `http://host:port` or `host:port` → a comma list of `http://host:port`. Undefined when an item
 * is none of these. The metadata config's `hostname` + `port` give `${hostname}:${port}`.
 */
export function etcdEndpoint(uri: string): string | undefined {
  const endpoints: string[] = [];
  for (const item of uri.split(",")) {
    const text = item.trim();
    if (text === "") continue;
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase();
    const hasPort = /:\d+\/?$/.test(text);
    // host:port needs its port; etcd:// without one means etcd's default client port.
    if (scheme === undefined && !hasPort) return undefined;
    const withPort = scheme === "etcd" && !hasPort ? `${text.replace(/\/$/, "")}:${ETCD_PORT}` : text;
    const origin = originOf(scheme === undefined ? `http://${withPort}` : withPort.replace(/^etcd:\/\//i, "http://"));
    if (origin === undefined) return undefined;
    endpoints.push(origin);
  }
  return endpoints.length === 0 ? undefined : endpoints.join(",");
}
