/** Byte helpers for dialects that answer one upstream chunk with several pieces. */

/** The parts joined into one array; undefined when there is nothing to send. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array | undefined {
  if (parts.length === 0) return undefined;
  if (parts.length === 1) return parts[0];
  let length = 0;
  for (const part of parts) length += part.length;
  const joined = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  return joined;
}
