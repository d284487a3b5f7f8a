import type { EdgeEventName, EdgeEvents } from './events.js';

type Listener<K extends EdgeEventName> = (payload: EdgeEvents[K]) => void | Promise<void>;

/**
 * Typed, in-process, notification-only bus (STYLE.md 3.6). `emit` is called only
 * after the change it announces has committed; a throwing listener never reaches
 * the emitter. Small on purpose so NATS can replace it (DESIGN.md §8).
 */
export class EventBus {
  readonly #listeners = new Map<EdgeEventName, Set<Listener<never>>>();
  readonly #onError: (err: unknown) => void;

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

  emit<K extends EdgeEventName>(name: K, payload: EdgeEvents[K]): void {
    const set = this.#listeners.get(name);
    if (!set) return;
    for (const fn of set) {
      try {
        const r = (fn as Listener<K>)(payload);
        if (r && typeof (r as Promise<void>).catch === 'function') (r as Promise<void>).catch(this.#onError);
      } catch (err) {
        this.#onError(err);
      }
    }
  }

  close(): void {
    this.#listeners.clear();
  }
}
