/**
 * Worker protocol generations: which optional request fields a trtllm-serve worker of a given
 * version accepts. Its request models forbid unknown fields (tensorrt_llm/serve/openai_protocol.py:
 * `OpenAIBaseModel` is `extra="forbid"`; `ResponsesRequest` alone is `extra="allow"`), so a field
 * a newer worker needs is a 400 on an older one. The proxy is version-independent: it learns each
 * worker's version (GET /version, or the etcd metadata registration) and sends each only what
 * its version takes. An unknown version gets the conservative set: none of these fields.
 *
 * Releases are inferred from each PR's merge date and the version-bump commits (RELEASES below),
 * rounding up to the first release that surely has the change: a worker slightly newer than its
 * row only loses an optional field. Where a change merged the day of a bump, so that the order
 * is unknown, the row takes that bump's release when withholding the field could fail a request
 * and sending it cannot (a worker without it answers 400 naming it, which the proxy absorbs:
 * the field is dropped for that worker and the request retried once).
 * `--worker-protocol <version>` overrides the lot when a deployment knows better.
 */

/** An optional field (or behaviour) that only some worker versions accept. */
export type Capability =
  /** disaggregated_params.ctx_usage: the generation worker reports the context phase's prompt/cached tokens. */
  | "ctx_usage"
  /** Top-level conversation_params {conversation_id}. */
  | "conversation_params"
  /** The older disaggregated_params.conversation_id (removed when conversation_params took over). */
  | "disagg_conversation_id"
  /** Chat injected_chat_template_kwargs (the Anthropic adapter's server-derived template keys). */
  | "injected_chat_template_kwargs"
  /** disaggregated_params.return_prompt_token_ids_b64 and the chat prompt_token_ids_b64 it yields. */
  | "prompt_token_ids_b64"
  /** disaggregated_params.resolved_thinking, carried from the context answer to the generation request. */
  | "resolved_thinking"
  /** /v1/responses runs context_only / generation_only (older workers answer it aggregated). */
  | "responses_disaggregation";

export const CAPABILITIES: readonly Capability[] = [
  "ctx_usage",
  "conversation_params",
  "disagg_conversation_id",
  "injected_chat_template_kwargs",
  "prompt_token_ids_b64",
  "resolved_thinking",
  "responses_disaggregation",
];

interface Row {
  readonly capability: Capability;
  /** First release known to accept it. */
  readonly since: string;
  /** First release that rejects it again, when it was removed. */
  readonly until?: string;
  /** Where the field comes from upstream. */
  readonly source: string;
}

/** THE table. Versions are PEP 440 as trtllm-serve's GET /version reports them (tensorrt_llm/version.py). */
export const PROTOCOL_TABLE: readonly Row[] = [
  {
    capability: "ctx_usage",
    since: "1.3.0rc18",
    source:
      "NVIDIA/TensorRT-LLM#14177 (merged 2026-05, 'Fix disaggregated usage propagation'): DisaggregatedParams.ctx_usage: " +
      "Optional[UsageInfo] in tensorrt_llm/serve/openai_protocol.py; openai_disagg_service.py _get_gen_request sets " +
      "ctx_usage = ctx_response.usage; the worker rewrites its usage from it",
  },
  {
    capability: "disagg_conversation_id",
    since: "1.3.0rc18",
    until: "1.3.0rc26",
    source:
      "DisaggregatedParams.conversation_id, read by the conversation router (#12526, 2026-03; present as of #14722, 2026-05-29); " +
      "removed by #17618 (merged 2026-08-13, 'BREAKING remove conversation ID from disaggregated params')",
  },
  {
    capability: "conversation_params",
    since: "1.3.0rc26",
    source:
      "ConversationParams (#15452, 2026-06-17) made the only body source of the id by #17618 (2026-08-13); " +
      "openai_protocol.py ConversationParams(extra=forbid), subagent_affinity_id excluded from the body",
  },
  {
    capability: "prompt_token_ids_b64",
    since: "1.3.0rc26",
    source:
      "DisaggregatedParams.return_prompt_token_ids_b64 and ChatCompletionRequest.prompt_token_ids_b64 " +
      "(openai_protocol.py @ 0076e9390e1ed11515f149eec356f5a03f4a00d8; service _get_ctx_request passes it explicitly)",
  },
  {
    capability: "resolved_thinking",
    since: "1.3.0rc28",
    source: "DisaggregatedParams.resolved_thinking (openai_protocol.py @ 0076e9390e1ed11515f149eec356f5a03f4a00d8)",
  },
  {
    capability: "injected_chat_template_kwargs",
    // #19351 merged 2026-09-29 (ae3531adf3), the day 1.3.0rc30 and 1.4.0rc0 were bumped, six days
    // after 1.3.0rc29: rc28 and rc29 reject the field. Of the two same-day releases the earlier is
    // taken: the guard #19351 adds may refuse the adapter's template keys when the list is withheld.
    since: "1.3.0rc30",
    source:
      "ChatCompletionRequest.injected_chat_template_kwargs, set by the Anthropic adapter and exempted by the " +
      "unused-kwargs guard (#19351, merged 2026-09-29 as ae3531adf3; serve/chat_utils chat_template_kwargs_for_request)",
  },
  {
    capability: "responses_disaggregation",
    since: "1.3.0rc28",
    source:
      "NVIDIA/TensorRT-LLM#18497 (2026-09-01, 'Responses API: support disaggregated serving'); before it " +
      "ResponsesRequest (extra=allow) ignores disaggregated_params and the worker answers aggregated",
  },
];

