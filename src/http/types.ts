import { STATUS_TEXT } from './status-text.js';
import type { Config } from '../config.js';
import { EdgeError, toHttp } from '../core/errors.js';
import { newRequestId } from '../edge/request-id.js';
import type { EdgeRequest, EdgeResponse } from '../edge/route.js';
import type { TopicHub } from '../edge/ws-topics.js';

/** The connection settings a backend applies (docs/operations.md, "Connections and timeouts"). */
export type HttpLimits = Pick<
  Config,
  'headersTimeoutMs' | 'requestTimeoutMs' | 'keepAliveTimeoutMs' | 'maxConnections' | 'maxConnectionsPerIp' | 'wsMaxBackpressure' | 'wsIdleTimeoutS' | 'wsMaxMessage'
>;

/** The request line and headers together, bytes at most (node:http; the pinned uWS has its own, docs/api.md). */
export const MAX_HEADER_BYTES = 64 * 1024;

/**
 * A whole error response as raw HTTP/1.1 bytes, with the error envelope and `Connection: close`,
 * for faults a backend answers before (or instead of) a request: the connection is closed after it.
 */
export function rawErrorResponse(err: EdgeError): string {
  const requestId = newRequestId(undefined);
  const h = toHttp(err, requestId);
  const body = JSON.stringify(h.body);
  let head = `HTTP/1.1 ${h.status} ${STATUS_TEXT[h.status] ?? 'Error'}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\nconnection: close\r\n`;
  for (const k in h.headers) head += `${k}: ${h.headers[k]!}\r\n`;
  return `${head}\r\n${body}`;
}

/** An error as a response a backend writes itself (outside the pipeline), with its request id. */
export function errorResponse(err: EdgeError): EdgeResponse {
  const requestId = newRequestId(undefined);
  const h = toHttp(err, requestId);
  return { status: h.status, headers: { ...h.headers, 'x-request-id': requestId }, json: h.body };
}

/** What a backend sends when the core itself failed (the core maps every handler error). */
export const INTERNAL: EdgeResponse = { status: 500, json: { error: { code: 'internal', message: 'internal error' } } };

/** What an HTTP backend needs from the edge: the socket-free core. */
export interface HttpCore {
  /** Synchronous when the answer is ready at once (then the uWS adapter replies while corked). */
  dispatch(req: EdgeRequest): EdgeResponse | Promise<EdgeResponse>;
  /** The body limit of the route a request goes to, known before reading the body. */
  bodyLimit(method: string, path: string): number;
  /** Whether the route a request goes to reads its body as a stream (`body: 'stream'`). */
  streamsBody(method: string, path: string): boolean;
  /**
   * Answers a WebSocket upgrade request (`req.upgrade` set), authorized like any request: a
   * response with `ws` accepts it (the backend upgrades and drives the handlers), any other
   * is written as the HTTP answer (with the error envelope) and no socket is opened.
   */
  upgrade(req: EdgeRequest): EdgeResponse | Promise<EdgeResponse>;
  /** The server's topics; the backend binds its publisher while it listens. */
  readonly topics: TopicHub;
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

/** upgrade() that never throws, like dispatchSafe. */
export function upgradeSafe(core: HttpCore, req: EdgeRequest): EdgeResponse | Promise<EdgeResponse> {
  let out: EdgeResponse | Promise<EdgeResponse>;
  try {
    out = core.upgrade(req);
  } catch {
    return INTERNAL;
  }
  return out instanceof Promise ? out.catch(() => INTERNAL) : out;
}

/** A whole response as raw HTTP/1.1 bytes with `Connection: close` (an upgrade request refused on node's raw socket). */
export function rawResponse(r: EdgeResponse): Buffer {
  const body = r.json !== undefined ? Buffer.from(JSON.stringify(r.json)) : Buffer.from(r.bytes ?? '');
  let head = `HTTP/1.1 ${r.status} ${STATUS_TEXT[r.status] ?? 'Error'}\r\n`;
  if (r.json !== undefined) head += 'content-type: application/json; charset=utf-8\r\n';
  const h = r.headers ?? {};
  for (const k in h) head += `${k}: ${h[k]!.replace(/[\r\n]/g, '')}\r\n`;
  head += `content-length: ${body.byteLength}\r\nconnection: close\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/** Whether a response is the core's own failure (the connection is closed after it). */
export const failed = (r: EdgeResponse): boolean => r === INTERNAL;
