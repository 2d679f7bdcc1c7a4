/**
 * Which discovered worker addresses the proxy will send clients' requests to. A registration
 * names any host:port, and the proxy then POSTs prompts there (with --worker-api-key as a
 * Bearer token): a link-local or cloud-metadata address (169.254.169.254 answers the
 * instance's credentials) is refused unless the operator allows link-local workers, and the
 * proxy's own listening address is refused always (requests would loop back into it).
 * Workers from the configuration's own lists are the operator's word and are not checked.
 */

import { addressBytes } from "./networks.ts";

export interface WorkerAddressRules {
  /** --allow-link-local-workers: 169.254.0.0/16, fe80::/10 and the metadata addresses are allowed. */
  readonly allowLinkLocal: boolean;
  /** The port the proxy listens on. */
  readonly ownPort: number;
  /** Names and addresses that reach this machine besides loopback and wildcards: the listen host, the host name, interface addresses. */
  readonly ownHosts: Iterable<string>;
}

/** Cloud instance-metadata names (GCP, AWS, Azure, Alibaba) a registration could use instead of the address. */
const METADATA_NAMES = new Set([
  "metadata",
  "metadata.google.internal",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.azure.internal",
  "metadata.tencentyun.com",
]);
/** Metadata addresses outside the link-local ranges: AWS's IPv6 endpoint, Alibaba Cloud's. */
const METADATA_ADDRESSES = new Set(["fd00:ec2:0:0:0:0:0:254", "100.100.100.200"]);

/** Why a discovered worker origin is refused, or undefined when it may be used. */
export function workerAddressRefusal(origin: string, rules: WorkerAddressRules): string | undefined {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return "not a URL";
  }
  const host = url.hostname
    .replace(/^\[|\]$/g, "")
    .toLowerCase()
    .replace(/\.$/, "");
  const bytes = addressBytes(host);
  const port = Number(url.port === "" ? (url.protocol === "https:" ? 443 : 80) : url.port);
  if (!rules.allowLinkLocal) {
    if (METADATA_NAMES.has(host)) return "a cloud metadata name (--allow-link-local-workers allows it)";
    if (bytes !== undefined && (isLinkLocal(bytes) || METADATA_ADDRESSES.has(canonical(bytes))))
      return "a link-local or metadata address (--allow-link-local-workers allows it)";
  }
  if (
    port === rules.ownPort &&
    (host === "localhost" || (bytes !== undefined && (isLoopback(bytes) || bytes.every((b) => b === 0))) || ownHost(host, bytes, rules))
  ) {
    return "the proxy's own address (requests would loop)";
  }
  return undefined;
}

function ownHost(host: string, bytes: Uint8Array | undefined, rules: WorkerAddressRules): boolean {
  for (const own of rules.ownHosts) {
    const name = own.replace(/^\[|\]$/g, "").toLowerCase();
    if (name === host) return true;
    const ownBytes = addressBytes(name);
    if (bytes !== undefined && ownBytes !== undefined && canonical(ownBytes) === canonical(bytes)) return true;
  }
  return false;
}

function isLinkLocal(bytes: Uint8Array): boolean {
  if (bytes.length === 4) return bytes[0] === 169 && bytes[1] === 254;
  return bytes[0] === 0xfe && ((bytes[1] ?? 0) & 0xc0) === 0x80;
}

function isLoopback(bytes: Uint8Array): boolean {
  if (bytes.length === 4) return bytes[0] === 127;
  return bytes.subarray(0, 15).every((b) => b === 0) && bytes[15] === 1;
}

/** One spelling per address: dotted IPv4, or eight unpadded hex groups. */
function canonical(bytes: Uint8Array): string {
  if (bytes.length === 4) return [...bytes].join(".");
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16));
  return groups.join(":");
}
