import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ClientKeys, loadClientKeys, parseKeyFile, parseKeyList } from "./api-keys.ts";

const files: Record<string, string> = {
  "keys.txt": "# operators\n  sk-one  \n\n\t# old key, kept as a comment\nsk-two\r\nsk-one\n",
};
const read = (path: string): string => {
  const text = files[path];
  if (text === undefined) throw new Error(`ENOENT: no such file or directory, open '${path}'`);
  return text;
};

function load(sources: { file?: string; env?: string }): ClientKeys {
  const keys = loadClientKeys(sources, read);
  if (keys === undefined) throw new TypeError("Expected keys to be configured");
  return keys;
}

const headers = (init: Record<string, string>): Headers => new Headers(init);

describe("loadClientKeys", () => {
  test("no file and no env value means authentication is off", () => {
    expect(loadClientKeys({}, read)).toBeUndefined();
    expect(loadClientKeys({ file: undefined, env: undefined }, read)).toBeUndefined();
    expect(loadClientKeys({ env: "  " }, read)).toBeUndefined();
  });

  test("a key file gives one key per line, trimmed, without blanks, comments or duplicates", () => {
    expect(parseKeyFile(files["keys.txt"]!)).toEqual(["sk-one", "sk-two", "sk-one"]);
    expect(load({ file: "keys.txt" }).size).toBe(2);
  });

  test("an env value gives comma-separated keys, trimmed, empty entries skipped", () => {
    expect(parseKeyList(" a , b,,c ")).toEqual(["a", "b", "c"]);
    expect(load({ env: " a , b,,c " }).size).toBe(3);
  });

  test("file and env keys are combined", () => {
    const keys = load({ file: "keys.txt", env: "sk-env,sk-one" });
    expect(keys.size).toBe(3);
    expect(keys.allows(headers({ authorization: "Bearer sk-env" }))).toBe(true);
    expect(keys.allows(headers({ authorization: "Bearer sk-two" }))).toBe(true);
  });

  test("a file that cannot be read throws an Error naming the file and the cause", () => {
    expect(() => loadClientKeys({ file: "missing.txt" }, read)).toThrow(/Cannot read API key file "missing.txt": ENOENT/);
  });

  test("a key file with only comments and blank lines throws instead of leaving authentication off", () => {
    files["empty.txt"] = "# none yet\n\n";
    expect(() => loadClientKeys({ file: "empty.txt" }, read)).toThrow(/"empty.txt": it holds no key/);
  });

  test("an env value of only commas throws instead of leaving authentication off", () => {
    expect(() => loadClientKeys({ env: " , ," }, read)).toThrow(/holds no key/);
  });
});

describe("loadClientKeys with the real file system", () => {
  const dir = mkdtempSync(join(tmpdir(), "api-keys-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("reads a key file from disk by default", () => {
    const path = join(dir, "keys");
    writeFileSync(path, "sk-disk\n");
    expect(loadClientKeys({ file: path })?.allows(headers({ "x-api-key": "sk-disk" }))).toBe(true);
  });

  test("a missing file on disk throws an Error naming it", () => {
    const path = join(dir, "absent");
    expect(() => loadClientKeys({ file: path })).toThrow(`Cannot read API key file "${path}"`);
  });
});

describe("ClientKeys.allows", () => {
  const keys = load({ env: "sk-live-123,другой-ключ" });

  test("accepts a configured key as an OpenAI bearer token, any scheme case, surrounding spaces trimmed", () => {
    expect(keys.allows(headers({ authorization: "Bearer sk-live-123" }))).toBe(true);
    expect(keys.allows(headers({ authorization: "bearer   sk-live-123  " }))).toBe(true);
    expect(keys.allows(headers({ Authorization: "BEARER sk-live-123" }))).toBe(true);
  });

  test("accepts a configured key as Anthropic's x-api-key", () => {
    expect(keys.allows(headers({ "x-api-key": "sk-live-123" }))).toBe(true);
  });

  test("a non-ASCII key matches when the client sends its UTF-8 bytes, as a server receives them", () => {
    const onTheWire = Buffer.from("другой-ключ", "utf8").toString("latin1");
    expect(keys.allows(headers({ "X-Api-Key": onTheWire }))).toBe(true);
    expect(keys.allows(headers({ authorization: `Bearer ${onTheWire}` }))).toBe(true);
  });

  test("accepts a request when either header carries a valid key", () => {
    expect(keys.allows(headers({ authorization: "Bearer wrong", "x-api-key": "sk-live-123" }))).toBe(true);
    expect(keys.allows(headers({ authorization: "Bearer sk-live-123", "x-api-key": "wrong" }))).toBe(true);
  });

  test("rejects no key, a wrong key, a prefix or extension of a key, and other schemes", () => {
    const rejected = [
      {},
      { authorization: "Bearer sk-live-12" },
      { authorization: "Bearer sk-live-1234" },
      { authorization: "Bearer " },
      { authorization: "sk-live-123" },
      { authorization: "Basic sk-live-123" },
      { authorization: "Bearersk-live-123" },
      { "x-api-key": "" },
      { "x-api-key": "Bearer sk-live-123" },
      { "x-api-key": "SK-LIVE-123" },
    ];
    for (const init of rejected) expect({ init, allowed: keys.allows(headers(init)) }).toEqual({ init, allowed: false });
  });
});

function basic(credentials: string): Headers {
  return new Headers({ authorization: `Basic ${Buffer.from(credentials, "latin1").toString("base64")}` });
}

describe("Basic credentials (the dashboard in a browser)", () => {
  test("a key as the Basic password is accepted whatever the user name", () => {
    const keys = load({ env: "sk-one,sk-two" });
    expect(keys.allowsBasic(basic(":sk-two"))).toBe(true);
    expect(keys.allowsBasic(basic("admin:sk-one"))).toBe(true);
  });

  test("a wrong or empty password, a key in the user name, or a bearer token is refused", () => {
    const keys = load({ env: "sk-one" });
    expect(keys.allowsBasic(basic("admin:sk-wrong"))).toBe(false);
    expect(keys.allowsBasic(basic("sk-one:"))).toBe(false);
    expect(keys.allowsBasic(new Headers({ authorization: "Bearer sk-one" }))).toBe(false);
    expect(keys.allowsBasic(new Headers())).toBe(false);
  });

  test("Basic credentials do not open the API routes", () => {
    expect(load({ env: "sk-one" }).allows(basic(":sk-one"))).toBe(false);
  });
});
