import { describe, expect, test } from "bun:test";
import { array, assert, constantFrom, json, nat, property } from "fast-check";
import { JsonShapeGuard, type JsonShapeLimits } from "./json-shape.ts";

const limits: JsonShapeLimits = { maxDepth: 4, minValues: 10, bytesPerValue: 1000 };
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

function check(text: string, cuts: readonly number[] = []): ReturnType<JsonShapeGuard["feed"]> {
  const all = bytes(text);
  const guard = new JsonShapeGuard(limits, all.length);
  let at = 0;
  for (const cut of cuts.toSorted((a, b) => a - b)) {
    const problem = guard.feed(all.subarray(at, Math.max(at, Math.min(cut, all.length))));
    if (problem) return problem;
    at = Math.max(at, Math.min(cut, all.length));
  }
  return guard.feed(all.subarray(at)) ?? guard.finish(all.length);
}

describe("JsonShapeGuard", () => {
  test("nesting up to the bound passes and one level more is refused", () => {
    expect(check("[[[[1]]]]")).toBeUndefined();
    expect(check("[[[[[1]]]]]")).toEqual({ bound: "depth", limit: 4 });
    expect(check('{"a":{"b":{"c":{"d":{}}}}}')).toEqual({ bound: "depth", limit: 4 });
  });

  test("brackets, quotes and escapes inside strings are not structure", () => {
    expect(check('{"a":"[[[[[[[[{{{{{{\\"[[[[[[\\\\"}')).toBeUndefined();
    expect(check('["\\\\",[[[[1]]]]]')).toEqual({ bound: "depth", limit: 4 });
  });

  test("keys and strings count 1, numbers and literals 1/4", () => {
    expect(check(`[${Array.from({ length: 9 }, () => '"s"').join(",")}]`)).toBeUndefined();
    expect(check(`[${Array.from({ length: 10 }, () => '"s"').join(",")}]`)).toEqual({ bound: "values", limit: 10 });
    expect(check(`[${Array.from({ length: 35 }, (_, i) => (i % 2 ? "true" : "-12.5e3")).join(",")}]`)).toBeUndefined();
    expect(check(`[${Array.from({ length: 37 }, (_, i) => (i % 2 ? "true" : "-12.5e3")).join(",")}]`)).toEqual({
      bound: "values",
      limit: 10,
    });
    expect(check(`{${Array.from({ length: 10 }, (_, i) => `"k${i}":null`).join(",")}}`)).toEqual({ bound: "values", limit: 10 });
  });

  test("the value bound grows with the body's size", () => {
    const guard = new JsonShapeGuard({ maxDepth: 4, minValues: 2, bytesPerValue: 4 }, 1000);
    expect(guard.feed(bytes('["a","b","c"]'))).toBeUndefined();
    expect(guard.finish(13)).toEqual({ bound: "values", limit: 3 });
  });

  test("a list of numbers, split anywhere, weighs 1/4 a number", () => {
    const numbers = array(constantFrom("0", "12", "-3", "4.5e-6", "1E+2", "true", "null", '"s"', "[]"), { maxLength: 60 });
    assert(
      property(numbers, array(nat(400), { maxLength: 6 }), (items, cuts) => {
        const weight = 3 + items.reduce((sum, item) => sum + (item === '"s"' || item === "[]" ? 1 : 0.25), 0);
        const expected = weight > limits.minValues ? { bound: "values" as const, limit: limits.minValues } : undefined;
        expect(check(`{"k":[${items.join(",")}]}`, cuts)).toEqual(expected);
      }),
    );
  });

  test("the verdict does not depend on how the body is split", () => {
    const body = '{"m":"x\\"]","l":[[1,"[",{"k":"\\\\"}],[[[true]]]],"n":null}';
    const whole = check(body);
    assert(property(array(nat(body.length), { maxLength: 12 }), (cuts) => expect(check(body, cuts)).toEqual(whole)));
    expect(whole).toEqual({ bound: "values", limit: 10 });
  });

  test("on any JSON text, split anywhere, depth is refused exactly when it is over the bound", () => {
    const depthOf = (value: unknown): number =>
      typeof value === "object" && value !== null ? 1 + Math.max(0, ...Object.values(value).map(depthOf)) : 0;
    const loose: JsonShapeLimits = { maxDepth: 3, minValues: 1e9, bytesPerValue: 1 };
    assert(
      property(json({ maxDepth: 6 }), array(nat(400), { maxLength: 6 }), (text, cuts) => {
        const all = bytes(text);
        const guard = new JsonShapeGuard(loose, all.length);
        let at = 0;
        let problem: ReturnType<JsonShapeGuard["feed"]>;
        for (const cut of [...cuts, all.length].map((c) => Math.min(c, all.length)).toSorted((a, b) => a - b)) {
          problem ??= guard.feed(all.subarray(at, Math.max(at, cut)));
          at = Math.max(at, cut);
        }
        expect(problem?.bound === "depth").toBe(depthOf(JSON.parse(text)) > 3);
      }),
    );
  });
});
