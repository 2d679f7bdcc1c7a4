/**
 * Worker addresses. TensorRT-LLM's YAML lists `host:port` with no scheme; users of the
 * flags also paste `http://host:port/`. Both become one canonical origin so routers,
 * metrics labels and duplicate checks compare equal strings.
 */

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * `host:port` or `http(s)://host[:port][/]` → `http(s)://host:port`: lower-case host, the port
 * always spelled out (80/443 when implied), no trailing slash. Undefined when the text is not a worker address,
 * e.g. no port without a scheme, a path (it would be dropped silently), credentials or port 0.
 */
export function normaliseUrl(raw: string): string | undefined {
  const text = raw.trim();
  const hasScheme = SCHEME.test(text);
  let url: URL;
  try {
    url = new URL(hasScheme ? text : `http://${text}`);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  if (url.hostname === "" || url.username !== "" || url.password !== "") return undefined;
  if (url.pathname !== "/" || url.search !== "" || url.hash !== "") return undefined;
  // Without a scheme there is no default port to fall back on: TensorRT-LLM requires one too.
  // (URL.port is "" for an explicit default port such as :80, so look at the text.)
  if (!hasScheme && !/:\d+\/?$/.test(text)) return undefined;
  if (url.port === "0") return undefined;
  // Always spell the port, so `h` and `h:80` compare equal and every origin has one shape.
  return `${url.protocol}//${url.hostname}:${url.port === "" ? defaultPort(url.protocol) : url.port}`;
}

function defaultPort(protocol: string): string {
  return protocol === "https:" ? "443" : "80";
}

/**
 * Flag values → canonical origins. Each value may be a comma list; empty items are skipped
 * (a trailing comma is harmless), duplicates are dropped keeping the first position so
 * round-robin order follows what the user wrote.
 */
export function normaliseUrlList(values: readonly string[], onInvalid: (raw: string) => Error): string[] {
  const origins = new Set<string>();
  for (const value of values) {
    for (const item of value.split(",")) {
      if (item.trim() === "") continue;
      const origin = normaliseUrl(item);
      if (origin === undefined) throw onInvalid(item.trim());
      origins.add(origin);
    }
  }
  return [...origins];
}

const ETCD_PORT = 2379;

/**
 * TensorRT-LLM's etcd addresses → the `http://host:port` endpoints discovery takes:
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
    // etcd:// without a port means etcd's default client port.
    const withPort = scheme === "etcd" && !hasPort ? `${text.replace(/\/$/, "")}:${ETCD_PORT}` : text;
    const origin = scheme === "etcd" ? normaliseUrl(withPort.replace(/^etcd:\/\//i, "http://")) : normaliseUrl(withPort);
    if (origin === undefined) return undefined;
    endpoints.push(origin);
  }
  return endpoints.length === 0 ? undefined : endpoints.join(",");
}

/** A discovered worker's URL → its origin, spelled as a static worker's; only http(s) URLs with a scheme. */
export function discoveredOrigin(url: string): string | undefined {
  return SCHEME.test(url.trim()) ? normaliseUrl(url) : undefined;
}
