import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256Sums, sourceDateEpoch, tarballName } from "./release.ts";
import { integrityOf, lockedRuntime } from "./runtime.ts";

describe("release naming, times and checksums", () => {
  test("tarballs are named by version and the architecture users know (x64, arm64)", () => {
    expect(tarballName("1.2.3", "bun-linux-x64")).toBe("disagg-proxy-1.2.3-linux-x64.tar.gz");
    expect(tarballName("1.2.3", "bun-linux-arm64")).toBe("disagg-proxy-1.2.3-linux-arm64.tar.gz");
  });

  test("the archive time is SOURCE_DATE_EPOCH when set, else the commit's time", () => {
    expect(sourceDateEpoch({ SOURCE_DATE_EPOCH: "1700000000" })).toBe(1_700_000_000);
    expect(() => sourceDateEpoch({ SOURCE_DATE_EPOCH: "yesterday" })).toThrow("SOURCE_DATE_EPOCH must be whole seconds");
    const commit = Bun.spawnSync(["git", "log", "-1", "--format=%ct"], { cwd: import.meta.dir, stdout: "pipe" });
    expect(sourceDateEpoch({})).toBe(Number(commit.stdout.toString().trim()));
  });

  test("SHA256SUMS is sorted by name and accepted by sha256sum --check", () => {
    const dir = mkdtempSync(join(tmpdir(), "disagg-proxy-sums-"));
    writeFileSync(join(dir, "b.tar.gz"), "bee");
    writeFileSync(join(dir, "a.sh"), "ay");
    const sums = sha256Sums([join(dir, "b.tar.gz"), join(dir, "a.sh")]);
    expect(sums.split("\n").map((line) => line.slice(66))).toEqual(["a.sh", "b.tar.gz", ""]);
    writeFileSync(join(dir, "SHA256SUMS"), sums);
    const check = Bun.spawnSync(["sha256sum", "--check", "--strict", "SHA256SUMS"], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    expect(check.stdout.toString()).toBe("a.sh: OK\nb.tar.gz: OK\n");
    expect(check.exitCode).toBe(0);
  });
});

describe("the cross-compile runtime", () => {
  test("package-lock.json pins each target's Bun runtime at the running Bun's version, with its sha512", () => {
    for (const target of ["bun-linux-x64", "bun-linux-arm64"] as const) {
      const locked = lockedRuntime(target);
      expect(locked.version).toBe(Bun.version);
      expect(locked.integrity).toMatch(/^sha512-[A-Za-z0-9+/]{86}==$/);
    }
  });

  test("a lockfile pinning another Bun version is refused, naming the fix", () => {
    const lockfile = join(mkdtempSync(join(tmpdir(), "disagg-proxy-lock-")), "package-lock.json");
    const entry = { version: "0.0.1", integrity: "sha512-x" };
    writeFileSync(lockfile, JSON.stringify({ packages: { "node_modules/@oven/bun-linux-aarch64": entry } }));
    expect(() => lockedRuntime("bun-linux-arm64", lockfile)).toThrow(
      `pins @oven/bun-linux-aarch64@0.0.1 but Bun ${Bun.version} is running: run npm ci`,
    );
    expect(() => lockedRuntime("bun-linux-x64", lockfile)).toThrow("@oven/bun-linux-x64 is not in package-lock.json");
  });

  test("integrity is written as npm writes it (sha512, base64)", () => {
    const file = join(mkdtempSync(join(tmpdir(), "disagg-proxy-integrity-")), "f");
    writeFileSync(file, "abc");
    // sha512("abc"), base64: a published test vector (FIPS 180-2).
    expect(integrityOf(file)).toBe("sha512-3a81oZNherrMQXNJriBBMRLm+k6JqX6iCp7u5ktV05ohkpkqJ0/BqDa6PCOj/uu9RU1EI2Q86A4qmslPpUyknw==");
  });
});
