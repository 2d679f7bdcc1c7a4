/**
 * Property tests of trace redaction: any header name holding a credential fragment, in any case
 * and with anything around it, loses its value; a name holding none keeps it; an `api_key`
 * member at any depth of a body is gone from the line, and a body without one is kept byte for byte.
 */
import { describe, expect, test } from "bun:test";
import * as fc from "fast-check";
import { CREDENTIAL_FRAGMENTS, isCredentialHeader, REDACTED, redactedBodyText, redactedHeaders } from "./trace-redaction.ts";

const TIMEOUT_MS = 30_000;
const RUNS = 2000;

/** RFC 9110 token characters, as a header name may hold them. */
const TOKEN_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~";
const tokenChar = fc.constantFrom(...TOKEN_CHARS.split(""));
const tokenPart = fc.string({ unit: tokenChar, maxLength: 12 });
const randomCase = (text: string, flips: readonly boolean[]): string =>
  text
    .split("")
    .map((c, i) => (flips[i % Math.max(flips.length, 1)] === true ? c.toUpperCase() : c))
    .join("");

const credentialName = fc
  .tuple(tokenPart, fc.constantFrom(...CREDENTIAL_FRAGMENTS), tokenPart, fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }))
  .map(([before, fragment, after, flips]) => `${before}${randomCase(fragment, flips)}${after}`);
const plainName = fc
  .string({ unit: tokenChar, minLength: 1, maxLength: 24 })
  .filter((name) => !CREDENTIAL_FRAGMENTS.some((fragment) => name.toLowerCase().includes(fragment)));

describe("header redaction by pattern", () => {
  test(
    "a name holding any credential fragment, in any case, is redacted with its name kept; one holding none keeps its value",
    () => {
      fc.assert(
        fc.property(
          credentialName,
          plainName,
          fc.string({ unit: tokenChar, minLength: 1, maxLength: 20 }),
          (secretName, otherName, value) => {
            expect(isCredentialHeader(secretName)).toBe(true);
            expect(isCredentialHeader(otherName)).toBe(false);
            const pairs = redactedHeaders(
              new Headers([
                [secretName, value],
                [otherName, value],
              ]),
            );
            expect(pairs).toContainEqual([secretName.toLowerCase(), REDACTED]);
            expect(pairs).toContainEqual([otherName.toLowerCase(), value]);
          },
        ),
        { numRuns: RUNS },
      );
    },
    TIMEOUT_MS,
  );

  test("the names the local review found kept verbatim are all redacted, and upstream's own list still is", () => {
    const names = [
      "x-auth-key",
      "x-auth",
      "x-authentication",
      "x-access-key",
      "x-credential",
      "x-private-key",
      "x-passwd",
      "x-pwd",
      "x-session-key",
      "x-jwt",
      "x-signature",
      "x-hub-signature-256",
      "x-trtllm-disagg-auth",
      "x-trtllm-subagent-affinity-auth",
      "Authorization",
      "proxy-authorization",
      "cookie",
      "set-cookie",
      "x-api-key",
      "api-key",
      "x-auth-token",
      "x-amz-security-token",
      "x-client-secret",
      "x-password",
      // Kept verbatim until the fragments took these too: found on the binary.
      "x-bearer",
      "x-pass",
      "x-csrf",
      "X-XSRF",
    ];
    expect(names.filter((name) => !isCredentialHeader(name))).toEqual([]);
    for (const name of ["content-type", "user-agent", "traceparent", "x-request-id", "accept-encoding"])
      expect(isCredentialHeader(name)).toBe(false);
  });
});

describe("a body's api_key", () => {
  const json = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: "small" }, fc.string(), fc.integer(), fc.boolean(), fc.constant(null), tie("array"), tie("object")),
    array: fc.array(tie("value"), { maxLength: 4 }),
    object: fc.dictionary(fc.string({ maxLength: 8 }), tie("value"), { maxKeys: 4 }),
  }));

  test(
    "an api_key member at any depth is redacted and the rest kept; a body naming none is its own text",
    () => {
      fc.assert(
        fc.property(json.object, fc.string({ minLength: 1 }), fc.array(fc.nat(3), { maxLength: 3 }), (body, key, path) => {
          const plain = JSON.stringify(body);
          if (!plain.includes('"api_key"')) expect(redactedBodyText(plain)).toBe(plain);
          // Put a key somewhere: at the top, or inside nested objects.
          let holder = structuredClone<Record<string, unknown>>(body);
          const root = holder;
          for (const step of path) {
            const next: Record<string, unknown> = {};
            holder[`level${step}`] = next;
            holder = next;
          }
          holder["api_key"] = key;
          const text = redactedBodyText(JSON.stringify(root));
          holder["api_key"] = REDACTED;
          if (!plain.includes('"api_key"')) expect(JSON.parse(text)).toEqual(root);
          if (key !== REDACTED) expect(text).not.toContain(`"api_key":${JSON.stringify(key)}`);
        }),
        { numRuns: RUNS },
      );
    },
    TIMEOUT_MS,
  );
});
