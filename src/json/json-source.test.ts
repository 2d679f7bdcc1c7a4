import { describe, expect, test } from "bun:test";
import { array, assert, dictionary, jsonValue, nat, property, string } from "fast-check";
import { JsonShapeGuard } from "./json-shape.ts";
import { parseJson, type JsonObject } from "./json.ts";
import { decodeString, parseJsonSource, type ParsedBody } from "./json-source.ts";

const LOOSE = { maxDepth: 128, minValues: 1e9, bytesPerValue: 1 };
const encoder = new TextEncoder();

/** Scans `text` split at `cuts` with strings of `longBytes`+ recorded as long, then parses it. */
function parse(text: string, longBytes: number, cuts: readonly number[] = []): ParsedBody {
  const bytes = encoder.encode(text);
  const guard = new JsonShapeGuard(LOOSE, bytes.length, longBytes);
  let at = 0;
  for (const cut of [...cuts.toSorted((a, b) => a - b), bytes.length]) {
    const to = Math.max(at, Math.min(cut, bytes.length));
    guard.feed(bytes.subarray(at, to));
    at = to;
  }
  expect(guard.finish(bytes.length)).toBeUndefined();
  return parseJsonSource(bytes, guard.layout());
}

const memberText = (parsed: ParsedBody, key: string): string => {
  const member = parsed.source.members.get(key);
  return member === undefined ? "" : new TextDecoder().decode(parsed.source.bytes.subarray(member.start, member.end));
};

