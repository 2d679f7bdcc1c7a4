import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
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
        `owner uid ${uid + 1}) belongs to another user than this process (uid ${uid})`,
      ],
      ["link", (path) => symlinkSync(mkdtempSync(join(dir, "elsewhere-")), path), "is a link, not a directory"],
      [
        "writable",
        (path) => {
          mkdirSync(path);
          chmodSync(path, 0o777);
        },
        `(mode 777, owner uid ${uid}) may be written by its group or other users`,
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

  test("with the /tmp name taken and no usable home, a fresh private directory in /tmp, and the note says a take-over must name it", () => {
    const uid = process.getuid?.() ?? 0;
    const places = { tmp: join(dir, "tmp-homeless"), home: join(dir, "homeless-file") };
    mkdirSync(places.tmp);
    writeFileSync(places.home, "not a directory");
    const shared = join(places.tmp, `disagg-proxy-${uid}`);
    mkdirSync(shared);
    chownSync(shared, uid + 1, uid + 1);
    const chosen = runtimeDirOf(undefined, {}, places);
    expect(chosen.dir).toStartWith(`${shared}-`);
    expect(statSync(chosen.dir)).toMatchObject({ uid });
    expect(statSync(chosen.dir).mode & 0o777).toBe(0o700);
    expect(chosen.note).toContain(`belongs to another user than this process (uid ${uid})`);
    expect(chosen.note).toContain(`a --take-over of this process must be given --runtime-dir ${chosen.dir}`);
  });
});

describe("a runtime directory given (--runtime-dir, systemd's, the user's)", () => {
  test("one its group or others may write, or another user's, is refused in one line naming its path, mode and owner", () => {
    const uid = process.getuid?.() ?? 0;
    const sticky = join(dir, "sticky");
    mkdirSync(sticky);
    chmodSync(sticky, 0o1777);
    expect(() => runtimeDirOf(sticky, {}, { tmp: dir, home: dir })).toThrow(
      `runtime directory ${sticky} (mode 1777, owner uid ${uid}) may be written by its group or other users: make it private (chmod 700, this user's) or give another --runtime-dir`,
    );
    const group = join(dir, "group");
    mkdirSync(group);
    chmodSync(group, 0o770);
    expect(() => runtimeDirOf(undefined, { RUNTIME_DIRECTORY: group }, { tmp: dir, home: dir })).toThrow(`(mode 770, owner uid ${uid})`);
    const foreign = join(dir, "foreign-given");
    mkdirSync(foreign, { mode: 0o700 });
    chownSync(foreign, uid + 1, uid + 1);
    expect(() => runtimeDirOf(foreign, {}, { tmp: dir, home: dir })).toThrow(`(mode 700, owner uid ${uid + 1}) belongs to another user`);
  });
});

describe("the runtime directory's usual places", () => {
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
