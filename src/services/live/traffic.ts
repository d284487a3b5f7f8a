import type { Geo } from '../../edge/request-record.js';
import { isoAt } from '../../clock.js';
import type { TrafficHit } from './types.js';

type Listener = (hit: TrafficHit) => void;

/**
 * The public traffic feed: one bounded ring of hits for the whole edge. A hit is a
 * time and a location already rounded to 0.1° — no IP, no path, no project.
 */
export class PublicTraffic {
  // note: a fixed-size circular buffer kept as parallel arrays (no object per hit on the request
  // path); hit `seq` is at index (seq - 1) % size, and objects are made only for readers.
  readonly #at: Float64Array;
  readonly #lat: Float64Array;
  readonly #lon: Float64Array;
  readonly #country: (string | null)[];
  readonly #size: number;
  readonly #listeners = new Set<Listener>();
  #seq = 0;

  constructor(size = 500) {
    this.#size = size;
    this.#at = new Float64Array(size);
    this.#lat = new Float64Array(size);
    this.#lon = new Float64Array(size);
    this.#country = new Array<string | null>(size).fill(null);
  }

  record(geo: Geo | null, at = Date.now()): void {
    const seq = ++this.#seq;
    const i = (seq - 1) % this.#size;
    this.#at[i] = at;
    this.#lat[i] = geo?.lat ?? NaN;
    this.#lon[i] = geo?.lon ?? NaN;
    this.#country[i] = geo?.country ?? null;
    if (this.#listeners.size > 0) {
      const hit = this.#hit(seq);
      for (const fn of this.#listeners) fn(hit);
    }
  }

  get seq(): number {
    return this.#seq;
  }

  /** The hits after `seq` still in the ring, oldest first. */
  since(seq: number): TrafficHit[] {
    const out: TrafficHit[] = [];
    for (let s = Math.max(seq, this.#seq - this.#size) + 1; s <= this.#seq; s++) out.push(this.#hit(s));
    return out;
  }

  subscribe(fn: Listener): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  #hit(seq: number): TrafficHit {
    const i = (seq - 1) % this.#size;
    const lat = this.#lat[i]!;
    const lon = this.#lon[i]!;
    return { seq, at: isoAt(this.#at[i]!), lat: Number.isNaN(lat) ? null : lat, lon: Number.isNaN(lon) ? null : lon, country: this.#country[i]! };
  }
}
