import { EdgeError } from '../core/errors.js';
import type { EdgeRequest } from './route.js';

/** Why a request that waited for its turn did not run: its client had closed the connection (never sent). */
export const clientGone = (): EdgeError => new EdgeError('invalid_request', 'the client closed the connection before the request ran');

let deferred: (() => void)[] = [];
const runDeferred = (): void => {
  const batch = deferred;
  deferred = [];
  for (const go of batch) go();
};

/**
 * Resolves on the next check phase of the event loop (one setImmediate for every request
 * waiting), or rejects if the request's client has gone by then: the uWS backend closes a
 * connection on which another request arrives while one is pending, so a request pipelined
 * behind this one in the same read means this one will never be answered, and must not run
 * (docs/api.md, "HTTP/1.1 pipelining").
 */
export function nextTurn(req: EdgeRequest): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (deferred.length === 0) setImmediate(runDeferred);
    deferred.push(() => ((req.aborted ?? req.signal.aborted) ? reject(clientGone()) : resolve()));
  });
}
