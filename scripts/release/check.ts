/**
 * `npm run release:check`: nothing in dist/release is called a release before this passes.
 * - SHA256SUMS matches every file, and a second build of the same commit gives the same bytes.
 * - Each tarball holds exactly the expected files, owned by root, all with the same mtime; its
 *   README.md and docs/ are the repository's, and their links to each other resolve inside it.
 * - Each binary, natively or under qemu-user (arm64 on x64: `qemu-aarch64 -L /usr/aarch64-linux-gnu`),
 *   answers --version with this version, commit, Bun and target, then starts `demo` on a free
 *   port and serves one streamed and one non-streamed chat request through its own emulated
 *   workers, and stops on SIGTERM with exit code 0.
 * - The tarball's unit passes `systemd-analyze verify` without a warning, starting that binary.
 * Prints one line per check, then `release check: N passed, N failed`; exits 1 on any failure.
 */

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { versionLine } from "../../src/build-info.ts";
import { sourceCommit } from "../build.ts";
import { brokenLinks } from "../doc-links.ts";
import { buildRelease, RELEASE_DIR, sha256Sums, sourceDateEpoch, TARBALL_FILES, tarballName } from "./release.ts";
import { isJsonObject } from "../../src/json/json.ts";
import { withDeadline } from "../../src/timers.ts";
import { hostTarget, isTarget, TARGETS, type Target } from "./runtime.ts";

/** Generous: under qemu-user on a loaded 2-core machine `--version` has taken 13 s and the demo 17 s. */
const DEMO_START_MS = 120_000;

/** How to run a binary built for `target` on this machine. */
export function runnerFor(target: Target): string[] {
  if (target === hostTarget()) return [];
  if (target === "bun-linux-arm64") return ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"];
  return ["qemu-x86_64", "-L", "/usr/x86_64-linux-gnu"];
}

/**
 * The environment to run it in. Without BUN_CONFIG_MAX_HTTP_REQUESTS, `serve` and `demo`
 * re-execute themselves with it set (src/http-capacity.ts); under qemu-user that execve hands a
 * foreign binary to the host kernel, which refuses it (ENOEXEC) unless binfmt_misc is set up.
 * So emulated runs get the variable as the systemd unit sets it; native runs go without it.
 */
export function environmentFor(target: Target): Record<string, string | undefined> {
  return target === hostTarget() ? process.env : { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "65535" };
}

export interface Check {
  readonly name: string;
  run(): Promise<void> | void;
}

function fail(message: string): never {
  throw new Error(message);
}

/** Every line of SHA256SUMS matches its file, and the listed files are exactly the release's. */
export function checkSums(dir: string, targets: readonly Target[]): void {
  const listed = readFileSync(join(dir, "SHA256SUMS"), "utf8");
  const names = listed
    .trimEnd()
    .split("\n")
    .map((line) => line.slice(66));
  const expected = [...targets.map((target) => tarballName(pkg.version, target)), "install.sh"].toSorted();
  if (JSON.stringify(names) !== JSON.stringify(expected)) fail(`SHA256SUMS lists ${names.join(", ")}; expected ${expected.join(", ")}`);
  const actual = sha256Sums(names.map((name) => join(dir, name)));
  if (actual !== listed) fail(`SHA256SUMS does not match the files:\n${listed}\nvs\n${actual}`);
}

/** Extracts into `into` with the system's tar (so a reader other than ours accepts it) and checks the listing. */
export function extractTarball(tarball: string, target: Target, into: string): string {
  const top = tarballName(pkg.version, target).slice(0, -".tar.gz".length);
  const listing = Bun.spawnSync(["tar", "--numeric-owner", "--full-time", "-tvzf", tarball], { stdout: "pipe", stderr: "pipe" });
  if (!listing.success) fail(`tar cannot list ${tarball}: ${listing.stderr.toString()}`);
  const lines = listing.stdout.toString().trimEnd().split("\n");
  const paths = lines.map((line) => line.split(/\s+/).at(-1) ?? "");
  const folders = new Set(
    Object.keys(TARBALL_FILES).flatMap((file) => (file.includes("/") ? [`${top}/${file.slice(0, file.lastIndexOf("/"))}/`] : [])),
  );
  const expected = [`${top}/`, ...folders, `${top}/disagg-proxy`, ...Object.keys(TARBALL_FILES).map((file) => `${top}/${file}`)].toSorted();
  if (JSON.stringify(paths) !== JSON.stringify(expected)) fail(`${tarball} holds ${paths.join(", ")}; expected ${expected.join(", ")}`);
  const owners = new Set(lines.map((line) => line.split(/\s+/)[1]));
  if (owners.size !== 1 || !owners.has("0/0")) fail(`${tarball}: entries not all owned by 0/0: ${[...owners].join(", ")}`);
  const times = new Set(lines.map((line) => line.split(/\s+/).slice(3, 5).join(" ")));
  if (times.size !== 1) fail(`${tarball}: entries with different times: ${[...times].join(", ")}`);
  const untar = Bun.spawnSync(["tar", "-xzf", tarball, "-C", into], { stderr: "pipe" });
  if (!untar.success) fail(`tar cannot extract ${tarball}: ${untar.stderr.toString()}`);
  return join(into, top);
}

