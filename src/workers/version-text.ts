/**
 * A worker's version as it may be shown: in the metrics' labels, the log, /cluster_info and
 * the dashboard. Workers report it (GET /version, a registration) and a hostile or broken one
 * can report anything — a 4 MiB string was once repeated in every /metrics scrape and to every
 * dashboard viewer. trtllm's versions are PEP 440 (tensorrt_llm/version.py: 1.3.0rc26,
 * 1.3.0rc15.post1), so only that shape, and only a short one, is kept.
 */

export const MAX_VERSION_CHARS = 64;

/** PEP 440's public version with its spelling variants (leading v, separators), and a local part. */
const PEP_440 =
  /^v?\d{1,12}(?:\.\d{1,12}){0,5}(?:[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview)\d{0,12})?(?:[-_.]?(?:post|rev|r)\d{0,12})?(?:[-_.]?dev\d{0,12})?(?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?$/i;

/** The version, trimmed, when it is a PEP 440 version of at most MAX_VERSION_CHARS characters; else undefined. */
export function acceptedVersion(value: unknown): string | undefined {
  if (typeof value !== "string" || value.length > 4 * MAX_VERSION_CHARS) return undefined;
  const text = value.trim();
  return text.length > 0 && text.length <= MAX_VERSION_CHARS && PEP_440.test(text) ? text : undefined;
}
