import { EdgeError, payloadTooLarge } from '../core/errors.js';

/** How a backend throttles the client: stop and restart reading the socket. */
export interface FlowControl {
  pause(): void;
  resume(): void;
}

/** Bytes queued before the backend stops reading the socket, and below which it reads again. */
const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;

/**
 * A request body as it arrives (`body: 'stream'` routes), for one consumer. The backend pushes
 * copied chunks; past HIGH_WATER queued bytes it is told to pause reading the socket, and to
 * resume once the consumer has taken the queue below LOW_WATER, so memory stays bounded whatever
 * the body's size. Past the limit the stream fails with 413 `payload_too_large`.
 */
export class BodyStream implements AsyncIterable<Uint8Array> {
  readonly #limit: number;
  readonly #flow: FlowControl;
  /** Wakes the consumer later than the push (uWS: never inside its data callback, see uws-body.ts). */
  readonly #defer: boolean;
  readonly #queue: Buffer[] = [];
  #head = 0;
  #queued = 0;
  #received = 0;
  #paused = false;
  #ended = false;
  #error: EdgeError | null = null;
  #waiter: (() => void) | null = null;
  #wakeScheduled = false;
  #iterated = false;

  constructor(limit: number, flow: FlowControl, defer = false) {
    this.#limit = limit;
    this.#flow = flow;
    this.#defer = defer;
  }

  /** Whether the whole body was received (the connection can serve another request). */
  get complete(): boolean {
    return this.#ended && this.#error === null;
  }

  /** Whether the stream has failed or ended: the backend reads nothing more into it. */
  get settled(): boolean {
    return this.#ended || this.#error !== null;
  }

  /** Adds a chunk (the caller's own copy); false once the body passed the limit (read no more). */
  push(chunk: Buffer): boolean {
    if (this.settled) return false;
    this.#received += chunk.length;
    if (this.#received > this.#limit) {
      this.fail(payloadTooLarge(this.#limit));
      return false;
    }
    this.#queue.push(chunk);
    this.#queued += chunk.length;
    if (!this.#paused && this.#queued > HIGH_WATER) {
      this.#paused = true;
      this.#flow.pause();
    }
    this.#wake();
    return true;
  }

  end(): void {
    if (this.settled) return;
    this.#ended = true;
    this.#wake();
  }

  /** Ends the stream with an error (over the limit, timed out, the client gone). */
  fail(err: EdgeError): void {
    if (this.settled) return;
    this.#error = err;
    this.#queue.length = 0;
    this.#queued = 0;
    this.#wake();
  }

  #wake(): void {
    if (this.#waiter === null) return;
    if (!this.#defer) return this.#release();
    if (this.#wakeScheduled) return;
    this.#wakeScheduled = true;
    setImmediate(() => {
      this.#wakeScheduled = false;
      this.#release();
    });
  }

  #release(): void {
    const w = this.#waiter;
    this.#waiter = null;
    w?.();
  }

  async #next(): Promise<IteratorResult<Uint8Array>> {
    for (;;) {
      if (this.#error !== null) throw this.#error;
      if (this.#head < this.#queue.length) {
        const chunk = this.#queue[this.#head]!;
        this.#queue[this.#head++] = EMPTY;
        if (this.#head === this.#queue.length) {
          this.#queue.length = 0;
          this.#head = 0;
        }
        this.#queued -= chunk.length;
        if (this.#paused && this.#queued <= LOW_WATER) {
          this.#paused = false;
          this.#flow.resume();
        }
        return { value: chunk, done: false };
      }
      if (this.#ended) return { value: undefined, done: true };
      await new Promise<void>((resolve) => (this.#waiter = resolve));
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    if (this.#iterated) throw new Error('a request body stream can be read only once');
    this.#iterated = true;
    return { next: () => this.#next() };
  }
}

const EMPTY = Buffer.alloc(0);
