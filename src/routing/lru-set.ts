/** A set of at most `capacity` items that forgets the least recently added or touched first. */
export class LruSet<T> {
  readonly #items = new Set<T>();
  readonly #capacity: number;

  constructor(capacity: number) {
    this.#capacity = Math.max(capacity, 1);
  }

  get size(): number {
    return this.#items.size;
  }

  has(item: T): boolean {
    return this.#items.has(item);
  }

  /** Adds the item, or marks it the most recently used; returns what was forgotten to make room. */
  add(item: T): T[] {
    this.#items.delete(item);
    this.#items.add(item);
    const forgotten: T[] = [];
    while (this.#items.size > this.#capacity) {
      const oldest = this.#items.values().next();
      if (oldest.done === true) break;
      this.#items.delete(oldest.value);
      forgotten.push(oldest.value);
    }
    return forgotten;
  }

  delete(item: T): void {
    this.#items.delete(item);
  }

  clear(): void {
    this.#items.clear();
  }
}
