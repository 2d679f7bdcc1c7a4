import { describe, expect, test } from "bun:test";
import { didYouMean, editDistance } from "./did-you-mean.ts";

describe("didYouMean", () => {
  test("counts insertions, deletions and substitutions", () => {
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("same", "same")).toBe(0);
  });

  test("suggests the nearest key for a typo, ignoring case and dashes", () => {
    const keys = ["schedule_style", "max_retries", "context_servers", "generation_servers"];
    expect(didYouMean("schedule_styel", keys)).toBe("schedule_style");
    expect(didYouMean("Max-Retries", keys)).toBe("max_retries");
    expect(didYouMean("generation_server", keys)).toBe("generation_servers");
  });

  test("suggests nothing for a name far from every key", () => {
    expect(didYouMean("frobnicate", ["schedule_style", "max_retries"])).toBeUndefined();
    expect(didYouMean("ab", ["xy"])).toBeUndefined();
  });
});
