/**
 * What a trace line never holds: a credential. Upstream's writer redacts a list of header names
 * and fragments (tensorrt_llm/serve/request_trace.py `_is_credential_header`, read_file id
 * 70217114160); vendors name theirs every way (`x-auth-key`, `x-hub-signature-256`, `x-jwt`),
 * so here any name holding one of a wider set of fragments is redacted, which covers every name
 * upstream's list does. A body's `api_key` member, at any depth, goes the same way.
 */

import { isJsonObject, parseJson, type JsonValue } from "../json/json.ts";
import { DISAGG_AUTH_HEADER, SUBAGENT_AFFINITY_AUTH_HEADER } from "../security/disagg-auth.ts";

/** Upstream's `_REDACTED`. */
export const REDACTED = "[redacted]";

/** Lower-case pieces of a header name that mark its value a credential. */
export const CREDENTIAL_FRAGMENTS = [
  "auth",
  "key",
  "token",
  "secret",
  "pass",
  "pwd",
  "credential",
  "cookie",
  "session",
  "signature",
  "jwt",
  "private",
  "bearer",
  "csrf",
  "xsrf",
] as const;

/** The signatures this proxy puts on internal requests, named whatever the fragments become. */
const INTERNAL_AUTH_HEADERS: ReadonlySet<string> = new Set([DISAGG_AUTH_HEADER, SUBAGENT_AFFINITY_AUTH_HEADER]);

/** The body member the worker protocol carries a key in. */
const SECRET_MEMBER = "api_key";

export function isCredentialHeader(name: string): boolean {
  const lowered = name.toLowerCase();
  return INTERNAL_AUTH_HEADERS.has(lowered) || CREDENTIAL_FRAGMENTS.some((fragment) => lowered.includes(fragment));
}

/** Headers as ordered `[name, value]` pairs, a credential's value replaced (its name kept: it shows one was sent). */
export function redactedHeaders(headers: Headers): [string, string][] {
  const pairs: [string, string][] = [];
  for (const [name, value] of headers) pairs.push([name, isCredentialHeader(name) ? REDACTED : value]);
  return pairs;
}

/**
 * A JSON body's text with every `api_key` member's value replaced; the text itself (its bytes,
 * 64-bit integers exact) when it names none, which is nearly always.
 */
export function redactedBodyText(text: string): string {
  if (!text.includes(`"${SECRET_MEMBER}"`)) return text;
  return JSON.stringify(withoutSecrets(parseJson(text)));
}

function withoutSecrets(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (!isJsonObject(value)) return value;
  const out: Record<string, JsonValue> = {};
  for (const [key, member] of Object.entries(value)) {
    if (member !== undefined) out[key] = key === SECRET_MEMBER ? REDACTED : withoutSecrets(member);
  }
  return out;
}
