/**
 * A trie of prompt block hashes, flattened: a chained block hash names its whole prefix, so each
 * trie node is one map entry keyed by its hash. A node lists, per worker, the conversations whose
 * last prompt passes through it, so the deepest node with a conversation on an acceptable worker
 * is found in one walk down the prompt's hashes.
 */
export class PrefixIndex {
  readonly #nodes = new Map<bigint, Map<string, Set<string>>>();

  /** Trie nodes held: the index's memory. */
  get size(): number {
    return this.#nodes.size;
  }

  insert(conversation: string, origin: string, hashes: readonly bigint[]): void {
    for (const hash of hashes) {
      let node = this.#nodes.get(hash);
      if (node === undefined) {
        node = new Map();
        this.#nodes.set(hash, node);
      }
      let ids = node.get(origin);
      if (ids === undefined) {
        ids = new Set();
        node.set(origin, ids);
      }
      ids.add(conversation);
    }
  }

  /** Undoes insert; nodes left empty are dropped. */
  remove(conversation: string, origin: string, hashes: readonly bigint[]): void {
    for (const hash of hashes) {
      const node = this.#nodes.get(hash);
      const ids = node?.get(origin);
      if (node === undefined || ids === undefined) continue;
      ids.delete(conversation);
      if (ids.size === 0) node.delete(origin);
      if (node.size === 0) this.#nodes.delete(hash);
    }
  }

  /**
   * The deepest prefix of `hashes` some conversation on an accepted worker went through, and
   * that conversation. O(hashes × workers listed at a node).
   */
  longestMatch(hashes: readonly bigint[], accepts: (origin: string) => boolean): PrefixMatch | undefined {
    let best: PrefixMatch | undefined;
    for (let depth = 1; depth <= hashes.length; depth++) {
      const node = this.#nodes.get(hashes[depth - 1] ?? 0n);
      const found = node === undefined ? undefined : firstAccepted(node, accepts);
      // A conversation at a deeper node is also listed at every node above it, so none is deeper.
      if (found === undefined) break;
      best = { conversation: found.conversation, origin: found.origin, depth };
    }
    return best;
  }
}

export interface PrefixMatch {
  readonly conversation: string;
  readonly origin: string;
  /** Blocks matched. */
  readonly depth: number;
}

function firstAccepted(node: Map<string, Set<string>>, accepts: (origin: string) => boolean): Omit<PrefixMatch, "depth"> | undefined {
  for (const [origin, ids] of node) {
    if (!accepts(origin)) continue;
    for (const conversation of ids) return { conversation, origin };
  }
  return undefined;
}
