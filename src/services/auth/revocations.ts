/**
 * Ids (session ids and access-token ids) whose access tokens must fail although
 * their signature and expiry are fine. Kept in memory so verifying a token never
 * reads SQLite; an entry is forgotten once every token it could match has expired.
 */
export class Revocations {
  readonly #until = new Map<string, number>();
  readonly #now: () => number;
  #nextPrune = 0;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Revokes `id` until `untilMs` (the latest expiry of a token carrying it). */
  add(id: string, untilMs: number): void {
    const prev = this.#until.get(id) ?? 0;
    if (untilMs > prev) this.#until.set(id, untilMs);
    this.#prune();
  }

  has(id: string): boolean {
    return this.#until.has(id);
  }

  get size(): number {
    return this.#until.size;
  }

  #prune(): void {
    const now = this.#now();
    if (now < this.#nextPrune) return;
    this.#nextPrune = now + 10_000;
    for (const [id, until] of this.#until) if (until < now) this.#until.delete(id);
  }
}
