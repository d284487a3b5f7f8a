import type { HttpBackend } from '../config.js';
import { loadNativeUws } from './native.js';
import type { HttpCore, HttpLimits, HttpServer } from './types.js';
import { startUws } from './uws-adapter.js';

export type { HttpCore, HttpLimits, HttpServer } from './types.js';

/**
 * Starts the HTTP backend: native uWS when its binary loaded (or when forced), else
 * node:http. Forcing `uws` where no native binary exists is an error, never a shim.
 * The node:http adapter (and `ws` with its native helpers, about 80 ms and 11 MB) loads only
 * when it is the one started, so the default uWS server starts without it.
 */
export async function startHttp(backend: HttpBackend, core: HttpCore, host: string, port: number, limits: HttpLimits): Promise<HttpServer> {
  const startNode = async (): Promise<HttpServer> => (await import('./node-adapter.js')).startNode(core, host, port, limits);
  if (backend === 'node') return startNode();
  const uws = loadNativeUws();
  if (uws) return startUws(uws, core, host, port, limits);
  if (backend === 'uws') {
    throw new Error(`the native uWebSockets.js binary is not available for Node ${process.version}; use PLATFORM_EDGE_HTTP=node`);
  }
  return startNode();
}