/** Whether a link target (relative to the tarball's top) is a file the tarball ships. */
const shipsDocument = (target: string): boolean => target === "README.md" || target === "LICENSE" || target.startsWith("docs/");

/** The tarball's README.md and docs/ are the repository's, and their links to what it ships (README, LICENSE, docs/) resolve in it. */
export function checkDocs(extracted: string): void {
  const documents = Object.keys(TARBALL_FILES).filter((file) => file === "README.md" || file.startsWith("docs/"));
  if (!documents.some((file) => file.startsWith("docs/"))) fail("the tarball holds no docs/");
  for (const file of documents) {
    const source = TARBALL_FILES[file] ?? "";
    if (!readFileSync(join(extracted, file)).equals(readFileSync(source))) fail(`${file} in the tarball differs from ${source}`);
  }
  const broken = brokenLinks(
    extracted,
    documents.filter((file) => file.endsWith(".md")),
    shipsDocument,
  );
  if (broken.length > 0) fail(`broken links in the tarball's documents:\n${broken.join("\n")}`);
}

export function checkVersion(command: readonly string[], target: Target, commit: string): void {
  const run = Bun.spawnSync([...command, "--version"], {
    stdout: "pipe",
    stderr: "pipe",
    env: environmentFor(target),
    timeout: DEMO_START_MS,
  });
  const expected = versionLine({ version: pkg.version, commit, bun: Bun.version, target });
  const printed = run.stdout.toString().trim();
  if (run.exitCode !== 0 || printed !== expected) {
    fail(`--version exited ${run.exitCode} printing "${printed}" (expected "${expected}") ${run.stderr.toString()}`);
  }
}

type Demo = Bun.Subprocess<"ignore", "pipe", "pipe">;

/** `demo --port 0`, its proxy URL read from the banner; rejects if it exits first or takes too long. */
async function startDemo(command: readonly string[], env: Record<string, string | undefined>): Promise<{ demo: Demo; url: string }> {
  const demo = Bun.spawn([...command, "demo", "--port", "0"], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env });
  const url = await withDeadline(bannerUrl(demo), DEMO_START_MS);
  if (url === "late") {
    demo.kill("SIGKILL");
    fail(`demo printed no URL within ${DEMO_START_MS / 1000} s`);
  }
  return { demo, url };
}

async function bannerUrl(demo: Demo): Promise<string> {
  const reader = demo.stdout.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const match = /proxy:\s+(http:\/\/\S+)\n/.exec(text);
    if (match?.[1] !== undefined) {
      reader.releaseLock();
      void demo.stdout.pipeTo(new WritableStream()).catch(() => {});
      return match[1];
    }
    const { done, value } = await reader.read();
    if (done) fail(`demo exited before printing its URL: ${await new Response(demo.stderr).text()}`);
    text += decoder.decode(value, { stream: true });
  }
}

export async function checkDemo(command: readonly string[], env: Record<string, string | undefined>): Promise<void> {
  const { demo, url } = await startDemo(command, env);
  try {
    const ask = (stream: boolean): Promise<Response> =>
      fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "emulated-model", messages: [{ role: "user", content: "release check" }], max_tokens: 4, stream }),
        signal: AbortSignal.timeout(60_000),
      });
    const plain = await ask(false);
    const answer: unknown = await plain.json();
    const choices = isJsonObject(answer) ? answer["choices"] : undefined;
    const first = Array.isArray(choices) ? choices[0] : undefined;
    const message = isJsonObject(first) ? first["message"] : undefined;
    if (plain.status !== 200 || !isJsonObject(message) || typeof message["content"] !== "string") {
      fail(`non-streamed chat: ${plain.status} ${JSON.stringify(answer)}`);
    }
    const streamed = await ask(true);
    const body = await streamed.text();
    const chunks = body.split("\n\n").filter((frame) => frame.startsWith("data: {"));
    if (streamed.status !== 200 || chunks.length < 2 || !body.trimEnd().endsWith("data: [DONE]")) {
      fail(`streamed chat: ${streamed.status} ${body.slice(0, 500)}`);
    }
  } finally {
    demo.kill("SIGTERM");
  }
  const code = await withDeadline(demo.exited, DEMO_START_MS);
  if (code === "late") {
    demo.kill("SIGKILL");
    fail(`demo still running ${DEMO_START_MS / 1000} s after SIGTERM`);
  }
  if (code !== 0) fail(`demo exited ${code} on SIGTERM: ${await new Response(demo.stderr).text()}`);
}

