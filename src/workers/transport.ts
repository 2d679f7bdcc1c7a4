import { readFileSync } from "node:fs";

/** fetch as every call to a worker makes it: the worker CA and the worker API key applied. */
export type WorkerFetch = (url: string, init?: BunFetchRequestInit) => Promise<Response>;

export interface WorkerTransportOptions {
  /** PEM bundle trusted for https:// workers, in addition to the system's. */
  readonly caFile?: string | undefined;
  /** Sent as `Authorization: Bearer` to workers (never the client's own key). */
  readonly apiKey?: string | undefined;
}

export function createWorkerFetch(options: WorkerTransportOptions, readFile = (path: string) => readFileSync(path, "utf8")): WorkerFetch {
  const ca = options.caFile === undefined ? undefined : readFile(options.caFile);
  const authorization = options.apiKey === undefined ? undefined : `Bearer ${options.apiKey}`;
  if (ca === undefined && authorization === undefined) return (url, init) => fetch(url, init);
  return (url, init = {}) => {
    const headers = new Headers(init.headers);
    if (authorization !== undefined) headers.set("authorization", authorization);
    return fetch(url, { ...init, headers, ...(ca === undefined ? {} : { tls: { ca } }) });
  };
}
