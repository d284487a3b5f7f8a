import type { HttpBackend } from '../config.js';
import { loadNativeUws } from './native.js';
import { startNode } from './node-adapter.js';
import type { HttpCore, HttpLimits, HttpServer } from './types.js';
import { startUws } from './uws-adapter.js';

export type { HttpCore, HttpLimits, HttpServer } from './types.js';

/**
 * Starts the HTTP backend: native uWS when its binary loaded (or when forced), else
 * node:http. Forcing `uws` where no native binary exists is an error, never a shim.
 */
export function startHttp(backend: HttpBackend, core: HttpCore, host: string, port: number, limits: HttpLimits): Promise<HttpServer> {
  if (backend === 'node') return startNode(core, host, port, limits);
  const uws = loadNativeUws();
  if (uws) return startUws(uws, core, host, port, limits);
  if (backend === 'uws') {
    return Promise.reject(new Error(`the native uWebSockets.js binary is not available for Node ${process.version}; use PLATFORM_EDGE_HTTP=node`));
  }
  return startNode(core, host, port, limits);
}
