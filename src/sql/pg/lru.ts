interface Entry<V> {
  value: V;
  used: number;
}

/**
 * A bounded cache that drops the least recently used entries. A hit only stamps its entry
 * (no Map delete and re-insert on every read, which made V8 rehash the Map under load);
 * past the bound, the oldest tenth is dropped at once, so eviction stays cheap on average.
 */
export class Lru<K, V> {
  readonly #map = new Map<K, Entry<V>>();
  #clock = 0;
  constructor(readonly max: number) {}

  get(key: K): V | undefined {
    const e = this.#map.get(key);
    if (e === undefined) return undefined;
    e.used = ++this.#clock;
    return e.value;
  }

  set(key: K, value: V): void {
    const e = this.#map.get(key);
    if (e !== undefined) {
      e.value = value;
      e.used = ++this.#clock;
      return;
    }
    this.#map.set(key, { value, used: ++this.#clock });
    if (this.#map.size > this.max) this.#evict();
  }

  get size(): number {
    return this.#map.size;
  }

  #evict(): void {
    const drop = Math.max(1, Math.ceil(this.max / 10));
    const oldest = [...this.#map].sort((a, b) => a[1].used - b[1].used).slice(0, drop);
    for (const [k] of oldest) this.#map.delete(k);
  }
}
