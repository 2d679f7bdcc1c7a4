import { describe, expect, test } from "bun:test";
import { parseClientJson, type JsonObject } from "../json/json.ts";
import { checkNumericBounds } from "./numeric-bounds.ts";

/** "ok", or the refusal's message, for a body given as JSON text (large integers kept exact). */
function verdict(text: string): string {
  try {
    checkNumericBounds(parseClientJson(text) as JsonObject);
    return "ok";
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

describe("checkNumericBounds", () => {
  test("integer fields pass at their ends and are refused one beyond, however written", () => {
    expect(verdict('{"max_tokens": 1}')).toBe("ok");
    expect(verdict('{"max_tokens": 2147483647}')).toBe("ok");
    expect(verdict('{"max_tokens": 0}')).toContain("max_tokens must be an integer from 1 to 2147483647");
    expect(verdict('{"max_tokens": 2147483648}')).toContain("max_tokens must be an integer");
    expect(verdict('{"max_tokens": 2.5}')).toContain("max_tokens must be an integer");
    expect(verdict('{"max_tokens": "16"}')).toContain("max_tokens must be an integer");
    expect(verdict('{"top_k": 0, "min_tokens": 0}')).toBe("ok");
    expect(verdict('{"top_k": -1}')).toContain("top_k must be an integer from 0");
  });

  test("a seed is any integer a uint64 holds, beyond 2^53 too", () => {
    expect(verdict('{"seed": 0}')).toBe("ok");
    expect(verdict('{"seed": 9007199254740991}')).toBe("ok");
    expect(verdict('{"seed": 18446744073709551615}')).toBe("ok");
    expect(verdict('{"seed": 18446744073709551616}')).toContain("seed must be an integer from 0 to 18446744073709551615");
    expect(verdict('{"seed": -1}')).toContain("seed must be an integer");
  });

  test("null and absent fields pass, and the first field out of bounds is the one named", () => {
    expect(verdict('{"max_tokens": null, "temperature": null}')).toBe("ok");
    expect(verdict('{"n": 0, "max_tokens": 0}')).toContain("max_tokens");
  });
});
