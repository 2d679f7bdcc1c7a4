/**
 * What tells a request a web page made from one a worker or an operator's tool made, for the
 * routes a page must not reach: the HTTP cluster storage (a page that registers a worker gets
 * clients' prompts), the dashboard and /cluster_info (what they disclose).
 *
 * - Host: DNS rebinding gives an attacker's name the proxy's address, so the page is
 *   "same-origin" with the proxy; its requests then carry the attacker's name as Host. A Host
 *   that is an IP literal, `localhost`, or a name the operator configured cannot be an
 *   attacker's name.
 * - Origin / Sec-Fetch-Site: a browser labels a cross-site request (fetch, a form, an image);
 *   real workers (Python aiohttp/httpx, the emulator) send neither header.
 * - Content-Type: a page can POST text/plain (or no type at all) without a CORS preflight,
 *   never application/json; upstream's FastAPI store parses only a JSON type
 *   (CVE-2021-32677, fixed in FastAPI 0.65.2).
 */

import { addressBytes } from "./networks.ts";

/** The host name a Host header names: port and IPv6 brackets dropped, lower case, no trailing dot. */
export function hostOfHeader(host: string): string {
  const trimmed = host.trim().toLowerCase();
  const bare = trimmed.startsWith("[")
    ? trimmed.slice(1, trimmed.indexOf("]") < 0 ? undefined : trimmed.indexOf("]"))
    : trimmed.replace(/:\d*$/, "");
  return bare.replace(/\.$/, "");
}

/** Whether a Host header names this proxy rather than a name someone else controls. */
export class HostCheck {
  readonly #names: ReadonlySet<string>;

  /** `names`: the configured hostname, bind_host, --allowed-host names (wildcard addresses are ignored: they are IP literals). */
  constructor(names: Iterable<string>) {
    this.#names = new Set(["localhost", ...[...names].map(hostOfHeader).filter((name) => name !== "")]);
  }

  /** A missing Host (HTTP/1.0, a raw client) is no browser's request and passes. */
  allows(host: string | null): boolean {
    if (host === null || host.trim() === "") return true;
    const name = hostOfHeader(host);
    return addressBytes(name) !== undefined || this.#names.has(name);
  }

  /** The names accepted besides IP literals, for messages. */
  names(): string[] {
    return [...this.#names];
  }
}

/**
 * Why a request looks like a web page's from another origin, or undefined: an `Origin` other
 * than `ownOrigin` (the scheme, host and port the request was sent to), a `Sec-Fetch-Site`
 * other than `same-origin` or `none` (typed in the address bar), or, from a browser that sends
 * no Fetch Metadata (before 2023), a `Referer` on another origin: an image's GET /expire sends
 * no Origin, but its page's address.
 */
export function crossSiteReason(headers: Headers, ownOrigin: string): string | undefined {
  const origin = headers.get("origin");
  if (origin !== null && origin.toLowerCase() !== ownOrigin.toLowerCase()) return `Origin ${origin.slice(0, 200)} is not this proxy's`;
  const site = headers.get("sec-fetch-site");
  if (site !== null) return site === "same-origin" || site === "none" ? undefined : `Sec-Fetch-Site ${site.slice(0, 40)}`;
  const referer = headers.get("referer");
  if (referer === null) return undefined;
  const from = URL.parse(referer)?.origin;
  return from !== undefined && from.toLowerCase() === ownOrigin.toLowerCase()
    ? undefined
    : `Referer ${referer.slice(0, 200)} is not this proxy's (no Fetch Metadata)`;
}

/** `application/json` or `application/<x>+json`, parameters allowed: what FastAPI parses as JSON. */
export function isJsonContentType(contentType: string | null): boolean {
  if (contentType === null) return false;
  const media = (contentType.split(";")[0] ?? "").trim().toLowerCase();
  return media === "application/json" || (media.startsWith("application/") && media.endsWith("+json"));
}
