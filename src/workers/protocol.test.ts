import { describe, expect, test } from "bun:test";
import {
  capabilitiesOf,
  compareVersions,
  parseVersion,
  PROTOCOL_TABLE,
  RELEASES,
  rejectedCapability,
  versionNeededFor,
  workerProtocol,
  type Capability,
} from "./protocol.ts";

const order = (a: string, b: string): number => Math.sign(compareVersions(parseVersion(a)!, parseVersion(b)!));

describe("worker versions", () => {
  test("release numbers order as PEP 440 does: rc below the final release, post above its base", () => {
    expect(order("1.3.0rc18", "1.3.0rc9")).toBe(1);
    expect(order("1.3.0rc26", "1.3.0")).toBe(-1);
    expect(order("1.3.0rc15.post1", "1.3.0rc15")).toBe(1);
    expect(order("1.3.0rc15.post1", "1.3.0rc16")).toBe(-1);
    expect(order("v1.4", "1.3.0")).toBe(1);
    expect(order("1.3.0rc18+cu130", "1.3.0rc18")).toBe(0);
  });

  test("a version that is not a release number is not read", () => {
    expect(parseVersion("emulated")).toBeUndefined();
    expect(parseVersion("")).toBeUndefined();
    expect(parseVersion("1")).toBeUndefined();
  });
});

describe("the capability table", () => {
  test("every row names its upstream source", () => {
    for (const row of PROTOCOL_TABLE) {
      expect(parseVersion(row.since)).toBeDefined();
      expect(row.source).toMatch(/#\d+|openai_protocol\.py @ [0-9a-f]{40}/);
    }
  });

  test("each generation accepts what its release had, an unknown version nothing", () => {
    expect([...capabilitiesOf("1.3.0rc14")]).toEqual([]);
    expect([...capabilitiesOf("1.3.0rc18")].toSorted()).toEqual(["ctx_usage", "disagg_conversation_id"]);
    expect([...capabilitiesOf("1.3.0rc26")].toSorted()).toEqual(["conversation_params", "ctx_usage", "prompt_token_ids_b64"]);
    const rc28: Capability[] = [
      "conversation_params",
      "ctx_usage",
      "prompt_token_ids_b64",
      "resolved_thinking",
      "responses_disaggregation",
    ];
    expect([...capabilitiesOf("1.3.0rc28")].toSorted()).toEqual(rc28);
    // #19351 merged the day of the rc30 and 1.4.0rc0 bumps, after rc29's.
    expect([...capabilitiesOf("1.3.0rc29")].toSorted()).toEqual(rc28);
    const rc30: Capability[] = [...rc28, "injected_chat_template_kwargs"];
    for (const version of ["1.3.0rc30", "1.4.0rc0", "1.4.0rc1"]) expect([...capabilitiesOf(version)].toSorted()).toEqual(rc30.toSorted());
    expect(capabilitiesOf("1.4.0").has("responses_disaggregation")).toBe(true);
    expect([...capabilitiesOf("emulated")]).toEqual([]);
    expect([...capabilitiesOf(undefined)]).toEqual([]);
  });

  test("every row's first (and last) release is a release of the table, listed oldest first", () => {
    const versions = RELEASES.map((release) => release.version);
    for (const row of PROTOCOL_TABLE) {
      expect(versions).toContain(row.since);
      if (row.until !== undefined) expect(versions).toContain(row.until);
    }
    expect(versions.toSorted((a, b) => order(a, b))).toEqual(versions);
    expect(versions).toEqual(expect.arrayContaining(["1.3.0rc29", "1.3.0rc30", "1.4.0rc0"]));
  });

  test("--worker-protocol wins over what a worker reports, which is still shown", () => {
    const overridden = workerProtocol("1.3.0rc14", "1.3.0rc18");
    expect(overridden).toMatchObject({ version: "1.3.0rc14", source: "override" });
    expect(overridden.accepts.has("ctx_usage")).toBe(true);
    expect(workerProtocol(undefined, undefined)).toMatchObject({ version: undefined, source: "unknown" });
    expect(workerProtocol("1.3.0rc18", undefined).source).toBe("reported");
  });

  test("the release a capability needs is its first row", () => {
    expect(versionNeededFor("responses_disaggregation")).toBe("1.3.0rc28");
    expect(versionNeededFor("ctx_usage")).toBe("1.3.0rc18");
  });
});

function pydantic(loc: string): string {
  return `1 validation error for ChatCompletionRequest: [{'type': 'extra_forbidden', 'loc': ('body', ${loc}), 'msg': 'Extra inputs are not permitted', 'input': {}}]`;
}

describe("a 400 naming a field", () => {
  test("names the capability it rejects, among those sent", () => {
    const sent = new Set(["ctx_usage", "conversation_params", "disagg_conversation_id"] as const);
    expect(rejectedCapability(pydantic("'disaggregated_params', 'ctx_usage'"), sent)).toBe("ctx_usage");
    expect(rejectedCapability(pydantic("'conversation_params'"), sent)).toBe("conversation_params");
    expect(rejectedCapability("disaggregated_params.conversation_id\n  Extra inputs are not permitted", sent)).toBe(
      "disagg_conversation_id",
    );
  });

  test("reads only the first error's location, in both spellings, never the client's values the error echoes", () => {
    const sent = new Set(["ctx_usage", "conversation_params", "injected_chat_template_kwargs"] as const);
    // The client's own field, rejected, echoes a value that names other fields: only the location counts.
    const echoed = `1 validation error for CompletionRequest: [{'type': 'extra_forbidden', 'loc': ('body', 'injected_chat_template_kwargs'), 'msg': 'Extra inputs are not permitted', 'input': ['conversation_params ctx_usage']}]`;
    expect(rejectedCapability(echoed, sent)).toBe("injected_chat_template_kwargs");
    // An echo that forges a whole entry comes after the first entry's location, and is not read.
    const forged = `2 validation errors:\n  {'type': 'missing', 'loc': ('body', 'model'), 'msg': 'Field required', 'input': {}}\n  {'type': 'extra_forbidden', 'loc': ('body', 'conversation_params'), 'msg': 'Extra inputs are not permitted', 'input': 1}`;
    expect(rejectedCapability(forged, sent)).toBeUndefined();
    const forgedInValue = `1 validation error: [{'type': 'string_type', 'loc': ('body', 'user'), 'msg': 'x', 'input': "{'type': 'extra_forbidden', 'loc': ('body', 'conversation_params'), "}]`;
    expect(rejectedCapability(forgedInValue, sent)).toBeUndefined();
    // A key of the client's own, however it is spelt, is one element of the location.
    expect(rejectedCapability(pydantic(`"x'), ('body', 'conversation_params"`), sent)).toBeUndefined();
    expect(rejectedCapability(pydantic("'ctx_usage'"), sent)).toBeUndefined();
    const pydanticText =
      "1 validation error for DisaggregatedParams\ndisaggregated_params.ctx_usage\n  Extra inputs are not permitted [type=extra_forbidden, input_value={}, input_type=dict]";
    expect(rejectedCapability(pydanticText, sent)).toBe("ctx_usage");
  });

  test("is not a protocol rejection when it names nothing sent or is another 400", () => {
    expect(rejectedCapability(pydantic("'disaggregated_params', 'ctx_usage'"), new Set(["conversation_params"]))).toBeUndefined();
    expect(rejectedCapability("ctx_usage: value is not a valid dict", new Set(["ctx_usage"]))).toBeUndefined();
    expect(rejectedCapability("maximum context length is 8192 tokens", new Set(["ctx_usage"]))).toBeUndefined();
  });
});
