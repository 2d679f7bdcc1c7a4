import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runtimeDirOf } from "./runtime-dir.ts";

const dir = mkdtempSync(join(tmpdir(), "runtime-dir-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the default runtime directory in /tmp, which other users can make first", () => {
  test("one this user made is used; one another user made first, a link, or one others may write is not: the control socket goes to ~/.cache/disagg-proxy (0700) instead, and the note says why", () => {
    const uid = process.getuid?.() ?? 0;
    const cases: [string, (path: string) => void, string][] = [
      ["ours", (path) => mkdirSync(path, { mode: 0o700 }), ""],
      [
        "foreign",
        (path) => {
          mkdirSync(path, { mode: 0o777 });
          chownSync(path, uid + 1, uid + 1);
        },
        `belongs to uid ${uid + 1}`,
      ],
      ["link", (path) => symlinkSync(mkdtempSync(join(dir, "elsewhere-")), path), "is not a directory (a link?)"],
      [
        "writable",
        (path) => {
          mkdirSync(path);
          chmodSync(path, 0o777);
        },
        "may be written by other users (mode 777)",
      ],
    ];
    for (const [name, prepare, why] of cases) {
      const places = { tmp: join(dir, `tmp-${name}`), home: join(dir, `home-${name}`) };
      mkdirSync(places.tmp);
      const shared = join(places.tmp, `disagg-proxy-${uid}`);
      prepare(shared);
      const chosen = runtimeDirOf(undefined, {}, places);
      if (why === "") {
        expect(chosen).toEqual({ dir: shared });
        continue;
      }
      const own = join(places.home, ".cache", "disagg-proxy");
      expect(chosen.dir).toBe(own);
      expect(chosen.note).toContain(why);
      expect(statSync(own).mode & 0o777).toBe(0o700);
      // The next copy makes the same choice.
      expect(runtimeDirOf(undefined, {}, places).dir).toBe(own);
    }
  });

  test("a configured directory, systemd's or the user's runtime directory is used as it is, never the /tmp default", () => {
    const places = { tmp: join(dir, "tmp-unused"), home: join(dir, "home-unused") };
    const configured = join(dir, "configured");
    expect(runtimeDirOf(configured, { XDG_RUNTIME_DIR: join(dir, "xdg") }, places)).toEqual({ dir: configured });
    expect(runtimeDirOf(undefined, { RUNTIME_DIRECTORY: `${join(dir, "systemd")}:${join(dir, "other")}` }, places)).toEqual({
      dir: join(dir, "systemd"),
    });
    expect(runtimeDirOf(undefined, { XDG_RUNTIME_DIR: join(dir, "xdg") }, places)).toEqual({ dir: join(dir, "xdg", "disagg-proxy") });
  });
});
