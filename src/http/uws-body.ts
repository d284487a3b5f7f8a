import { EdgeError } from '../core/errors.js';
import { BodyStream } from './body-stream.js';
import type { HttpResponse, State, UwsContext, UwsRequest } from './uws-request.js';

export const TIMED_OUT = Symbol('timed out');

/**
 * The request timeout for bodies that do not arrive in one piece (uWS's own idle timeout
 * restarts with every chunk, so a client trickling a body would be kept forever): one
 * timer for all of them, and nothing at all for the common body that comes in one chunk.
 */
export class BodyClock {
  readonly #pending = new Map<() => void, number>();
  #timer: NodeJS.Timeout | null = null;

  constructor(readonly timeoutMs: number) {}

  /** Calls `expire` once the body started at `since` is late; returns the function that cancels it. */
  watch(since: number, expire: () => void): () => void {
    if (this.timeoutMs === 0) return () => {};
    this.#pending.set(expire, since + this.timeoutMs);
    this.#timer ??= setInterval(() => this.#tick(), Math.max(50, Math.min(1000, Math.floor(this.timeoutMs / 4)))).unref();
    return () => void this.#pending.delete(expire);
  }

  #tick(): void {
    const now = Date.now();
    for (const [expire, deadline] of this.#pending) {
      if (deadline > now) continue;
      this.#pending.delete(expire);
      expire();
    }
    if (this.#pending.size === 0) this.stop();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}

/**
 * Reads a body in copied chunks (uWS neuters them on return); null once it passes the
 * limit, TIMED_OUT when it is not complete within the request timeout.
 */
export function readBody(res: HttpResponse, limit: number, clock: BodyClock, done: (body: Buffer | null | typeof TIMED_OUT) => void): void {
  // note: most bodies arrive in one chunk: the list of chunks and the clock are used only from the second.
  let first: Buffer | null = null;
  let chunks: Buffer[] | null = null;
  let size = 0;
  let over = false;
  let cancel: (() => void) | null = null;
  const since = Date.now();
  const finish = (body: Buffer | null | typeof TIMED_OUT): void => {
    over = true;
    cancel?.();
    done(body);
  };
  res.onData((ab, isLast) => {
    if (over) return;
    size += ab.byteLength;
    if (size > limit) return finish(null);
    // note: a copy (uWS neuters `ab` on return), into pooled memory rather than a new ArrayBuffer.
    const chunk = Buffer.allocUnsafe(ab.byteLength);
    chunk.set(new Uint8Array(ab));
    if (first === null) first = chunk;
    else (chunks ??= [first]).push(chunk);
    if (isLast) return finish(chunks === null ? first : Buffer.concat(chunks, size));
    cancel ??= clock.watch(since, () => {
      if (!over) finish(TIMED_OUT);
    });
  });
}

/**
 * Readies a `body: 'stream'` request to be dispatched before its body is read (the pipeline
 * authorizes it first; the caller then runs it): the body is pushed into the request's stream as
 * it arrives, copied (uWS neuters each chunk on return), with pause()/resume() as the consumer's
 * backpressure. The consumer is woken after the data callback (BodyStream's defer), so an answer
 * that closes the connection (413, an error mid-body) is never written inside it, where closing
 * would drop the corked answer.
 */
export function streamBody(ctx: UwsContext, res: HttpResponse, state: State, r: UwsRequest, limit: number): void {
  const body = new BodyStream(
    limit,
    {
      pause: () => {
        if (!state.aborted && !state.done) res.pause();
      },
      resume: () => {
        if (!state.aborted && !state.done) res.resume();
      },
    },
    true,
  );
  state.body = body;
  r.stream = body;
  const cancel = ctx.bodyClock.watch(Date.now(), () => body.fail(new EdgeError('request_timeout', 'the request was not received in time')));
  res.onData((ab, isLast) => {
    if (body.settled) return cancel();
    const chunk = Buffer.allocUnsafe(ab.byteLength);
    chunk.set(new Uint8Array(ab));
    if (!body.push(chunk)) return cancel();
    if (isLast) {
      body.end();
      cancel();
    }
  });
}
