/**
 * The release check's parts (scripts/release/check.ts), on a release made for this machine:
 * each passes on a good artifact and fails on a bad one. `npm run release:check` runs them on
 * both targets (arm64 under qemu-user) from .ci/run.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, cpSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { sourceCommit } from "../scripts/build.ts";
import {
  checkDemo,
  checkDocs,
  checkSums,
  checkUnit,
  checkVersion,
  environmentFor,
  extractTarball,
  runnerFor,
} from "../scripts/release/check.ts";
import { hostRelease, type HostRelease } from "./support/release.ts";
import { scratch } from "./support/scratch.ts";

const temp = scratch();
let release: HostRelease;
let extracted: string;

beforeAll(async () => {
  release = await hostRelease();
  extracted = extractTarball(release.tarball, release.target, temp.dir("disagg-proxy-release-"));
}, 180_000);

afterAll(() => temp.removeAll());

/** Each case unpacks and copies a ~110 MB binary: seconds on a loaded 2-core machine. */
const SLOW = 60_000;

describe("the release check", () => {
  test(
    "this machine's binary runs natively",
    () => {
      expect(runnerFor(release.target)).toEqual([]);
      expect(runnerFor(release.target === "bun-linux-x64" ? "bun-linux-arm64" : "bun-linux-x64")[0]).toStartWith("qemu-");
    },
    SLOW,
  );

  test(
    "accepts the checksums, and refuses a file changed after they were written",
    () => {
      expect(() => checkSums(release.dir, [release.target])).not.toThrow();
      const copy = temp.dir("disagg-proxy-sums-");
      for (const name of ["SHA256SUMS", "install.sh", basename(release.tarball)]) copyFileSync(join(release.dir, name), join(copy, name));
      writeFileSync(join(copy, "install.sh"), `${readFileSync(join(copy, "install.sh"), "utf8")}\n# changed\n`);
      expect(() => checkSums(copy, [release.target])).toThrow("SHA256SUMS does not match the files");
      expect(() => checkSums(release.dir, ["bun-linux-x64", "bun-linux-arm64"])).toThrow("SHA256SUMS lists");
    },
    SLOW,
  );

  test(
    "the tarball's docs are the repository's; a changed one is refused",
    () => {
      expect(() => checkDocs(extracted)).not.toThrow();
      const copy = temp.dir("disagg-proxy-docs-");
      for (const part of ["README.md", "LICENSE", "docs"]) cpSync(join(extracted, part), join(copy, part), { recursive: true });
      expect(() => checkDocs(copy)).not.toThrow();
      writeFileSync(
        join(copy, "docs/operating.md"),
        `${readFileSync(join(copy, "docs/operating.md"), "utf8")}\n[gone](cluster.md#no-such-heading)\n`,
      );
      expect(() => checkDocs(copy)).toThrow("docs/operating.md in the tarball differs from");
    },
    SLOW,
  );

  test(
    "--version must name this commit and target",
    () => {
      const binary = join(extracted, "disagg-proxy");
      expect(() => checkVersion([binary], release.target, sourceCommit())).not.toThrow();
      expect(() => checkVersion([binary], release.target, "0123456789ab")).toThrow("--version exited 0 printing");
    },
    SLOW,
  );

  test(
    "the binary's demo serves a streamed and a non-streamed chat request and exits 0 on SIGTERM",
    async () => {
      await checkDemo([join(extracted, "disagg-proxy")], environmentFor(release.target));
    },
    SLOW,
  );

  test(
    "the demo check fails when the command cannot start a demo",
    async () => {
      const outcome = await checkDemo(["false"], process.env).then(
        () => "resolved",
        (reason: unknown) => (reason instanceof Error ? reason.message : String(reason)),
      );
      expect(outcome).toStartWith("demo exited before printing its URL");
    },
    SLOW,
  );

  test(
    "the tarball's unit verifies; a misspelt key in it does not",
    () => {
      const unit = join(extracted, "disagg-proxy@.service");
      const binary = join(extracted, "disagg-proxy");
      expect(() => checkUnit(unit, binary, temp.dir("disagg-proxy-unit-"))).not.toThrow();
      const bad = join(temp.dir("disagg-proxy-bad-unit-"), "disagg-proxy@.service");
      writeFileSync(bad, readFileSync(unit, "utf8").replace("ProtectSystem=", "ProtectSytem="));
      expect(() => checkUnit(bad, binary, temp.dir("disagg-proxy-unit-"))).toThrow("Unknown key 'ProtectSytem'");
    },
    SLOW,
  );
});
