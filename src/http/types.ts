import type { EdgeRequest, EdgeResponse } from '../edge/route.js';

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

