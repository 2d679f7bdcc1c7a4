/**
 * deploy/install.sh, run by dash (Debian's /bin/sh: POSIX, no bashisms) from a release made for
 * this machine, into temporary roots. The installed unit is checked by systemd-analyze. The first
 * case installs the real release and runs the installed binary; the others, about install.sh's
 * own checks and steps, install one made the same way around a stand-in for the binary (each real
 * install unpacks and copies ~110 MB: seconds on a loaded 2-core machine).
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { parseCommandLine } from "../src/cli.ts";
import { hostRelease, standInRelease, type HostRelease } from "./support/release.ts";
import { scratch } from "./support/scratch.ts";

const ROOT = join(import.meta.dir, "..");
const temp = scratch();
let real: HostRelease;
let release: HostRelease;

beforeAll(async () => {
  real = await hostRelease();
  release = standInRelease(temp.dir("disagg-proxy-stand-in-"));
}, 180_000);

afterAll(() => temp.removeAll());

function run(command: string[], env: Record<string, string> = {}): { code: number; out: string; err: string } {
  const result = Bun.spawnSync(command, { stdout: "pipe", stderr: "pipe", env: { ...process.env, ...env } });
  return { code: result.exitCode, out: result.stdout.toString(), err: result.stderr.toString() };
}

const install = (args: string[], env: Record<string, string> = {}, from = release): ReturnType<typeof run> =>
  run(["dash", join(from.dir, "install.sh"), ...args], env);

const tempRoot = (): string => temp.dir("disagg-proxy-root-");

/** The installed unit, checked as systemd would load it, its ExecStart pointed into the temporary root. */
function verifyUnit(root: string, prefix = "/usr/local"): { code: number; out: string } {
  const unit = readFileSync(join(root, "etc/systemd/system/disagg-proxy@.service"), "utf8");
  const copy = join(temp.dir("disagg-proxy-unit-"), "disagg-proxy@a.service");
  writeFileSync(copy, unit.replace(`ExecStart=${prefix}/bin/disagg-proxy `, `ExecStart=${root}${prefix}/bin/disagg-proxy `));
  const result = run(["systemd-analyze", "--no-pager", "verify", copy]);
  return { code: result.code, out: (result.out + result.err).trim() };
}

/** What install.sh asks of systemd to find the serving slot, in order. */
const probes = ["is-active disagg-proxy@a", "is-active disagg-proxy@b", "is-active disagg-proxy@b"];

/**
 * Stand-ins for systemctl and sysctl (install.sh's SYSTEMCTL and SYSCTL) on a host where the
 * given slots ("legacy": the single unit of older releases) are active and enabled; they log
 * each call. A slot still draining answers active for `drainingPolls` more probes.
 */
