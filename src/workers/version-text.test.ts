import { expect, test } from "bun:test";
import { acceptedVersion } from "./version-text.ts";

test("a worker version is kept only as a short PEP 440 string", () => {
  for (const version of ["1.3.0rc26", " 1.3.0rc15.post1 ", "1.2.0", "v1.4.0rc0", "1.3.0.dev2026092900", "1.3.0+cu130.g1a2b3c"])
    expect(acceptedVersion(version)).toBe(version.trim());
  for (const version of [
    "",
    "latest",
    "1.3.0<script>",
    "1.3.0 rc1",
    "1".repeat(65),
    `1.${"0".repeat(4 * 1024 * 1024)}`,
    3,
    null,
    { v: "1.0" },
  ])
    expect(acceptedVersion(version)).toBeUndefined();
});