/** A release the table was checked against: its version-bump commit, and what changed for the proxy's requests. */
export interface Release {
  readonly version: string;
  /** The version-bump commit or PR and its date (upstream's weekly change reports), where known. */
  readonly bump: string | undefined;
  readonly changes: string;
}

/**
 * THE releases, oldest first: every row's `since`/`until` is one of them (a test keeps it so).
 * The newest upstream code readable here is dated 2026-10-05; a release after 1.4.0rc0 gets
 * 1.4.0rc0's fields until a row says otherwise.
 */
export const RELEASES: readonly Release[] = [
  { version: "1.3.0rc14", bump: undefined, changes: "the oldest played: no optional field" },
  { version: "1.3.0rc15.post1", bump: "#14690, 2026-05-28", changes: "none for the proxy" },
  { version: "1.3.0rc18", bump: undefined, changes: "ctx_usage; disaggregated_params.conversation_id" },
  { version: "1.3.0rc23", bump: "#16758, 2026-07-22", changes: "none for the proxy" },
  { version: "1.3.0rc24", bump: "#17070, 2026-07-30", changes: "none for the proxy" },
  {
    version: "1.3.0rc26",
    bump: "#18402, 2026-08-29",
    changes: "conversation_params replaces disaggregated_params.conversation_id; prompt_token_ids_b64",
  },
  { version: "1.3.0rc28", bump: undefined, changes: "resolved_thinking; /v1/responses disaggregated (#18497, 2026-09-01)" },
  { version: "1.3.0rc29", bump: "bc38304d3d, 2026-09-23", changes: "none for the proxy's requests" },
  {
    version: "1.3.0rc30",
    bump: "#19616 (d949656a4f, bcdc2d5aaf), 2026-09-29",
    changes: "injected_chat_template_kwargs (#19351, the same day)",
  },
  { version: "1.4.0rc0", bump: "#19616 (d949656a4f, bcdc2d5aaf), 2026-09-29", changes: "as 1.3.0rc30" },
];

/** A worker's protocol as the proxy uses it: what it reported, and what it accepts now. */
export interface WorkerProtocol {
  /** The version the worker reported (or the override), undefined when unknown. */
  readonly version: string | undefined;
  /** Where the capabilities came from: the worker's report, the override, or nothing known. */
  readonly source: "reported" | "override" | "unknown";
  /** Mutable: a capability a worker still rejected with a 400 is taken off for that worker. */
  readonly accepts: Set<Capability>;
}

/** The capabilities of a version; an unparsable or unknown version gets none (the conservative set). */
export function capabilitiesOf(version: string | undefined): Set<Capability> {
  const parsed = version === undefined ? undefined : parseVersion(version);
  const accepts = new Set<Capability>();
  if (parsed === undefined) return accepts;
  for (const row of PROTOCOL_TABLE) {
    const since = parseVersion(row.since);
    const until = row.until === undefined ? undefined : parseVersion(row.until);
    if (since === undefined || compareVersions(parsed, since) < 0) continue;
    if (until !== undefined && compareVersions(parsed, until) >= 0) continue;
    accepts.add(row.capability);
  }
  return accepts;
}

/** The protocol of a worker: `override` (--worker-protocol <version>) wins over what it reported. */
export function workerProtocol(reported: string | undefined, override: string | undefined): WorkerProtocol {
  if (override !== undefined) return { version: reported ?? override, source: "override", accepts: capabilitiesOf(override) };
  if (reported === undefined) return { version: undefined, source: "unknown", accepts: new Set() };
  return { version: reported, source: "reported", accepts: capabilitiesOf(reported) };
}

/** [major, minor, patch, pre-release rank, post]; a final release ranks above every rc of it. */
type Version = readonly [number, number, number, number, number];

const FINAL = Number.MAX_SAFE_INTEGER;

