import { describe, expect, test } from "bun:test";
import { aliasTarget, chooseModel, modelNamesOf, modelNotFoundMessage } from "./model-choice.ts";

const aliases = [
  { from: "claude-opus-4", to: "big" },
  { from: "claude-*", to: "small" },
  { from: "claude-opus-*", to: "big" },
  { from: "gpt-4o", to: "small" },
  { from: "gpt-4o", to: "big" },
];

describe("chooseModel", () => {
  test("a fleet of one model (or of unknown models) takes every request, whatever it names", () => {
    expect(chooseModel("anything", ["only"], aliases)).toEqual({ kind: "all", key: "only" });
    expect(chooseModel(undefined, [], aliases)).toEqual({ kind: "all", key: "" });
  });

  test("a served name wins over an alias of the same name", () => {
    expect(chooseModel("gpt-4o", ["big", "gpt-4o"], aliases)).toEqual({ kind: "model", key: "gpt-4o" });
  });

  test("an exact alias wins over a pattern, the longest pattern over a shorter one, the first exact alias over a later one", () => {
    expect(aliasTarget("claude-opus-4", aliases)).toBe("big");
    expect(aliasTarget("claude-opus-4-1", aliases)).toBe("big");
    expect(aliasTarget("claude-haiku", aliases)).toBe("small");
    expect(aliasTarget("gpt-4o", aliases)).toBe("small");
    expect(aliasTarget("gpt-5", aliases)).toBeUndefined();
  });

  test("an unserved name, an alias to an unserved model, or no name at all is unknown in a fleet of several", () => {
    const served = ["big", "medium"];
    expect(chooseModel("gpt-5", served, aliases)).toEqual({ kind: "unknown", requested: "gpt-5" });
    expect(chooseModel("claude-haiku", served, aliases)).toEqual({ kind: "unknown", requested: "claude-haiku" });
    expect(chooseModel(undefined, served, aliases)).toEqual({ kind: "unknown", requested: undefined });
    expect(chooseModel("claude-opus-4", served, aliases)).toEqual({ kind: "model", key: "big" });
  });

  test("the refusal names what is served and bounds the echoed name", () => {
    expect(modelNotFoundMessage("x".repeat(10_000), ["a", "b"])).toHaveLength(
      "The model `` does not exist: this proxy serves a, b".length + 256,
    );
    expect(modelNotFoundMessage(undefined, ["a", "b"])).toContain("(a, b)");
  });
});

function names(requested: string | undefined, served: string[]): ReturnType<typeof modelNamesOf> {
  return modelNamesOf(requested, chooseModel(requested, served, aliases));
}

describe("modelNamesOf", () => {
  test("the served model, and the client's name only when it is another", () => {
    expect(names("big", ["big", "small"])).toEqual({ model: "big", requestedModel: undefined });
    expect(names("claude-opus-4", ["big", "small"])).toEqual({ model: "big", requestedModel: "claude-opus-4" });
    expect(names("anything", ["only"])).toEqual({ model: "only", requestedModel: "anything" });
  });

  test("no served model for a refused name or an unknown fleet model; the client's name is capped at 256 characters", () => {
    expect(names("y".repeat(10_000), ["big", "small"])).toEqual({ model: undefined, requestedModel: "y".repeat(256) });
    expect(names("m", [])).toEqual({ model: undefined, requestedModel: "m" });
    expect(names(undefined, ["big", "small"])).toEqual({ model: undefined, requestedModel: undefined });
  });
});
