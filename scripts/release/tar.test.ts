import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { tarGz, type TarFile } from "./tar.ts";

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const FILES: TarFile[] = [
  { path: "top/b.txt", data: bytes("bee\n"), executable: false },
  { path: "top/run", data: bytes("#!/bin/sh\necho hi\n"), executable: true },
  { path: "top/a/deep.txt", data: bytes("x".repeat(1000)), executable: false },
];
const MTIME = 1_700_000_000;

function tar(args: string[], archive: Uint8Array): { code: number; out: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), "tar-test-"));
  writeFileSync(join(dir, "a.tar.gz"), archive);
  // --full-time prints local time.
  const run = Bun.spawnSync(["tar", ...args, "-f", join(dir, "a.tar.gz"), "-C", dir], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, TZ: "UTC" },
  });
  return { code: run.exitCode, out: run.stdout.toString() + run.stderr.toString(), dir };
}

describe("the deterministic tar.gz", () => {
  test("the same files in any order and the same time give the same bytes", () => {
    expect(tarGz(FILES, MTIME)).toEqual(tarGz(FILES.toReversed(), MTIME));
    expect(tarGz(FILES, MTIME)).not.toEqual(tarGz(FILES, MTIME + 1));
  });

  test("GNU tar lists directories then files in sorted order, owned by 0/0, all at the given time", () => {
    const listing = tar(["--numeric-owner", "--full-time", "-tvz"], tarGz(FILES, MTIME));
    expect(listing.code).toBe(0);
    const lines = listing.out
      .trimEnd()
      .split("\n")
      .map((line) => line.split(/\s+/));
    expect(lines.map((line) => line.at(-1))).toEqual(["top/", "top/a/", "top/a/deep.txt", "top/b.txt", "top/run"]);
    expect(lines.map((line) => `${line[0]} ${line[1]}`)).toEqual([
      "drwxr-xr-x 0/0",
      "drwxr-xr-x 0/0",
      "-rw-r--r-- 0/0",
      "-rw-r--r-- 0/0",
      "-rwxr-xr-x 0/0",
    ]);
    expect(new Set(lines.map((line) => `${line[3]} ${line[4]}`))).toEqual(new Set(["2023-11-14 22:13:20"]));
  });

  test("GNU tar extracts the same contents and modes, without a warning", () => {
    const extract = tar(["-xz"], tarGz(FILES, MTIME));
    expect(extract).toMatchObject({ code: 0, out: "" });
    for (const file of FILES) expect(readFileSync(join(extract.dir, file.path))).toEqual(Buffer.from(file.data));
    expect(statSync(join(extract.dir, "top/run")).mode & 0o777).toBe(0o755);
    expect(statSync(join(extract.dir, "top/b.txt")).mtimeMs).toBe(MTIME * 1000);
  });

  test("the gzip header carries no name and no time (as gzip -n), and the archive fills whole 10 KiB records", () => {
    const archive = tarGz(FILES, MTIME);
    // Bytes 3 (flags: no FNAME) and 4-7 (MTIME) of RFC 1952's header.
    expect([...archive.subarray(3, 8)]).toEqual([0, 0, 0, 0, 0]);
    expect(gunzipSync(archive).length % 10_240).toBe(0);
  });

  test("a path that would escape the archive's directory, or appears twice, is refused", () => {
    expect(() => tarGz([{ path: "../x", data: bytes(""), executable: false }], MTIME)).toThrow("bad archive path");
    expect(() => tarGz([{ path: "/etc/x", data: bytes(""), executable: false }], MTIME)).toThrow("bad archive path");
    expect(() => tarGz([FILES[0]!, FILES[0]!], MTIME)).toThrow("twice");
  });
});
