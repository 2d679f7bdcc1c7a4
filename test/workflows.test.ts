/**
 * .github/workflows/*.yml, checked without GitHub: against the GitHub workflow JSON schema by
 * @action-validator/core (SchemaStore's schema, also resolves `needs`), then by our own reading
 * of the job graph and of what each workflow must run.
 */

import { describe, expect, test } from "bun:test";
import { validateWorkflow } from "@action-validator/core";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { isJsonObject, type JsonObject, type JsonValue } from "../src/json/json.ts";

const ROOT = join(import.meta.dir, "..");
const DIR = join(ROOT, ".github", "workflows");
const read = (name: string): string => readFileSync(join(DIR, name), "utf8");

function parse(text: string): JsonObject {
  const value: unknown = Bun.YAML.parse(text);
  if (!isJsonObject(value)) throw new Error("a workflow is a mapping");
  return value;
}

function jobsOf(workflow: JsonObject): Map<string, JsonObject> {
  const jobs = workflow["jobs"];
  if (!isJsonObject(jobs)) throw new Error("no jobs");
  return new Map(Object.entries(jobs).map(([name, job]) => [name, isJsonObject(job) ? job : {}]));
}

function needsOf(job: JsonObject): string[] {
  const needs = job["needs"];
  if (needs === undefined) return [];
  return (Array.isArray(needs) ? needs : [needs]).map(String);
}

/** Names of needs that name no job, and whether following needs ever comes back to a job. */
function jobGraphProblems(jobs: Map<string, JsonObject>): string[] {
  const problems: string[] = [];
  for (const [name, job] of jobs) {
    for (const need of needsOf(job)) if (!jobs.has(need)) problems.push(`${name} needs ${need}, which is not a job`);
  }
  const state = new Map<string, "visiting" | "done">();
  const visit = (name: string, path: string[]): void => {
    if (state.get(name) === "done" || !jobs.has(name)) return;
    if (state.get(name) === "visiting") {
      problems.push(`cycle: ${[...path, name].join(" -> ")}`);
      return;
    }
    state.set(name, "visiting");
    for (const need of needsOf(jobs.get(name) ?? {})) visit(need, [...path, name]);
    state.set(name, "done");
  };
  for (const name of jobs.keys()) visit(name, []);
  return problems;
}

/** Every `run:` of every step of every job, in order. */
function runLines(workflow: JsonObject): string[] {
  const lines: string[] = [];
  for (const job of jobsOf(workflow).values()) {
    const steps: JsonValue | undefined = job["steps"];
    for (const step of Array.isArray(steps) ? steps : []) {
      if (isJsonObject(step) && typeof step["run"] === "string") lines.push(step["run"].trim());
    }
  }
  return lines;
}

describe("the GitHub workflows", () => {
  const files = readdirSync(DIR).filter((name) => name.endsWith(".yml"));

  test("there are exactly ci.yml and release.yml", () => {
    expect(files.toSorted()).toEqual(["ci.yml", "release.yml"]);
  });

  for (const file of files) {
    test(`${file} passes the GitHub workflow schema check`, () => {
      expect(validateWorkflow(read(file)).errors).toEqual([]);
    });

    test(`${file}'s jobs need only jobs that exist, without a cycle`, () => {
      expect(jobGraphProblems(jobsOf(parse(read(file))))).toEqual([]);
    });
  }

  test("the checks catch a misspelt key, an unknown needed job and a cycle", () => {
    const release = read("release.yml");
    expect(validateWorkflow(release.replace("runs-on:", "runs_on:")).errors).not.toEqual([]);
    const misspelt = release.replace("needs: [build]", "needs: [biuld]");
    expect(validateWorkflow(misspelt).errors.map((error) => error.code)).toContain("unresolved_job");
    expect(jobGraphProblems(jobsOf(parse(misspelt)))).toEqual(["publish needs biuld, which is not a job"]);
    const cyclic = new Map<string, JsonObject>([
      ["a", { needs: ["b"] }],
      ["b", { needs: "a" }],
    ]);
    expect(jobGraphProblems(cyclic)).toEqual(["cycle: a -> b -> a"]);
  });

  test("ci.yml runs .ci/run on pushes to main and on pull requests", () => {
    const ci = parse(read("ci.yml"));
    expect(Object.keys(isJsonObject(ci["on"]) ? ci["on"] : {}).toSorted()).toEqual(["pull_request", "push"]);
    expect(runLines(ci)).toContain("bash .ci/run");
  });

  test("release.yml runs on version tags, checks with the same commands as .ci/run and attaches dist/release only after the check", () => {
    const release = parse(read("release.yml"));
    expect(release["on"]).toEqual({ push: { tags: ["v*"] } });
    const jobs = jobsOf(release);
    const build = runLines({ jobs: { build: jobs.get("build") ?? {} } });
    expect(build.indexOf("npm run release")).toBeGreaterThan(build.indexOf("npm ci --no-audit --no-fund"));
    expect(build.indexOf("npm run release:check")).toBeGreaterThan(build.indexOf("npm run release"));
    expect(readFileSync(join(ROOT, ".ci", "run"), "utf8")).toContain("{ npm run -s release && npm run -s release:check; }");
    expect(needsOf(jobs.get("publish") ?? {})).toEqual(["build"]);
    const publish = runLines({ jobs: { publish: jobs.get("publish") ?? {} } });
    expect(publish).toContain("sha256sum --check --strict SHA256SUMS");
    expect(publish.some((line) => line.startsWith('gh release create "$GITHUB_REF_NAME" dist/release/*'))).toBe(true);
  });
});
