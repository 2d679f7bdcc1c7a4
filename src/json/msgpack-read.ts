/**
 * MessagePack read as Python's `msgpack.unpackb(raw=False)` reads it, within bounds: ints and
 * floats stay apart (every int is a bigint here, so `1` and `1.0` differ as they do for
 * `isinstance(x, int)`), str is a string, bin is bytes, a map's keys must be strings. Ext types
 * and trailing bytes are refused. The size bound is the caller's read; here the nesting depth is
 * bounded and every declared length is checked against the bytes left before anything is
 * allocated, so a 5-byte message cannot ask for an array of 4 billion entries.
 */

export type MsgpackValue = null | boolean | bigint | number | string | Uint8Array | MsgpackValue[] | MsgpackMap;

/** A decoded map: a null-prototype object, so no key (`__proto__` included) reaches a prototype. */
export interface MsgpackMap {
  readonly [key: string]: MsgpackValue | undefined;
}

export class MsgpackError extends Error {}

/** Deeper than this is refused (the coordinator's messages nest five levels). */
export const MSGPACK_MAX_DEPTH = 32;

const strictDecoder = new TextDecoder("utf-8", { fatal: true });

export function isMsgpackMap(value: MsgpackValue | undefined): value is MsgpackMap {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

/** One whole message; throws MsgpackError on anything malformed, too deep or followed by more bytes. */
export function readMsgpack(bytes: Uint8Array, maxDepth = MSGPACK_MAX_DEPTH): MsgpackValue {
  const reader = new Reader(bytes, maxDepth);
  const value = reader.value(0);
  if (reader.offset !== bytes.length) throw new MsgpackError(`${bytes.length - reader.offset} bytes follow the message`);
  return value;
}

class Reader {
  offset = 0;
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  readonly #maxDepth: number;

  constructor(bytes: Uint8Array, maxDepth: number) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#maxDepth = maxDepth;
  }

  value(depth: number): MsgpackValue {
    const type = this.#uint(1);
    if (type <= 0x7f) return BigInt(type);
    if (type >= 0xe0) return BigInt(type - 0x100);
    if (type >= 0xa0 && type <= 0xbf) return this.#string(type & 0x1f);
    if (type >= 0x90 && type <= 0x9f) return this.#array(type & 0x0f, depth);
    if (type >= 0x80 && type <= 0x8f) return this.#map(type & 0x0f, depth);
    return this.#typed(type, depth);
  }

  #typed(type: number, depth: number): MsgpackValue {
    switch (type) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
      case 0xc5:
      case 0xc6:
        return this.#take(this.#uint(1 << (type - 0xc4))).slice();
      case 0xca:
        return this.#float(4);
      case 0xcb:
        return this.#float(8);
      case 0xcc:
      case 0xcd:
      case 0xce:
        return BigInt(this.#uint(1 << (type - 0xcc)));
      case 0xcf:
        return this.#fixed(8, (at) => this.#view.getBigUint64(at));
      case 0xd0:
        return BigInt(this.#fixed(1, (at) => this.#view.getInt8(at)));
      case 0xd1:
        return BigInt(this.#fixed(2, (at) => this.#view.getInt16(at)));
      case 0xd2:
        return BigInt(this.#fixed(4, (at) => this.#view.getInt32(at)));
      case 0xd3:
        return this.#fixed(8, (at) => this.#view.getBigInt64(at));
      case 0xd9:
      case 0xda:
      case 0xdb:
        return this.#string(this.#uint(1 << (type - 0xd9)));
      case 0xdc:
      case 0xdd:
        return this.#array(this.#uint(type === 0xdc ? 2 : 4), depth);
      case 0xde:
      case 0xdf:
        return this.#map(this.#uint(type === 0xde ? 2 : 4), depth);
      default:
        throw new MsgpackError(`type byte 0x${type.toString(16)} is not accepted (ext types and 0xc1 are refused)`);
    }
  }

  #array(count: number, depth: number): MsgpackValue[] {
    this.#enter(depth, count);
    const out: MsgpackValue[] = [];
    for (let i = 0; i < count; i++) out.push(this.value(depth + 1));
    return out;
  }

  #map(count: number, depth: number): MsgpackMap {
    // Each entry takes at least two bytes (a key and a value).
    this.#enter(depth, count * 2);
    const out: Record<string, MsgpackValue> = {};
    Object.setPrototypeOf(out, null);
    for (let i = 0; i < count; i++) {
      const key = this.value(depth + 1);
      if (typeof key !== "string") throw new MsgpackError("a map key is not a string");
      out[key] = this.value(depth + 1);
    }
    return out;
  }

  #enter(depth: number, leastBytes: number): void {
    if (depth >= this.#maxDepth) throw new MsgpackError(`nests deeper than ${this.#maxDepth} levels`);
    if (leastBytes > this.#bytes.length - this.offset) throw new MsgpackError("declares more entries than bytes are left");
  }

  #string(length: number): string {
    try {
      return strictDecoder.decode(this.#take(length));
    } catch (error) {
      if (error instanceof MsgpackError) throw error;
      throw new MsgpackError("a str is not valid UTF-8");
    }
  }

  #float(size: 4 | 8): number {
    return this.#fixed(size, (at) => (size === 4 ? this.#view.getFloat32(at) : this.#view.getFloat64(at)));
  }

  #uint(size: number): number {
    if (size === 1) return this.#fixed(1, (at) => this.#view.getUint8(at));
    if (size === 2) return this.#fixed(2, (at) => this.#view.getUint16(at));
    return this.#fixed(4, (at) => this.#view.getUint32(at));
  }

  #fixed<T>(size: number, read: (at: number) => T): T {
    const at = this.offset;
    if (at + size > this.#bytes.length) throw new MsgpackError("the message ends early");
    this.offset += size;
    return read(at);
  }

  #take(length: number): Uint8Array {
    if (length > this.#bytes.length - this.offset) throw new MsgpackError("the message ends early");
    const piece = this.#bytes.subarray(this.offset, this.offset + length);
    this.offset += length;
    return piece;
  }
}
