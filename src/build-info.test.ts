import { expect, test } from "bun:test";
import pkg from "../package.json" with { type: "json" };
import { buildInfo, versionLine } from "./build-info.ts";

test("run from source, the version line says so and names the running Bun and platform", () => {
  expect(buildInfo()).toEqual({ version: pkg.version, commit: undefined, target: undefined, bun: Bun.version });
  expect(versionLine()).toBe(`disagg-proxy ${pkg.version} (from source, bun ${Bun.version}, ${process.platform}-${process.arch})`);
});

test("a built binary's version line names its commit and compile target", () => {
  expect(versionLine({ version: "1.2.3", commit: "0123456789ab", target: "bun-linux-arm64", bun: "1.4.5" })).toBe(
    "disagg-proxy 1.2.3 (commit 0123456789ab, bun 1.4.5, bun-linux-arm64)",
  );
});