/** `systemd-analyze verify` of the unit as shipped (a copy in `scratch`), its ExecStart pointed at `binary`: no output at all. */
export function checkUnit(unitFile: string, binary: string, scratch: string): void {
  const unit = readFileSync(unitFile, "utf8");
  const line = "ExecStart=/usr/local/bin/disagg-proxy ";
  if (!unit.includes(`\n${line}`)) fail(`${unitFile} has no "${line}…" line`);
  const copy = join(scratch, "disagg-proxy@.service");
  writeFileSync(copy, unit.replace(line, `ExecStart=${binary} `));
  const tool = Bun.which("systemd-analyze") ?? fail("systemd-analyze is missing: run scripts/test-tools.sh (Debian's systemd package)");
  const run = Bun.spawnSync([tool, "--no-pager", "verify", copy], { stdout: "pipe", stderr: "pipe" });
  const output = `${run.stdout.toString()}${run.stderr.toString()}`.trim();
  if (run.exitCode !== 0 || output !== "") fail(`systemd-analyze verify: exit ${run.exitCode}: ${output}`);
}

/** Builds the same commit again into `again` and compares checksums. */
export async function checkReproducible(dir: string, targets: readonly Target[], commit: string, again: string): Promise<void> {
  await buildRelease({ outDir: again, targets, commit, mtime: sourceDateEpoch() });
  const first = readFileSync(join(dir, "SHA256SUMS"), "utf8");
  const second = readFileSync(join(again, "SHA256SUMS"), "utf8");
  if (first !== second) fail(`a second build differs (or ${dir} is from another commit: run npm run release):\n${first}vs\n${second}`);
}

/** The checks of the release in `dir`; everything they unpack or build goes under `scratch`. */
export function releaseChecks(dir: string, targets: readonly Target[], commit: string, scratch: string): Check[] {
  const sub = (name: string): string => {
    const path = join(scratch, name);
    mkdirSync(path, { recursive: true });
    return path;
  };
  const checks: Check[] = [
    { name: "SHA256SUMS matches every file", run: () => checkSums(dir, targets) },
    { name: "a second build of this commit is byte for byte the same", run: () => checkReproducible(dir, targets, commit, sub("rebuild")) },
  ];
  for (const target of targets) {
    let extracted = "";
    const binary = (): string => join(extracted, "disagg-proxy");
    const command = (): string[] => [...runnerFor(target), binary()];
    const emulator = runnerFor(target)[0];
    const how = emulator === undefined ? "natively" : `under ${emulator}`;
    if (emulator !== undefined && Bun.which(emulator) === null) {
      checks.push({
        name: `${target}: ${emulator} is installed`,
        run: () => fail(`${emulator} is missing: scripts/test-tools.sh installs it (Debian's qemu-user and the target's libc6-*-cross)`),
      });
      continue;
    }
    checks.push(
      {
        name: `${target}: the tarball holds exactly the release files, owned by root, one mtime`,
        run: () => void (extracted = extractTarball(join(dir, tarballName(pkg.version, target)), target, sub(target))),
      },
      { name: `${target}: the tarball's README.md and docs/ are the repository's, their links resolve`, run: () => checkDocs(extracted) },
      { name: `${target}: --version ${how} names version, commit, Bun and target`, run: () => checkVersion(command(), target, commit) },
      {
        name: `${target}: demo ${how} serves a streamed and a non-streamed chat request, exits 0 on SIGTERM`,
        run: () => checkDemo(command(), environmentFor(target)),
      },
      {
        name: `${target}: the tarball's unit passes systemd-analyze verify`,
        run: () => checkUnit(join(extracted, "disagg-proxy@.service"), binary(), sub(`${target}-unit`)),
      },
    );
  }
  return checks;
}

/** Runs the checks in order, printing each; a failed one skips none of the others that can still run. */
export async function runChecks(checks: readonly Check[]): Promise<number> {
  let failed = 0;
  for (const check of checks) {
    const started = performance.now();
    try {
      await check.run();
      console.log(`ok   ${check.name} (${Math.round(performance.now() - started)} ms)`);
    } catch (error) {
      failed++;
      console.log(`FAIL ${check.name}\n     ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  console.log(`release check: ${checks.length - failed} passed, ${failed} failed`);
  return failed;
}

if (import.meta.main) {
  const targets = Object.keys(TARGETS).filter(isTarget);
  if (!existsSync(join(RELEASE_DIR, "SHA256SUMS"))) fail(`${RELEASE_DIR} has no SHA256SUMS: run npm run release first`);
  const scratch = mkdtempSync(join(tmpdir(), "disagg-proxy-release-check-"));
  const failed = await runChecks(releaseChecks(RELEASE_DIR, targets, sourceCommit(), scratch));
  rmSync(scratch, { recursive: true, force: true });
  process.exit(failed === 0 ? 0 : 1);
}
