/**
 * The README's "Install" lines, run as written against a local HTTP server that serves a
 * release (no outside network here): only the release URL's host part is replaced, `sudo` is
 * dropped and DESTDIR points the install into a temporary root. The last line starts the
 * service, which needs a booted systemd: instead the unit it enables is verified and the
 * install must have printed that very command.
 */

import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { hostRelease, type HostRelease } from "./support/release.ts";
import { scratch } from "./support/scratch.ts";

const README = readFileSync(join(import.meta.dir, "..", "README.md"), "utf8");
const RELEASE_URL = `${pkg.homepage}/releases/download/v${pkg.version}/`;

function installLines(): string[] {
  const section = README.slice(README.indexOf("\n## Install\n"));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
  return block.trimEnd().split("\n");
}

/** As the README says for arm64 hosts. */
const forThisHost = (line: string): string => line.replaceAll("-linux-x64.", `-linux-${process.arch}.`);

let release: HostRelease;
let server: ReturnType<typeof Bun.serve> | undefined;

beforeAll(async () => {
  release = await hostRelease();
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const name = new URL(request.url).pathname.slice(1);
      const file = join(release.dir, name);
      return /^[\w.-]+$/.test(name) && existsSync(file) ? new Response(Bun.file(file)) : new Response("not found", { status: 404 });
    },
  });
}, 180_000);

const temp = scratch();

afterAll(() => {
  void server?.stop(true);
  temp.removeAll();
});

test("the README installs in four lines: download, verify, install, start, for this version", () => {
  const lines = installLines();
  expect(lines).toHaveLength(4);
  const tarball = `disagg-proxy-${pkg.version}-linux-x64.tar.gz`;
  expect(lines[0]).toBe(`curl -fLO "${RELEASE_URL}{SHA256SUMS,install.sh,${tarball}}"`);
  expect(lines[1]).toBe("sha256sum --check --ignore-missing SHA256SUMS");
  expect(lines[2]).toBe(`sudo sh install.sh ${tarball}`);
  expect(lines[3]).toBe("sudo systemctl enable --now disagg-proxy@a");
});

test("the README's install lines work as written against a server holding the release", async () => {
  const cwd = temp.dir("disagg-proxy-readme-install-");
  const root = temp.dir("disagg-proxy-readme-root-");
  const local = `http://127.0.0.1:${server?.port}/`;
  const [download, verify, install, start] = installLines().map(forThisHost);
  const script = [download?.replace(RELEASE_URL, local), verify, install?.replace(/^sudo /, "")].join("\n");
  writeFileSync(join(cwd, "install-lines.sh"), `set -e\n${script}\n`);
  // Not spawnSync: the server answering curl runs on this thread.
  const run = Bun.spawn(["bash", "install-lines.sh"], { cwd, stdout: "pipe", stderr: "pipe", env: { ...process.env, DESTDIR: root } });
  const [code, out, stderr] = await Promise.all([run.exited, new Response(run.stdout).text(), new Response(run.stderr).text()]);
  // curl's progress meter is the only thing on stderr.
  const complaints = stderr.split(/[\r\n]+/).filter((line) => !/^[\s\d.:%kMG-]*$/.test(line) && !/% Total|Dload/.test(line));
  expect({ code, complaints }).toEqual({ code: 0, complaints: [] });
  expect(out).toContain(`disagg-proxy-${pkg.version}-linux-${process.arch}.tar.gz: OK\ninstall.sh: OK\n`);
  // The fourth line is what install.sh told us to run, and the unit it enables is complete.
  expect(out).toContain(`\n  ${start?.replace(/^sudo /, "")}\n`);
  const unit = readFileSync(join(root, "etc/systemd/system/disagg-proxy@.service"), "utf8");
  expect(unit).toContain("\n[Install]\nWantedBy=multi-user.target\n");
  const copy = join(cwd, "disagg-proxy@a.service");
  writeFileSync(copy, unit.replace("ExecStart=/usr/local/bin/disagg-proxy ", `ExecStart=${root}/usr/local/bin/disagg-proxy `));
  const verified = Bun.spawnSync(["systemd-analyze", "--no-pager", "verify", copy], { stdout: "pipe", stderr: "pipe" });
  expect(`${verified.exitCode} ${verified.stdout.toString()}${verified.stderr.toString()}`).toBe("0 ");
  expect(existsSync(join(root, "etc/disagg-proxy/disagg_config.yaml"))).toBe(true);
}, 60_000);
