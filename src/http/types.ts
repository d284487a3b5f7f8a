import type { EdgeRequest, EdgeResponse } from '../edge/route.js';

/** What an HTTP backend needs from the edge: the socket-free core. */
export interface HttpCore {
  dispatch(req: EdgeRequest): Promise<EdgeResponse>;
  /** The body limit of the route a request goes to, known before reading the body. */
  bodyLimit(method: string, path: string): number;
}

export interface HttpServer {
  readonly backend: 'uws' | 'node';
  readonly port: number;
  /** Stops accepting, ends open streams, and resolves when in-flight requests finished (or the deadline passed). */
  shutdown(deadlineMs: number): Promise<void>;
}

export const METHODS_WITHOUT_BODY = new Set(['GET', 'HEAD', 'OPTIONS', 'DELETE']);
