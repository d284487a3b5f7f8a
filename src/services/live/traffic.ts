import type { Geo } from '../../edge/pipeline.js';
import { isoAt } from '../../clock.js';
import type { TrafficHit } from './types.js';

type Listener = (hit: TrafficHit) => void;

/**
 * The public traffic feed: one bounded ring of hits for the whole edge. A hit is a
 * time and a location already rounded to 0.1° — no IP, no path, no project.
 */
export class PublicTraffic {
  // note: a fixed-size circular buffer; `#seq` of the newest hit is at index (seq - 1) % size.
  readonly #ring: (TrafficHit | undefined)[];
  readonly #size: number;
  readonly #listeners = new Set<Listener>();
  #seq = 0;

  constructor(size = 500) {
    this.#size = size;
    this.#ring = new Array<TrafficHit | undefined>(size);
  }

  record(geo: Geo | null, at = Date.now()): void {
    const hit: TrafficHit = {
      seq: ++this.#seq,
      at: isoAt(at),
      lat: geo?.lat ?? null,
      lon: geo?.lon ?? null,
      country: geo?.country ?? null,
    };
    this.#ring[(hit.seq - 1) % this.#size] = hit;
    for (const fn of this.#listeners) fn(hit);
  }

  get seq(): number {
    return this.#seq;
  }

  /** The hits after `seq` still in the ring, oldest first. */
  since(seq: number): TrafficHit[] {
    const out: TrafficHit[] = [];
    for (let s = Math.max(seq, this.#seq - this.#size) + 1; s <= this.#seq; s++) out.push(this.#ring[(s - 1) % this.#size]!);
    return out;
  }

  subscribe(fn: Listener): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }
}
