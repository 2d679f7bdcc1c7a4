/** The nearest known name to a mistyped one, for "unknown key … (did you mean …?)" messages. */

/** Edits (insert, delete, substitute) between two names. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

function plain(text: string): string {
  return text.toLowerCase().replaceAll("-", "_");
}

/**
 * The closest candidate within a third of the name's length (at least 1, at most 3 edits),
 * comparing without case and with `-` read as `_`; undefined when nothing is that close.
 */
export function didYouMean(name: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(name.length / 3)));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of candidates) {
    const distance = editDistance(plain(name), plain(candidate));
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}
