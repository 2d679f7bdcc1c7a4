/**
 * deploy/disagg-proxy@.service, checked by systemd's own tools on a copy (the template, and an
 * instance of it) whose ExecStart is the freshly built binary. Nothing is skipped: without
 * systemd-analyze the suite fails and says how to install it.
 */

import { beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULTS } from "../src/config/types.ts";
import { BINARY, ensureBinary } from "./e2e/binary-harness.ts";

const UNIT_FILE = join(import.meta.dir, "..", "deploy", "disagg-proxy@.service");
const INSTALLED_PATH = "/usr/local/bin/disagg-proxy";
/** systemd's exposure score (0 = locked down, 10 = exposed); 1.3 when this was written. */
const MAX_EXPOSURE = 1.5;

function systemdAnalyze(args: string[]): { exitCode: number; output: string } {
  const path = Bun.which("systemd-analyze");
  if (path === null) {
    throw new Error(
      "systemd-analyze is missing: install Debian's systemd package " +
        "(apt-get update && apt-get install -y --no-install-recommends systemd), as .ci/run does",
    );
  }
  const run = Bun.spawnSync([path, "--no-pager", ...args], { stdout: "pipe", stderr: "pipe" });
  return { exitCode: run.exitCode, output: `${run.stdout.toString()}${run.stderr.toString()}`.trim() };
}

/** The unit as shipped, or edited, written where systemd-analyze can read it, starting the built binary. */
function unitCopy(edit: (unit: string) => string = (unit) => unit, name = "disagg-proxy@a.service"): string {
  const unit = edit(readFileSync(UNIT_FILE, "utf8")).replace(`ExecStart=${INSTALLED_PATH} `, `ExecStart=${BINARY} `);
  const path = join(mkdtempSync(join(tmpdir(), "disagg-proxy-unit-")), name);
  writeFileSync(path, unit);
  return path;
}

/** Every `Key=value` of the unit, in order (a key may repeat). */
function settings(): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const line of readFileSync(UNIT_FILE, "utf8").split("\n")) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (match?.[1] === undefined || match[2] === undefined) continue;
    map.set(match[1], [...(map.get(match[1]) ?? []), match[2]]);
  }
  return map;
}

const only = (key: string): string | undefined => {
  const values = settings().get(key);
  return values?.length === 1 ? values[0] : undefined;
};

describe("the systemd unit", () => {
  beforeAll(ensureBinary, 120_000);

  test("systemd-analyze verify accepts the template and an instance of it without a single warning, started from the freshly built binary", () => {
    const copy = unitCopy();
    expect(readFileSync(copy, "utf8")).toContain(`ExecStart=${BINARY} serve -c /etc/disagg-proxy/disagg_config.yaml --take-over\n`);
    expect(systemdAnalyze(["verify", copy])).toEqual({ exitCode: 0, output: "" });
    expect(systemdAnalyze(["verify", unitCopy(undefined, "disagg-proxy@.service")])).toEqual({ exitCode: 0, output: "" });
  });

  test("two slots can share the port: Type=notify (ready once taken over), one user name for both, a runtime directory neither removes, a start timeout above the workers' wait", () => {
    expect(only("Type")).toBe("notify");
    expect(only("ExecStart")).toEndWith(" --take-over");
    // SO_REUSEPORT needs one uid: DynamicUser gives every unit of one User= name the same.
    expect(only("DynamicUser")).toBe("yes");
    expect(only("User")).toBe("disagg-proxy");
    expect(only("RuntimeDirectory")).toBe("disagg-proxy");
    expect(only("RuntimeDirectoryPreserve")).toBe("yes");
    expect(Number(only("TimeoutStartSec"))).toBeGreaterThan(DEFAULTS.serverStartTimeoutMs / 1000 + 1);
    expect(settings().has("NotifyAccess")).toBe(false);
  });

  test("systemd-analyze verify reports a misspelt key and a missing binary, so a clean run means something", () => {
    const misspelt = systemdAnalyze(["verify", unitCopy((unit) => unit.replace("ProtectSystem=", "ProtectSytem="))]);
    expect(misspelt.output).toContain("Unknown key 'ProtectSytem'");
    const missing = systemdAnalyze([
      "verify",
      unitCopy((unit) => unit.replace(`ExecStart=${INSTALLED_PATH} `, "ExecStart=/nonexistent/disagg-proxy ")),
    ]);
    expect(missing.exitCode).not.toBe(0);
    expect(missing.output).toContain("is not executable");
  });

  test(`its sandbox keeps systemd's exposure score at ${MAX_EXPOSURE} or below`, () => {
    const review = systemdAnalyze(["security", "--offline=true", `--threshold=${MAX_EXPOSURE * 10}`, unitCopy()]);
    expect(review.output).toMatch(/Overall exposure level for disagg-proxy@a\.service: \d/);
    expect(review.exitCode).toBe(0);
  });

  test("it reloads on SIGHUP, stops on SIGTERM and waits longer than the default drain before SIGKILL", () => {
    expect(only("ExecReload")).toBe("/bin/kill -HUP $MAINPID");
    expect(only("KillSignal")).toBe("SIGTERM");
    expect(Number(only("TimeoutStopSec"))).toBeGreaterThan(DEFAULTS.drainTimeoutMs / 1000);
    expect(only("Restart")).toBe("on-failure");
  });

  test("it lifts Bun's upstream-request cap and the descriptor limit above 10,000 streams", () => {
    expect(settings().get("Environment")).toContain("BUN_CONFIG_MAX_HTTP_REQUESTS=65535");
    // The allocator's purge delay is the runtime's own (docs/performance.md#capacity).
    expect(settings().get("Environment")).not.toContain("MIMALLOC_PURGE_DELAY");
    // A stream holds a client socket and up to two worker legs.
    expect(Number(only("LimitNOFILE"))).toBeGreaterThanOrEqual(3 * 10_000);
  });

  test("it runs as a dynamic user in a read-only system, with the families the proxy needs and no W^X rule", () => {
    const unit = settings();
    for (const [key, value] of [
      ["DynamicUser", "yes"],
      ["NoNewPrivileges", "yes"],
      ["ProtectSystem", "strict"],
      ["ProtectHome", "yes"],
      ["PrivateTmp", "yes"],
    ] as const) {
      expect(unit.get(key)).toEqual([value]);
    }
    // AF_NETLINK: the default node_id is read from the MAC address (deploy/README.md).
    expect(only("RestrictAddressFamilies")?.split(" ").toSorted()).toEqual(["AF_INET", "AF_INET6", "AF_NETLINK", "AF_UNIX"]);
    // JavaScriptCore's JIT needs W+X memory (deploy/README.md).
    expect(unit.has("MemoryDenyWriteExecute")).toBe(false);
  });
});
