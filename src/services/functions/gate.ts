import { EdgeError } from '../../core/errors.js';

interface Slot {
  active: number;
  waiting: (() => void)[];
}

/**
 * At most `limit` calls per project at once; then up to `queue` wait in order; beyond that
 * 429 `rate_limited` (docs/api.md "Sandbox"). One project's slow functions never take
 * another project's turns.
 */
export class Gate {
  readonly #slots = new Map<string, Slot>();

  constructor(
    readonly limit: number,
    readonly queue: number,
  ) {}

  /** The release function when the call may run now (no promise, no turn of the event loop); null when it must wait. */
  tryEnter(projectId: string): (() => void) | null {
    let slot = this.#slots.get(projectId);
    if (slot === undefined) this.#slots.set(projectId, (slot = { active: 0, waiting: [] }));
    if (slot.active >= this.limit || slot.waiting.length > 0) return null;
    slot.active++;
    return this.#release(projectId, slot);
  }

  /** Resolves to the release function once the call may run. */
  async enter(projectId: string): Promise<() => void> {
    let slot = this.#slots.get(projectId);
    if (slot === undefined) this.#slots.set(projectId, (slot = { active: 0, waiting: [] }));
    if (slot.active >= this.limit) {
      if (slot.waiting.length >= this.queue) {
        throw busy(this.limit, this.queue);
      }
      // note: a release hands its slot straight to the first waiter (`active` stays), so no
      // newcomer can take it between the release and this call's turn.
      await new Promise<void>((resolve) => slot.waiting.push(resolve));
      return this.#release(projectId, slot);
    }
    slot.active++;
    return this.#release(projectId, slot);
  }

  #release(projectId: string, slot: Slot): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = slot.waiting.shift();
      if (next !== undefined) return next();
      slot.active--;
      if (slot.active === 0) this.#slots.delete(projectId);
    };
  }
}

const busy = (limit: number, queue: number): EdgeError =>
  new EdgeError('rate_limited', `this project already runs ${limit} function calls and has ${queue} waiting; retry shortly`, { headers: { 'retry-after': '1' } });

/**
 * The server's side of the gate: at most `limit + queue` calls of a project in the sandbox
 * process, running or waiting for their turn there (a Gate with these numbers, sandbox-child.ts);
 * beyond that 429 `rate_limited`, as the Gate answers.
 */
export class Admission {
  readonly #count = new Map<string, number>();

  constructor(
    readonly limit: number,
    readonly queue: number,
  ) {}

  /** The release function; throws 429 when the project has `limit + queue` calls in. */
  enter(projectId: string): () => void {
    const n = this.#count.get(projectId) ?? 0;
    if (n >= this.limit + this.queue) throw busy(this.limit, this.queue);
    this.#count.set(projectId, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#count.get(projectId) ?? 1) - 1;
      if (left === 0) this.#count.delete(projectId);
      else this.#count.set(projectId, left);
    };
  }
}
