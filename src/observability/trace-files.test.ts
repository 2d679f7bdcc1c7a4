import { afterAll, afterEach, beforeEach, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { privateAppender, traceDirRefusal } from "./trace-files.ts";

const root = mkdtempSync(join(tmpdir(), "trace-files-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const uid = process.getuid?.() ?? 0;
const mode = (path: string): number => statSync(path).mode & 0o777;

let umask = 0;
beforeEach(() => {
  umask = process.umask(0o022);
});
afterEach(() => {
  process.umask(umask);
});

describe("the trace's files are private whatever the umask (022 here)", () => {
  test("the trace directory and each hour directory are made 0700, each file 0600; a file left 0644 is made 0600", async () => {
    const dir = join(root, "made", "traces");
    expect(traceDirRefusal(dir)).toBeUndefined();
    expect(mode(dir)).toBe(0o700);
    const append = privateAppender();
    await append(join(dir, "2026-12-04T21", "requests-1.jsonl"), "{}\n");
    expect([mode(join(dir, "2026-12-04T21")), mode(join(dir, "2026-12-04T21", "requests-1.jsonl"))]).toEqual([0o700, 0o600]);
    mkdirSync(join(dir, "2026-12-04T22"), { mode: 0o755 });
    writeFileSync(join(dir, "2026-12-04T22", "responses-1.jsonl"), "", { mode: 0o644 });
    await privateAppender()(join(dir, "2026-12-04T22", "responses-1.jsonl"), "{}\n");
    expect([mode(join(dir, "2026-12-04T22")), mode(join(dir, "2026-12-04T22", "responses-1.jsonl"))]).toEqual([0o700, 0o600]);
  });

  test("a trace directory under one others may write without the sticky bit is refused (it could be swapped for a link); under a sticky one it is used", () => {
    const open = mkdtempSync(join(root, "open-"));
    chmodSync(open, 0o777);
    expect(traceDirRefusal(join(open, "traces"))).toBe(
      `request trace directory ${join(open, "traces")}: the directory above it ${open} (mode 777, owner uid ${uid}) may be written by other users, who could replace it`,
    );
    chmodSync(open, 0o1777);
    expect(traceDirRefusal(join(open, "traces"))).toBeUndefined();
  });

  test("a linked hour directory or a linked file is never followed: the append fails and nothing reaches the link's target", async () => {
    const dir = mkdtempSync(join(root, "linked-"));
    const elsewhere = mkdtempSync(join(root, "elsewhere-"));
    symlinkSync(elsewhere, join(dir, "2026-12-04T21"));
    const append = privateAppender();
    expect(await append(join(dir, "2026-12-04T21", "requests-1.jsonl"), "{}\n").then(() => "written", String)).toContain(
      "is a link, not a directory: its lines are not written",
    );
    mkdirSync(join(dir, "2026-12-04T22"));
    symlinkSync(join(elsewhere, "target.jsonl"), join(dir, "2026-12-04T22", "requests-1.jsonl"));
    expect(await append(join(dir, "2026-12-04T22", "requests-1.jsonl"), "{}\n").then(() => "written", String)).toContain("ELOOP");
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  test("the appender remembers only the hour it last checked: an earlier hour written again is checked again (a link there is refused)", async () => {
    const dir = mkdtempSync(join(root, "hours-"));
    const elsewhere = mkdtempSync(join(root, "elsewhere-"));
    const append = privateAppender();
    await append(join(dir, "2026-12-04T21", "requests-1.jsonl"), "{}\n");
    await append(join(dir, "2026-12-04T22", "requests-1.jsonl"), "{}\n");
    rmSync(join(dir, "2026-12-04T21"), { recursive: true });
    symlinkSync(elsewhere, join(dir, "2026-12-04T21"));
    expect(await append(join(dir, "2026-12-04T21", "requests-1.jsonl"), "{}\n").then(() => "written", String)).toContain(
      "is a link, not a directory: its lines are not written",
    );
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  test("a trace directory another user owns, or others may write, is refused with the reason; this user's 0755 one is used", () => {
    const foreign = mkdtempSync(join(root, "foreign-"));
    chownSync(foreign, 65534, 65534);
    expect(traceDirRefusal(foreign)).toBe(
      `request trace directory ${foreign} (mode 700, owner uid 65534) belongs to another user than this process (uid ${uid})`,
    );
    const open = mkdtempSync(join(root, "open-"));
    chmodSync(open, 0o1777);
    expect(traceDirRefusal(open)).toBe(`request trace directory ${open} (mode 1777, owner uid ${uid}) may be written by other users`);
    const shared = mkdtempSync(join(root, "shared-"));
    chmodSync(shared, 0o755);
    expect(traceDirRefusal(shared)).toBeUndefined();
    writeFileSync(join(root, "a-file"), "");
    expect(traceDirRefusal(join(root, "a-file", "traces"))).toContain("ENOTDIR");
  });
});
