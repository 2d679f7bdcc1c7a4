/**
 * Worker and etcd addresses → one canonical origin, `http(s)://host:port` with a lower-case host
 * and the port always spelled out: the same spelling src/config/urls.ts gives static workers,
 * so a discovered worker compares equal to a configured one. Kept here so discovery depends on
 * nothing outside itself.
 */

export function originOf(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url.trim());
  } catch {
    return undefined;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return undefined;
  if (parsed.hostname === "" || parsed.username !== "" || parsed.password !== "") return undefined;
  if (parsed.pathname !== "/" || parsed.search !== "" || parsed.hash !== "") return undefined;
  const port = parsed.port === "" ? (parsed.protocol === "https:" ? "443" : "80") : parsed.port;
  if (port === "0") return undefined;
  return `${parsed.protocol}//${parsed.hostname}:${port}`;
}