function fakeHost(state: { active: string[]; enabled: string[]; startFails?: boolean; drainingPolls?: number }): {
  env: Record<string, string>;
  calls(): string[];
} {
  const dir = temp.dir("disagg-proxy-fake-host-");
  const log = join(dir, "calls");
  for (const slot of state.active) writeFileSync(join(dir, `active-${slot}`), "");
  for (const slot of state.enabled) writeFileSync(join(dir, `enabled-${slot}`), "");
  writeFileSync(join(dir, "draining"), String(state.drainingPolls ?? 0));
  const systemctl = `#!/bin/sh
dir=${dir}
verb=
unit=
now=
for word in "$@"; do
  case $word in
    -q) ;;
    --now) now=yes ;;
    *) if [ -z "$verb" ]; then verb=$word; else unit=$word; fi ;;
  esac
done
echo "$verb\${now:+ --now} $unit" >>"$dir/calls"
case $unit in
  disagg-proxy.service) slot=legacy ;;
  *) slot=\${unit#disagg-proxy@} ;;
esac
case $verb in
  is-active)
    [ -e "$dir/active-$slot" ] || exit 3
    left=$(cat "$dir/draining")
    if [ "$left" -gt 0 ] && ! [ -e "$dir/enabled-$slot" ]; then
      left=$((left - 1))
      echo "$left" >"$dir/draining"
      [ "$left" -gt 0 ] || rm "$dir/active-$slot"
    fi
    exit 0 ;;
  is-enabled) [ -e "$dir/enabled-$slot" ] || exit 1 ;;
  start) ${state.startFails === true ? "exit 1" : 'touch "$dir/active-$slot"'} ;;
  stop) rm -f "$dir/active-$slot" ;;
  enable) touch "$dir/enabled-$slot"; [ -z "$now" ] || touch "$dir/active-$slot" ;;
  disable) rm -f "$dir/enabled-$slot"; [ -z "$now" ] || rm -f "$dir/active-$slot" ;;
esac
exit 0
`;
  writeFileSync(join(dir, "systemctl"), systemctl, { mode: 0o755 });
  writeFileSync(join(dir, "sysctl"), `#!/bin/sh\necho "sysctl $*" >>"${dir}/calls"\n`, { mode: 0o755 });
  return {
    env: { SYSTEMCTL: join(dir, "systemctl"), SYSCTL: join(dir, "sysctl") },
    calls: () =>
      readFileSync(log, "utf8")
        .trimEnd()
        .split("\n")
        .map((call) => call.replace(/ \S*\/etc\/sysctl\.d\//, " <root>/etc/sysctl.d/").trim()),
  };
}

/** The real release's case unpacks and copies a ~110 MB binary: seconds on a loaded 2-core machine. */
const SLOW = 60_000;

describe("deploy/install.sh", () => {
  test(
    "installs the binary, the unit, the config and the docs under DESTDIR; the unit verifies and the next command is printed",
    () => {
      const root = tempRoot();
      const result = install(["--destdir", root, real.tarball], {}, real);
      expect(result).toMatchObject({ code: 0, err: "" });
      const mode = (path: string): number => statSync(join(root, path)).mode & 0o777;
      expect(mode("usr/local/bin/disagg-proxy")).toBe(0o755);
      expect(mode("etc/systemd/system/disagg-proxy@.service")).toBe(0o644);
      expect(mode("etc/disagg-proxy/disagg_config.yaml")).toBe(0o644);
      const docs = ["README.md", "LICENSE", "disagg_config.yaml", ...readdirSync(join(ROOT, "docs")).map((file) => `docs/${file}`)];
      expect(docs.filter((doc) => !existsSync(join(root, "usr/local/share/doc/disagg-proxy", doc)))).toEqual([]);
      expect(docs).toContain("docs/operating.md");
      expect(readFileSync(join(root, "etc/systemd/system/disagg-proxy@.service"), "utf8")).toBe(
        readFileSync(join(ROOT, "deploy/disagg-proxy@.service"), "utf8"),
      );
      expect(run([join(root, "usr/local/bin/disagg-proxy"), "--version"]).out).toStartWith(`disagg-proxy ${pkg.version} (commit `);
      expect(verifyUnit(root)).toEqual({ code: 0, out: "" });
      expect(result.out).toContain(`${real.tarball.split("/").at(-1)}: checksum OK`);
      expect(result.out.trimEnd().split("\n")).toContain("  systemctl enable --now disagg-proxy@a");
      expect(readFileSync(join(root, "etc/sysctl.d/60-disagg-proxy.conf"), "utf8")).toContain("\nnet.ipv4.tcp_migrate_req = 1\n");
    },
    SLOW,
  );

  test(
    "the installed config and docs name only the units that exist (disagg-proxy@a, @b), and the installed config listens on loopback",
    () => {
      const root = tempRoot();
      expect(install(["--destdir", root, real.tarball], {}, real).code).toBe(0);
      const docDir = join(root, "usr/local/share/doc/disagg-proxy");
      const files = [
        join(root, "etc/disagg-proxy/disagg_config.yaml"),
        ...readdirSync(docDir, { recursive: true, encoding: "utf8" }).map((file) => join(docDir, file)),
      ];
      // Every unit a systemctl or journalctl line names, in each installed text file.
      const named = files
        .filter((file) => statSync(file).isFile() && /\.(md|yaml)$/.test(file))
        .flatMap((file) => readFileSync(file, "utf8").split("\n"))
        .filter((line) => /\b(systemctl|journalctl)\b/.test(line))
        .flatMap((line) => [...line.matchAll(/\bdisagg-proxy(@\.service|@[a-z*]*|\.service)?(?![\w./@-])/g)].map((match) => match[0]));
      expect(named.length).toBeGreaterThan(5);
      expect(
        [...new Set(named)].filter(
          (unit) => !["disagg-proxy@a", "disagg-proxy@b", "disagg-proxy@*", "disagg-proxy@", "disagg-proxy@.service"].includes(unit),
        ),
      ).toEqual([]);
      const command = parseCommandLine(["serve", "-c", join(root, "etc/disagg-proxy/disagg_config.yaml")]);
      expect(command.kind === "serve" ? [command.config.host, command.config.bindHost] : command.kind).toEqual(["127.0.0.1", undefined]);
    },
    SLOW,
  );

  test(
    "running it again keeps an edited config, replaces the binary and changes nothing else",
    () => {
      const root = tempRoot();
      expect(install(["--destdir", root, release.tarball]).code).toBe(0);
      const config = join(root, "etc/disagg-proxy/disagg_config.yaml");
      writeFileSync(config, 'context_servers:\n  urls: ["gpu1:8001"]\ngeneration_servers:\n  urls: ["gpu2:8002"]\n');
      const before = readFileSync(join(root, "etc/systemd/system/disagg-proxy@.service"));
      writeFileSync(join(root, "usr/local/bin/disagg-proxy"), "not the binary");
      const again = install(["--destdir", root, release.tarball]);
      expect(again.code).toBe(0);
      expect(again.out).toContain(`kept ${root}/etc/disagg-proxy/disagg_config.yaml`);
      expect(readFileSync(config, "utf8")).toContain("gpu1:8001");
      expect(readFileSync(join(root, "etc/systemd/system/disagg-proxy@.service"))).toEqual(before);
      expect(run([join(root, "usr/local/bin/disagg-proxy"), "--version"]).code).toBe(0);
      expect(existsSync(join(root, "usr/local/bin/.disagg-proxy.new"))).toBe(false);
    },
    SLOW,
  );

  test(
    "--prefix moves the binary and the unit's ExecStart follows it; DESTDIR from the environment works too",
    () => {
      const root = tempRoot();
      expect(install(["--prefix", "/opt/disagg-proxy", release.tarball], { DESTDIR: root }).code).toBe(0);
      expect(existsSync(join(root, "opt/disagg-proxy/bin/disagg-proxy"))).toBe(true);
      const unit = readFileSync(join(root, "etc/systemd/system/disagg-proxy@.service"), "utf8");
      expect(unit).toContain("\nExecStart=/opt/disagg-proxy/bin/disagg-proxy serve -c /etc/disagg-proxy/disagg_config.yaml --take-over\n");
      expect(verifyUnit(root, "/opt/disagg-proxy")).toEqual({ code: 0, out: "" });
    },
    SLOW,
  );

  test(
    "without a tarball argument it installs the one beside it for this machine's architecture",
    () => {
      const root = tempRoot();
      const result = install(["--destdir", root]);
      expect(result.code).toBe(0);
      expect(result.out).toContain(`disagg-proxy-${pkg.version}-linux-${process.arch}.tar.gz: checksum OK`);
    },
    SLOW,
  );

  test(
    "a tarball that does not match SHA256SUMS, or is not listed there, installs nothing",
    () => {
      const dir = temp.dir("disagg-proxy-tampered-");
      const name = release.tarball.split("/").at(-1) ?? "";
      const bytes = readFileSync(release.tarball);
      bytes[bytes.length - 100] = (bytes[bytes.length - 100] ?? 0) ^ 0xff;
      writeFileSync(join(dir, name), bytes);
      copyFileSync(join(release.dir, "SHA256SUMS"), join(dir, "SHA256SUMS"));
      const root = tempRoot();
      const tampered = install(["--destdir", root, join(dir, name)]);
      expect(tampered.code).toBe(1);
      expect(tampered.err).toContain(`${name} does not match its checksum`);
      writeFileSync(join(dir, "SHA256SUMS"), "0000  something-else.tar.gz\n");
      expect(install(["--destdir", root, join(dir, name)]).err).toContain(`${name} is not listed in`);
      expect(existsSync(join(root, "usr"))).toBe(false);
      expect(existsSync(join(root, "etc"))).toBe(false);
    },
    SLOW,
  );

  test(
    "a relative or odd --prefix and an unknown option are refused with a message",
    () => {
      expect(install(["--prefix", "usr/local", release.tarball]).err).toContain("--prefix must be an absolute path");
      expect(install(["--prefix", "/opt/a b", release.tarball]).err).toContain("--prefix may hold only");
      expect(install(["--force"])).toMatchObject({ code: 1, err: "install.sh: unknown option --force (see --help)\n" });
      expect(install(["--help"]).out).toContain("sudo sh install.sh [--prefix DIR] [--destdir DIR]");
    },
    SLOW,
  );

  test(
    "where disagg-proxy@a serves, it sets the sysctl, starts @b (which takes the port over), enables @b and disables @a",
    () => {
      const host = fakeHost({ active: ["a"], enabled: ["a"] });
      const result = install(["--destdir", tempRoot(), release.tarball], host.env);
      expect(result).toMatchObject({ code: 0, err: "" });
      expect(host.calls()).toEqual([
        "sysctl -q -p <root>/etc/sysctl.d/60-disagg-proxy.conf",
        "daemon-reload",
        ...probes,
        "start disagg-proxy@b",
        "enable disagg-proxy@b",
        "disable disagg-proxy@a",
      ]);
      expect(result.out).toContain("upgraded: disagg-proxy@b serves; disagg-proxy@a drains its streams");
    },
    SLOW,
  );

  test(
    "the next upgrade goes back to @a once it has drained; a take-over that fails stops the new slot and leaves the old one serving and enabled",
    () => {
      const waits = fakeHost({ active: ["a", "b"], enabled: ["b"], drainingPolls: 2 });
      expect(install(["--destdir", tempRoot(), release.tarball], waits.env)).toMatchObject({ code: 0, err: "" });
      expect(waits.calls().filter((call) => !call.startsWith("is-"))).toEqual([
        "sysctl -q -p <root>/etc/sysctl.d/60-disagg-proxy.conf",
        "daemon-reload",
        "start disagg-proxy@a",
        "enable disagg-proxy@a",
        "disable disagg-proxy@b",
      ]);

      const fails = fakeHost({ active: ["a"], enabled: ["a"], startFails: true });
      const result = install(["--destdir", tempRoot(), release.tarball], fails.env);
      expect(result.code).toBe(1);
      expect(result.err).toBe(
        "install.sh: disagg-proxy@b did not take over (journalctl -u disagg-proxy@b says why); disagg-proxy@a serves on\n",
      );
      expect(fails.calls().slice(-2)).toEqual(["start disagg-proxy@b", "stop disagg-proxy@b"]);
    },
    SLOW,
  );

  test(
    "with nothing running it starts nothing and says how; the single unit of an older release is restarted once as @a",
    () => {
      const fresh = fakeHost({ active: [], enabled: [] });
      const result = install(["--destdir", tempRoot(), release.tarball], fresh.env);
      expect(result.out.trimEnd().split("\n")).toContain("  systemctl enable --now disagg-proxy@a");
      expect(fresh.calls().some((call) => call.startsWith("start") || call.startsWith("enable"))).toBe(false);

      const legacy = fakeHost({ active: ["legacy"], enabled: ["legacy"] });
      expect(install(["--destdir", tempRoot(), release.tarball], legacy.env).code).toBe(0);
      expect(legacy.calls().filter((call) => !call.startsWith("is-"))).toEqual([
        "sysctl -q -p <root>/etc/sysctl.d/60-disagg-proxy.conf",
        "daemon-reload",
        "disable --now disagg-proxy.service",
        "daemon-reload",
        "enable --now disagg-proxy@a",
      ]);
    },
    SLOW,
  );

  test(
    "shellcheck finds nothing in it as a POSIX sh script",
    () => {
      if (Bun.which("shellcheck") === null) throw new Error("shellcheck is missing: scripts/test-tools.sh installs Debian's shellcheck");
      expect(run(["shellcheck", "--shell=sh", "--severity=style", join(ROOT, "deploy/install.sh")])).toEqual({ code: 0, out: "", err: "" });
    },
    SLOW,
  );

  test(
    "the example config it installs is a TensorRT-LLM config the proxy reads without a warning",
    () => {
      const command = parseCommandLine(["serve", "-c", join(ROOT, "deploy/disagg_config.yaml")]);
      expect(command.kind).toBe("serve");
      if (command.kind !== "serve") return;
      expect(command.warnings).toEqual([]);
      expect(command.config.port).toBe(8000);
      expect(command.config.contextServers).toEqual(["http://localhost:8001"]);
      expect(command.config.generationServers).toEqual(["http://localhost:8002"]);
    },
    SLOW,
  );
});
