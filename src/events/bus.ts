import type { EdgeEventName, EdgeEvents } from './events.js';

type Listener<K extends EdgeEventName> = (payload: EdgeEvents[K]) => void | Promise<void>;

interface Queued {
  name: EdgeEventName;
  payload: unknown;
}

/**
 * Typed, in-process, notification-only bus (docs/architecture.md "Seams"). `emit` is called only
 * after the change it announces has committed, and only queues the event: listeners
 * run later, from one `setImmediate` drain, in emit order — never inside the emitting
 * request, so a slow listener cannot delay its answer. A throwing (or rejecting)
 * listener is reported to `onError` and never reaches the emitter or the other
 * listeners. Small on purpose so a broker (e.g. NATS) can replace it; what must not be
 * lost is read from the durable change log through a cursor (src/events/cursors.ts).
 */
export class EventBus {
  readonly #listeners = new Map<EdgeEventName, Set<Listener<never>>>();
  readonly #onError: (err: unknown) => void;
  #queue: Queued[] = [];
  #scheduled: NodeJS.Immediate | null = null;
  #idle: Array<() => void> = [];
  #closed = false;

  constructor(onError: (err: unknown) => void = () => {}) {
    this.#onError = onError;
  }

  on<K extends EdgeEventName>(name: K, fn: Listener<K>): () => void {
    let set = this.#listeners.get(name);
    if (!set) this.#listeners.set(name, (set = new Set()));
    set.add(fn as Listener<never>);
    return () => set.delete(fn as Listener<never>);
  }

  /** True when anyone listens; lets hot paths skip building a payload. */
  has(name: EdgeEventName): boolean {
    return (this.#listeners.get(name)?.size ?? 0) > 0;
  }

  /** Queues the event for its listeners (delivered after the current I/O turn, in emit order). */
  emit<K extends EdgeEventName>(name: K, payload: EdgeEvents[K]): void {
    if (this.#closed || !this.has(name)) return;
    this.#queue.push({ name, payload });
    this.#scheduled ??= setImmediate(() => this.#drain());
  }

  /** Resolves once every event queued so far (and any its listeners emitted) was delivered. */
  idle(): Promise<void> {
    if (this.#scheduled === null) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #drain(): void {
    this.#scheduled = null;
    // note: only the events queued before this turn; ones emitted by listeners wait for the next
    // turn, so a listener that emits cannot starve I/O.
    const batch = this.#queue;
    this.#queue = [];
    for (const { name, payload } of batch) {
      const set = this.#listeners.get(name);
      if (!set) continue;
      for (const fn of set) {
        try {
          const r = (fn as Listener<EdgeEventName>)(payload as never);
          if (r && typeof (r as Promise<void>).catch === 'function') (r as Promise<void>).catch(this.#onError);
        } catch (err) {
          this.#onError(err);
        }
      }
    }
    if (this.#queue.length) this.#scheduled = setImmediate(() => this.#drain());
    else {
      const waiting = this.#idle;
      this.#idle = [];
      for (const w of waiting) w();
    }
  }

  /** Drops the listeners and any undelivered event (consumers resume from their cursors). */
  close(): void {
    this.#closed = true;
    if (this.#scheduled) clearImmediate(this.#scheduled);
    this.#scheduled = null;
    this.#queue = [];
    this.#listeners.clear();
    const waiting = this.#idle;
    this.#idle = [];
    for (const w of waiting) w();
  }
}