/** The best of three times to decode a string of `kib` KiB of escaped backslashes, in 4 KiB pieces. */
function decodeBackslashesMs(kib: number): number {
  const bytes = encoder.encode(`"${"\\\\".repeat(kib * 512)}"`);
  let best = Infinity;
  for (let round = 0; round < 3; round++) {
    const started = performance.now();
    decodeString(bytes, 0, bytes.length, true, 4096);
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

describe("parseJsonSource", () => {
  test("any JSON object, split anywhere, with any string counted long, parses as JSON.parse does", () => {
    assert(
      property(
        dictionary(string({ unit: "binary" }), jsonValue({ maxDepth: 4, stringUnit: "binary" })),
        nat(12),
        array(nat(2000), { maxLength: 5 }),
        (object, longBytes, cuts) => {
          const text = JSON.stringify(object, null, longBytes % 3);
          expect(parse(text, longBytes, cuts).body).toEqual(parseJson(text) as JsonObject);
        },
      ),
    );
  });

  test("each top-level member is found as its key and value's bytes, the last of a repeated key", () => {
    const parsed = parse('{ "model" : "m", "n":[1, {"x":"}"}] ,"a\\"b":null,"n":2 }', 1);
    expect([...parsed.source.members.keys()]).toEqual(["model", "n", 'a"b']);
    expect(memberText(parsed, "model")).toBe('"model" : "m"');
    expect(memberText(parsed, 'a"b')).toBe('"a\\"b":null');
    expect(memberText(parsed, "n")).toBe('"n":2 ');
    expect(parsed.source.members.get("n")?.value).toBe(2);
  });

  test("long strings are decoded from the bytes: escapes, surrogate pairs and UTF-8 across piece boundaries", () => {
    const content = JSON.stringify('é世\n\\"\ud83d\ude00x').slice(1, -1).repeat(150_000);
    const text = `{"messages":[{"role":"user","content":"${content}"}],"k":"${"y".repeat(70_000)}"}`;
    expect(parse(text, 65_536).body).toEqual(JSON.parse(text));
  });

  test("a body that is not JSON, not UTF-8 or not an object is refused with a 400", () => {
    expect(() => parse('{"a":"x\ny"}', 1)).toThrow("not valid JSON");
    expect(() => parse('{"a":"x\ny"}', 100)).toThrow("not valid JSON");
    expect(() => parse('{"a":1 "long string"}', 1)).toThrow("not valid JSON");
    expect(() => parse("[1]", 1)).toThrow("must be a JSON object");
    const bytes = new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]);
    const guard = new JsonShapeGuard(LOOSE, bytes.length);
    guard.feed(bytes);
    expect(() => parseJsonSource(bytes, guard.layout())).toThrow("not valid UTF-8");
  });

  test("a client string that looks like a placeholder is its own text", () => {
    const text = `{"a":"\uf8ff0","b":"${"z".repeat(40)}"}`;
    expect(parse(text, 10).body).toEqual({ a: "\uf8ff0", b: "z".repeat(40) });
  });

  test("decodeString reads any string, escaped or not, from its quoted bytes", () => {
    assert(
      property(string({ unit: "binary" }), (value) => {
        const quoted = JSON.stringify(value);
        const bytes = encoder.encode(`${quoted},${quoted}`);
        expect(decodeString(bytes, 0, encoder.encode(quoted).length, quoted.includes("\\"))).toBe(value);
      }),
    );
  });

  test("a U+FEFF is the client's character wherever a string holds it; before the body it is passed over; between tokens it is refused", () => {
    const bom = "\ufeff";
    for (const longBytes of [10, 1000]) {
      expect(parse(`{"a":"${bom}${"x".repeat(20)}","b":"${bom}\\n${"y".repeat(20)}"}`, longBytes).body).toEqual({
        a: `${bom}${"x".repeat(20)}`,
        b: `${bom}\n${"y".repeat(20)}`,
      });
      expect(parse(`${bom}{"a":"${"x".repeat(20)}"}`, longBytes).body).toEqual({ a: "x".repeat(20) });
      // After a long string's closing quote: a worker's JSON reader refuses it, and so does the proxy.
      expect(() => parse(`{"a":"${"x".repeat(20)}"${bom}}`, longBytes)).toThrow("not valid JSON");
    }
  });

  test("a long string under a repeated key is checked like any other, though the parse drops it", () => {
    const invalid = new Uint8Array([...encoder.encode(`{"m":[{"c":"${"x".repeat(20)}`), 0xff, ...encoder.encode('","c":"hi"}]}')]);
    const guard = new JsonShapeGuard(LOOSE, invalid.length, 10);
    guard.feed(invalid);
    expect(() => parseJsonSource(invalid, guard.layout())).toThrow("not valid UTF-8");
    expect(() => parse(`{"m":[{"c":"${"x".repeat(20)}\\u00zz","c":"hi"}]}`, 10)).toThrow("not valid JSON");
    // A raw tab: control characters must be escaped.
    expect(() => parse(`{"m":[{"c":"${"x".repeat(20)}\t","c":"hi"}]}`, 10)).toThrow("not valid JSON");
  });

  test("a non-ASCII key is never taken for the Latin-1 reading of its UTF-8 bytes", () => {
    const parsed = parse('{"\\u00c3\\u00a9":1,"é":"EVIL","1":0,"model":"a","é":"GOOD"}', 1000);
    expect(parsed.source.members.get("é")?.value).toBe("GOOD");
    expect(memberText(parsed, "é")).toBe('"é":"GOOD"');
    expect(memberText(parsed, "Ã©")).toBe('"\\u00c3\\u00a9":1');
  });

  test("a long run of escaped backslashes is decoded in time linear in its length", () => {
    // Each cut between pieces once counted the backslashes back to the string's start.
    decodeBackslashesMs(256);
    // Linear: about 4x the time for 4x the bytes; quadratic: about 16x.
    expect(decodeBackslashesMs(4096) / decodeBackslashesMs(1024)).toBeLessThan(9);
  });

  test("a long top-level list of integers is read from the bytes, as parseJson would read it", () => {
    const ids = Array.from({ length: 20_000 }, (_, i) => (i % 5 === 0 ? -i - 1 : i * 31));
    const list = JSON.stringify(ids).replaceAll(",", " ,\n");
    for (const text of [
      `{"model":"m","prompt": ${list} ,"x":"${"y".repeat(9000)}"}`,
      `{"prompt":${list},"prompt":[1,2]}`,
      `{"prompt":[${ids.join(",")},12345678901234567]}`,
      `{"prompt":[${ids.join(",")},1.5]}`,
      `{"nested":{"prompt":${list}}}`,
    ]) {
      expect(parse(text, 8192).body).toEqual(parseJson(text) as JsonObject);
    }
    expect(() => parse(`{"prompt":[${ids.join(",")},]}`, 8192)).toThrow("not valid JSON");
  });
});
