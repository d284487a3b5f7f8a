import type { EdgeRequest, EdgeResponse } from '../edge/route.js';

/** What a backend sends when the core itself failed (the core maps every handler error). */
export const INTERNAL: EdgeResponse = { status: 500, json: { error: { code: 'internal', message: 'internal error' } } };

/** What an HTTP backend needs from the edge: the socket-free core. */
export interface HttpCore {
  /** Synchronous when the answer is ready at once (then the uWS adapter replies while corked). */
  dispatch(req: EdgeRequest): EdgeResponse | Promise<EdgeResponse>;
  /** The body limit of the route a request goes to, known before reading the body. */
  bodyLimit(method: string, path: string): number;
}

export interface HttpServer {
  readonly backend: 'uws' | 'node';
  readonly port: number;
  /** Stops accepting, ends open streams, and resolves when in-flight requests finished (or the deadline passed). */
  shutdown(deadlineMs: number): Promise<void>;
}


/**
 * Dispatches one request and hands the answer to `reply`: at once when the core answered
 * synchronously, else after `onWait()` and the promise. A throw or a rejection becomes
 * INTERNAL with `failed` set (the backend then closes the connection).
 */
export function dispatchTo(core: HttpCore, req: EdgeRequest, reply: (r: EdgeResponse, failed: boolean) => void, onWait?: () => void): void {
  let out: EdgeResponse | Promise<EdgeResponse>;
  try {
    out = core.dispatch(req);
  } catch {
    return reply(INTERNAL, true);
  }
  if (!(out instanceof Promise)) return reply(out, false);
  onWait?.();
  out.then(
    (r) => reply(r, false),
    () => reply(INTERNAL, true),
  );
}
