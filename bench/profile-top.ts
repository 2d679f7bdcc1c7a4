/**
 * `bun bench/profile-top.ts FILE.cpuprofile [N]`: the functions a profile of
 * `npm run bench -- --profile` (or any `bun --cpu-prof` run) spent its samples in, by sample
 * count, self and inclusive (a function counted once per sample however often it recurs).
 * Counts, not the profile's time deltas: a delta after the process sat idle in the event loop
 * would charge the idle time to whichever function ran next. Shares only: to turn one into µs
 * per request, multiply by the CPU per request the benchmark measured for that process.
 */

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}
interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
}

const [file, topArg] = Bun.argv.slice(2);
if (file === undefined) throw new Error("usage: bun bench/profile-top.ts FILE.cpuprofile [N]");
const top = Number(topArg ?? 30);
const profile = (await Bun.file(file).json()) as Profile;

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parentOf = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
const nameOf = (node: ProfileNode): string =>
  `${node.callFrame.functionName || "(anonymous)"} ${node.callFrame.url.replace(/^.*?\/(src|bench|node_modules)\//, "$1/")}:${node.callFrame.lineNumber + 1}`;

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
for (const id of profile.samples) {
  const node = byId.get(id);
  if (node === undefined) continue;
  self.set(nameOf(node), (self.get(nameOf(node)) ?? 0) + 1);
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
    const ancestor = byId.get(at);
    if (ancestor === undefined) break;
    const name = nameOf(ancestor);
    if (!seen.has(name)) inclusive.set(name, (inclusive.get(name) ?? 0) + 1);
    seen.add(name);
  }
}

const total = profile.samples.length;
process.stdout.write(`${total} samples\n`);
for (const [title, counts] of [
  ["self", self],
  ["inclusive", inclusive],
] as const) {
  process.stdout.write(`\n${title}:\n`);
  for (const [name, count] of [...counts].toSorted((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${((count / total) * 100).toFixed(1).padStart(5)} %  ${name}\n`);
  }
}