/** PEP 440 subset trtllm uses: 1.3.0, 1.3.0rc26, 1.3.0rc15.post1 (a leading v is allowed). */
export function parseVersion(text: string): Version | undefined {
  const match = /^v?(\d+)\.(\d+)(?:\.(\d+))?(?:(?:rc|\.rc)(\d+))?(?:\.post(\d+))?(?:\+[\w.]+)?$/.exec(text.trim());
  if (match === null) return undefined;
  const [, major, minor, patch, rc, post] = match;
  return [Number(major), Number(minor), Number(patch ?? 0), rc === undefined ? FINAL : Number(rc), Number(post ?? 0)];
}

export function compareVersions(a: Version, b: Version): number {
  for (let i = 0; i < a.length; i++) {
    const difference = (a[i] ?? 0) - (b[i] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}

/** The oldest release with a capability, for messages that name the version an operator needs. */
export function versionNeededFor(capability: Capability): string {
  return PROTOCOL_TABLE.find((row) => row.capability === capability)?.since ?? "a newer release";
}

/**
 * Where each capability's fields sit in a worker-bound body, as a validation error locates
 * them (FastAPI's leading 'body' left off).
 */
const FIELD_PATHS: Readonly<Record<Capability, readonly (readonly string[])[]>> = {
  conversation_params: [["conversation_params"]],
  ctx_usage: [["disaggregated_params", "ctx_usage"]],
  disagg_conversation_id: [["disaggregated_params", "conversation_id"]],
  injected_chat_template_kwargs: [["injected_chat_template_kwargs"]],
  prompt_token_ids_b64: [["disaggregated_params", "return_prompt_token_ids_b64"], ["prompt_token_ids_b64"]],
  resolved_thinking: [["disaggregated_params", "resolved_thinking"]],
  responses_disaggregation: [],
};

/**
 * The capability a worker's 400 rejects as an extra field (pydantic `extra_forbidden`, "Extra
 * inputs are not permitted"), among those the request used; undefined for any other 400. Only
 * the first error's location is read, and only from the text before its `input`, which
 * echoes the client's values: a field name a client writes into its own request must not
 * pass for the worker's verdict, or one request could switch a field off for every client.
 */
export function rejectedCapability(message: string, used: ReadonlySet<Capability>): Capability | undefined {
  const path = firstExtraForbiddenPath(message);
  if (path === undefined) return undefined;
  for (const capability of used) {
    if (FIELD_PATHS[capability].some((fields) => fields.length === path.length && fields.every((field, i) => field === path[i])))
      return capability;
  }
  return undefined;
}

/**
 * The location of a validation error's first entry when that entry is extra_forbidden. Two
 * spellings: trtllm-serve answers a RequestValidationError with `{"error": str(exc)}`
 * (openai_server.py @ 00057725), its entries the repr of pydantic's error dicts, `{'type':
 * 'extra_forbidden', 'loc': ('body', 'disaggregated_params', 'ctx_usage'), 'msg': …, 'input': …}`,
 * the first `{` of the text opening the first entry; a pydantic ValidationError raised in a
 * handler reads `N validation error for Model\ndisaggregated_params.ctx_usage\n  Extra inputs
 * are not permitted [type=extra_forbidden, …]`.
 */
function firstExtraForbiddenPath(message: string): string[] | undefined {
  const repr = /^[^{]*\{'type': 'extra_forbidden', 'loc': \(/.exec(message);
  if (repr) {
    const path = readTuple(message, repr[0].length);
    return path?.[0] === "body" ? path.slice(1) : path;
  }
  const lines = message.split("\n", 3);
  const at = /^\d+ validation errors? for /.test(lines[0] ?? "") ? 1 : 0;
  if (lines[at + 1]?.startsWith("  Extra inputs are not permitted") !== true) return undefined;
  return lines[at]?.split(".");
}

/** A Python tuple's repr from just after its `(`: strings unquoted, numbers as written; undefined when malformed. */
function readTuple(text: string, from: number): string[] | undefined {
  const items: string[] = [];
  let i = from;
  for (;;) {
    while (text[i] === " ") i++;
    const c = text[i];
    if (c === ")") return items;
    if (c === undefined) return undefined;
    let item = "";
    if (c === "'" || c === '"') {
      for (i++; i < text.length && text[i] !== c; i++) {
        if (text[i] === "\\") i++;
        item += text[i] ?? "";
      }
      if (text[i] !== c) return undefined;
      i++;
    } else {
      for (; i < text.length && text[i] !== "," && text[i] !== ")"; i++) item += text[i];
    }
    items.push(item.trim());
    while (text[i] === " ") i++;
    if (text[i] === ",") i++;
    else if (text[i] !== ")") return undefined;
  }
}
