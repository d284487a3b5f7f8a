/** A small least-recently-used map (Map keeps insertion order; a hit moves the key to the end). */
export class Lru<K, V> {
  readonly #map = new Map<K, V>();
  constructor(readonly max: number) {}

  get(key: K): V | undefined {
    const v = this.#map.get(key);
    if (v !== undefined) {
      this.#map.delete(key);
      this.#map.set(key, v);
    }
    return v;
  }

  set(key: K, value: V): void {
    this.#map.delete(key);
    this.#map.set(key, value);
    if (this.#map.size > this.max) this.#map.delete(this.#map.keys().next().value as K);
  }

  get size(): number {
    return this.#map.size;
  }
}
