/** Networks and addresses as operators write them (`10.0.0.0/8`, `fd00::/8`, `::ffff:10.1.2.3`). */

export interface Network {
  readonly text: string;
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

/** `10.0.0.0/8`, `fd00::/8`, or a bare address (a /32 or /128); undefined when it is none of these. */
export function parseNetwork(text: string): Network | undefined {
  const [address = "", bits, extra] = text.trim().split("/");
  const bytes = addressBytes(address);
  const max = bytes === undefined ? 0 : bytes.length * 8;
  const prefix = bits === undefined ? max : /^\d+$/.test(bits) ? Number(bits) : Number.NaN;
  if (bytes === undefined || extra !== undefined || !(prefix >= 0 && prefix <= max)) return undefined;
  return { text: text.trim(), bytes, prefix };
}

/** Whether an address (addressBytes) lies in the network. */
export function inNetwork(net: Network, address: Uint8Array): boolean {
  // An IPv4 peer may arrive as ::ffff:a.b.c.d on a dual-stack socket; addressBytes unwraps it.
  if (address.length !== net.bytes.length) return false;
  for (let bit = 0; bit < net.prefix; bit++) {
    const index = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    if (((address[index] ?? 0) & mask) !== ((net.bytes[index] ?? 0) & mask)) return false;
  }
  return true;
}

/** IPv4 → 4 bytes; IPv6 → 16 bytes (IPv4-mapped unwrapped to 4); anything else undefined. */
export function addressBytes(text: string): Uint8Array | undefined {
  const bare = text.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const v4 = ipv4(bare);
  if (v4 !== undefined) return v4;
  const v6 = ipv6(bare);
  if (v6 === undefined) return undefined;
  const mapped = v6.subarray(0, 10).every((b) => b === 0) && v6[10] === 0xff && v6[11] === 0xff;
  return mapped ? v6.slice(12) : v6;
}

function ipv4(text: string): Uint8Array | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return undefined;
  return Uint8Array.from(parts.map(Number));
}

function ipv6(text: string): Uint8Array | undefined {
  if (!text.includes(":")) return undefined;
  let body = text;
  let tail: number[] = [];
  // A dotted IPv4 tail (::ffff:10.1.2.3) stands for the last two groups.
  const lastColon = text.lastIndexOf(":");
  const v4tail = ipv4(text.slice(lastColon + 1));
  if (v4tail !== undefined) {
    tail = [((v4tail[0] ?? 0) << 8) | (v4tail[1] ?? 0), ((v4tail[2] ?? 0) << 8) | (v4tail[3] ?? 0)];
    const head = text.slice(0, lastColon + 1);
    body = head.endsWith("::") ? head : head.slice(0, -1);
  }
  const halves = body.split("::");
  if (halves.length > 2) return undefined;
  const head = groups(halves[0]);
  const rest = groups(halves[1]);
  if (head === undefined || rest === undefined) return undefined;
  const given = head.length + rest.length + tail.length;
  if (halves.length === 1 ? given !== 8 : given > 7) return undefined;
  const words = [...head, ...Array.from({ length: 8 - given }, () => 0), ...rest, ...tail];
  return Uint8Array.from(words.flatMap((w) => [w >> 8, w & 0xff]));
}

/** Colon-separated hex groups; undefined when one is not a group. */
function groups(part: string | undefined): number[] | undefined {
  if (part === undefined || part === "") return [];
  const words = part.split(":");
  return words.every((w) => /^[0-9a-f]{1,4}$/i.test(w)) ? words.map((w) => Number.parseInt(w, 16)) : undefined;
}
