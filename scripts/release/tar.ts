/**
 * A deterministic .tar.gz: POSIX ustar entries in sorted order, every mtime the given one, owner
 * and group 0 (root), fixed modes, and a gzip header without name or time (as `gzip -n`). The
 * same files and time give the same bytes on any machine with the same Bun (its zlib).
 */

import { gzipSync } from "node:zlib";

export interface TarFile {
  /** Path inside the archive, `/`-separated, without a leading `/`. */
  readonly path: string;
  readonly data: Uint8Array;
  readonly executable: boolean;
}

const BLOCK = 512;
/** GNU and bsdtar pad archives to 20 blocks; some readers warn otherwise. */
const RECORD = 20 * BLOCK;

/** Every directory on the way to each file, then the files, sorted by path as a byte string. */
export function tarGz(files: readonly TarFile[], mtimeSeconds: number): Uint8Array {
  const directories = new Set<string>();
  for (const file of files) {
    const parts = file.path.split("/");
    for (let i = 1; i < parts.length; i++) directories.add(`${parts.slice(0, i).join("/")}/`);
  }
  const entries: { path: string; data: Uint8Array; mode: number; type: "0" | "5" }[] = [
    ...[...directories].map((path) => ({ path, data: new Uint8Array(0), mode: 0o755, type: "5" as const })),
    ...files.map((file) => ({ path: file.path, data: file.data, mode: file.executable ? 0o755 : 0o644, type: "0" as const })),
  ].toSorted((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

  const seen = new Set<string>();
  const blocks: Uint8Array[] = [];
  let length = 0;
  const push = (bytes: Uint8Array): void => {
    blocks.push(bytes);
    length += bytes.length;
  };
  for (const entry of entries) {
    if (seen.has(entry.path)) throw new Error(`${entry.path} is in the archive twice`);
    seen.add(entry.path);
    push(header(entry.path, entry.mode, entry.data.length, mtimeSeconds, entry.type));
    push(entry.data);
    const pad = (BLOCK - (entry.data.length % BLOCK)) % BLOCK;
    push(new Uint8Array(pad));
  }
  push(new Uint8Array(2 * BLOCK));
  push(new Uint8Array((RECORD - (length % RECORD)) % RECORD));

  const tar = new Uint8Array(length);
  let offset = 0;
  for (const block of blocks) {
    tar.set(block, offset);
    offset += block.length;
  }
  return gzipSync(tar, { level: 9 });
}

function header(path: string, mode: number, size: number, mtime: number, type: "0" | "5"): Uint8Array {
  const name = new TextEncoder().encode(path);
  // Our paths are short; ustar's prefix field would only add a second way to be wrong.
  if (name.length > 99 || path.startsWith("/") || path.split("/").includes("..")) throw new Error(`bad archive path: ${path}`);
  const block = new Uint8Array(BLOCK);
  const text = (value: string, at: number): void => block.set(new TextEncoder().encode(value), at);
  const octal = (value: number, at: number, width: number): void => {
    const digits = value.toString(8);
    if (digits.length > width - 1) throw new Error(`${value} does not fit a ${width}-byte tar field`);
    text(`${digits.padStart(width - 1, "0")}\0`, at);
  };
  block.set(name, 0);
  octal(mode, 100, 8);
  octal(0, 108, 8); // uid
  octal(0, 116, 8); // gid
  octal(size, 124, 12);
  octal(mtime, 136, 12);
  text("        ", 148); // the checksum counts its own field as spaces
  text(type, 156);
  text("ustar\0", 257);
  text("00", 263);
  text("root", 265);
  text("root", 297);
  octal(0, 329, 8); // devmajor
  octal(0, 337, 8); // devminor
  const checksum = block.reduce((sum, byte) => sum + byte, 0);
  text(`${checksum.toString(8).padStart(6, "0")}\0 `, 148);
  return block;
}
