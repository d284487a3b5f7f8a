import type { Geo } from '../../edge/pipeline.js';
import type { TrafficHit } from './types.js';

type Listener = (hit: TrafficHit) => void;

/**
 * The public traffic feed: one bounded ring of hits for the whole edge. A hit is a
 * time and a location already rounded to 0.1° — no IP, no path, no project.
 */
export class PublicTraffic {
  readonly #ring: TrafficHit[] = [];
  readonly #size: number;
  readonly #listeners = new Set<Listener>();
  #seq = 0;

  constructor(size = 500) {
    this.#size = size;
  }

  record(geo: Geo | null, at = Date.now()): void {
    const hit: TrafficHit = {
      seq: ++this.#seq,
      at: new Date(at).toISOString(),
      lat: geo?.lat ?? null,
      lon: geo?.lon ?? null,
      country: geo?.country ?? null,
    };
    this.#ring.push(hit);
    if (this.#ring.length > this.#size) this.#ring.shift();
    for (const fn of this.#listeners) fn(hit);
  }

  get seq(): number {
    return this.#seq;
  }

  since(seq: number): TrafficHit[] {
    return this.#ring.filter((h) => h.seq > seq);
  }

  subscribe(fn: Listener): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }
}
