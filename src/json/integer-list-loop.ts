/**
 * A JSON list of integer literals read straight from its bytes, in JavaScript: the scanner where
 * the runtime cannot compile integer-list.wat (integer-list.ts). Item by item: an optional minus,
 * digits (a leading zero alone: JSON has no 012), then a comma or the closing bracket, spaces
 * allowed around them; a byte-state machine over the same bytes cost twice as much.
 */

export interface IntegerListEnd {
  /** Just after the list's `]`. */
  readonly end: number;
  readonly count: number;
}

const SPACE = new Uint8Array(256);
for (const c of " \t\n\r") SPACE[c.charCodeAt(0)] = 1;

/**
 * The list whose `[` is just before `from`, if it is one of integers only and closes within the
 * bytes; undefined when it holds anything else or runs past their end. A byte past the end
 * reads undefined, which no test below takes for a digit, a space or a bracket: the loops need
 * no bounds checks of their own.
 */
export function integerListLoop(bytes: Uint8Array, from: number): IntegerListEnd | undefined {
  let i = from;
  while (SPACE[bytes[i]!] === 1) i++;
  if (bytes[i] === 0x5d) return { end: i + 1, count: 0 };
  let count = 0;
  for (;;) {
    if (bytes[i] === 0x2d) i++;
    const first = bytes[i]!;
    if (!(first >= 0x30 && first <= 0x39)) return undefined;
    let c = bytes[++i]!;
    if (first === 0x30) {
      if (c >= 0x30 && c <= 0x39) return undefined;
    } else {
      while (c >= 0x30 && c <= 0x39) c = bytes[++i]!;
    }
    count++;
    while (SPACE[c] === 1) c = bytes[++i]!;
    if (c === 0x5d) return { end: i + 1, count };
    if (c !== 0x2c) return undefined;
    c = bytes[++i]!;
    while (SPACE[c] === 1) c = bytes[++i]!;
  }
}
