/**
 * `npm run demo` stops with the signal its npm gets: npm passes SIGTERM and SIGINT to the
 * script's shell, which must hand them to the server (exec), or `kill` of npm left it serving.
 */

import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { eventually } from "./support/wait.ts";

const ROOT = join(import.meta.dir, "..");

async function refuses(url: string): Promise<boolean> {
  return fetch(`${url}/health`).then(
    () => false,
    () => true,
  );
}

describe("npm run demo", () => {
  test.each([["SIGTERM"], ["SIGINT"]] as const)(
    "%s to npm stops the demo's server",
    async (signal) => {
      const npm = Bun.spawn(["npm", "run", "--silent", "demo", "--", "--port", "0"], {
        cwd: ROOT,
        stdout: "pipe",
        stderr: "pipe",
        stdin: "ignore",
      });
      try {
        const reader = npm.stdout.getReader();
        let text = "";
        while (!/proxy: +(http:\/\/\S+)/.test(text)) {
          // oxlint-disable-next-line no-await-in-loop -- the banner comes in pieces
          const { done, value } = await reader.read();
          if (done) throw new Error(`npm run demo ended: ${text}${await new Response(npm.stderr).text()}`);
          text += new TextDecoder().decode(value);
        }
        const url = /proxy: +(http:\/\/\S+)/.exec(text)![1]!;
        expect((await fetch(`${url}/health`)).status).toBe(200);
        npm.kill(signal);
        await npm.exited;
        await eventually(() => refuses(url), 10_000, "the demo's server stopped");
      } finally {
        npm.kill("SIGKILL");
      }
    },
    60_000,
  );
});
