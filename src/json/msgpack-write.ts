/**
 * MessagePack written so Python's `msgpack.unpackb(raw=False)` reads back what was meant: a
 * bigint or a whole number is an int (msgpackr writes a whole number beyond 32 bits as a
 * float64, which Python would read as a float and `isinstance(x, int)` refuse), strings are str,
 * no msgpackr records or other ext types. Members that are `undefined` are left out.
 */

import { Packr } from "msgpackr/pack";

export type WireValue = null | boolean | number | bigint | string | readonly WireValue[] | WireMap;
export interface WireMap {
  readonly [key: string]: WireValue | undefined;
}

const packr = new Packr({ useRecords: false, variableMapSize: true });

export function writeMsgpack(value: WireValue): Uint8Array {
  // Copied out: the packer reuses its buffer for the next message.
  return packr.pack(packable(value)).slice();
}

function packable(value: WireValue): unknown {
  if (typeof value === "number")
    return Number.isSafeInteger(value) && (value > 0xffff_ffff || value < -0x8000_0000) ? BigInt(value) : value;
  if (value === null || typeof value !== "object") return value;
  if (isWireList(value)) return value.map(packable);
  const out: Record<string, unknown> = {};
  Object.setPrototypeOf(out, null);
  for (const [key, member] of Object.entries(value)) if (member !== undefined) out[key] = packable(member);
  return out;
}

function isWireList(value: readonly WireValue[] | WireMap): value is readonly WireValue[] {
  return Array.isArray(value);
}
