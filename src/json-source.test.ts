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

describe("parseJsonSource", () => {
  test("any JSON object, split anywhere, with any string counted long, parses as JSON.parse does", () => {
    assert(
      property(dictionary(string({ unit: "binary" }), jsonValue({ maxDepth: 4, stringUnit: "binary" })), nat(12), array(nat(2000), { maxLength: 5 }), (object, longBytes, cuts) => {
        const text = JSON.stringify(object, null, longBytes % 3);
        expect(parse(text, longBytes, cuts).body).toEqual(parseJson(text) as JsonObject);
      }),
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
    const content = JSON.stringify("é世\n\\\"\ud83d\ude00x").slice(1, -1).repeat(150_000);
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
});
