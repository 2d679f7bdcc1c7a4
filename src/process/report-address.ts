import { renameSync, writeFileSync } from "node:fs";

/**
 * `--report_addr FILE`: the bound `host:port`, written to a temporary file beside FILE and
 * renamed over it, so a launcher polling FILE never reads half a line (as trtllm-serve does).
 */
export function writeReportAddress(file: string, host: string, url: URL): void {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${host}:${url.port}`);
  renameSync(temporary, file);
}

/** With --port 0 the bound URL is the first stdout line, so scripts and tests find the port. */
export function announce(url: URL, requestedPort: number): void {
  if (requestedPort === 0) process.stdout.write(`${url.origin}\n`);
}
