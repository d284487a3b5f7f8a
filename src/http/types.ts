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
 * Dispatches one request and never throws: a throw or a rejection becomes INTERNAL
 * (the backend then closes the connection; see `failed`). Synchronous when the core
 * answered synchronously, so a backend can reply at once (uWS: while still corked).
 */
export function dispatchSafe(core: HttpCore, req: EdgeRequest): EdgeResponse | Promise<EdgeResponse> {
  let out: EdgeResponse | Promise<EdgeResponse>;
  try {
    out = core.dispatch(req);
  } catch {
    return INTERNAL;
  }
  return out instanceof Promise ? out.catch(() => INTERNAL) : out;
}

/** Whether a response is the core's own failure (the connection is closed after it). */
export const failed = (r: EdgeResponse): boolean => r === INTERNAL;
