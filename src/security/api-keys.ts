/**
 * Client authentication: the API keys a client may present, as OpenAI clients send them
 * (`Authorization: Bearer <key>`) or as Anthropic clients do (`x-api-key: <key>`).
 *
 * Only SHA-256 digests of the keys are kept, and a presented key is compared with every
 * configured digest by crypto.timingSafeEqual: the time taken says nothing about the keys, their
 * lengths, or which one matched.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";

export interface ClientKeys {
  /**
   * True when the request carries a valid key: `Authorization: Bearer <k>` or Anthropic's
   * `x-api-key: <k>`. Constant-time comparison of SHA-256 digests, so lengths never leak.
   */
  allows(headers: Headers): boolean;
  /**
   * True when the request carries a valid key as HTTP Basic credentials (`Authorization: Basic`,
   * the key as the password, any user name): how a browser presents it to the dashboard.
   */
  allowsBasic(headers: Headers): boolean;
  /** Number of distinct keys configured. */
  readonly size: number;
}

export interface ClientKeySources {
  /** A file of keys: one per line; blank lines and lines starting with # ignored. */
  readonly file?: string | undefined;
  /** Comma-separated keys, as from an environment variable. */
  readonly env?: string | undefined;
}

const BEARER = /^bearer[ \t]+(\S.*)$/i;
const BASIC = /^basic[ \t]+([A-Za-z0-9+/=]+)$/i;

function digest(bytes: Buffer): Buffer {
  return createHash("sha256").update(bytes).digest();
}

class DigestKeys implements ClientKeys {
  readonly #digests: readonly Buffer[];

  constructor(keys: ReadonlySet<string>) {
    this.#digests = [...keys].map((key) => digest(Buffer.from(key, "utf8")));
  }

  get size(): number {
    return this.#digests.length;
  }

  allows(headers: Headers): boolean {
    const bearer = BEARER.exec(headers.get("authorization")?.trim() ?? "")?.[1]?.trim();
    const apiKey = headers.get("x-api-key")?.trim();
    // Both are checked in full, without an early return, so the answer costs the same either way.
    const viaBearer = bearer !== undefined && bearer !== "" && this.#matches(bearer);
    const viaApiKey = apiKey !== undefined && apiKey !== "" && this.#matches(apiKey);
    return viaBearer || viaApiKey;
  }

  allowsBasic(headers: Headers): boolean {
    const encoded = BASIC.exec(headers.get("authorization")?.trim() ?? "")?.[1];
    if (encoded === undefined) return false;
    // user:password, decoded byte per character as header values are; the user name is not checked.
    const credentials = Buffer.from(encoded, "base64").toString("latin1");
    const password = credentials.slice(credentials.indexOf(":") + 1);
    return password !== "" && this.#matches(password);
  }

  #matches(presented: string): boolean {
    // A header value holds one character per byte received, so a key written in the key file
    // as UTF-8 matches a client that sent its UTF-8 bytes.
    const candidate = digest(Buffer.from(presented, "latin1"));
    let found = false;
    for (const known of this.#digests) found = timingSafeEqual(candidate, known) || found;
    return found;
  }
}

/** Keys in a key file's text: one per line, trimmed; blank lines and `#` comments skipped. */
export function parseKeyFile(text: string): string[] {
  return text
    .split(/\r\n|\r|\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
}

/** Keys in a comma-separated list, trimmed; empty entries skipped. */
export function parseKeyList(text: string): string[] {
  return text
    .split(",")
    .map((key) => key.trim())
    .filter((key) => key !== "");
}

function defaultReadFile(path: string): string {
  return readFileSync(path, "utf8");
}

function keysFromFile(path: string, readFile: (path: string) => string): string[] {
  let text: string;
  try {
    text = readFile(path);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new Error(`Cannot read API key file "${path}": ${detail}`, { cause: error });
  }
  const keys = parseKeyFile(text);
  // A key file that was meant to turn authentication on must not silently leave it off.
  if (keys.length === 0) throw new Error(`Cannot use API key file "${path}": it holds no key`);
  return keys;
}

/**
 * Keys from a file and/or an env value (comma-separated). Returns undefined when no key is
 * configured (no file and a blank or absent env value): authentication is off. Throws an Error
 * naming the file when it cannot be read or holds no key, and when a non-blank env value holds
 * no key (say, only commas).
 */
export function loadClientKeys(sources: ClientKeySources, readFile: (path: string) => string = defaultReadFile): ClientKeys | undefined {
  const keys = new Set<string>();
  if (sources.file !== undefined) for (const key of keysFromFile(sources.file, readFile)) keys.add(key);
  const env = sources.env?.trim() ?? "";
  if (env !== "") {
    const listed = parseKeyList(env);
    if (listed.length === 0) throw new Error("Cannot use the API key list: it holds no key");
    for (const key of listed) keys.add(key);
  }
  return keys.size === 0 ? undefined : new DigestKeys(keys);
}
