import { json, route, type RouteDef } from '../../edge/route.js';

/** `GET /health`: no auth; `{status, version, uptime_s}`. */
export function healthRoutes(version: string, startedAt: number): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/health',
      auth: 'none',
      handler: () => json({ status: 'ok', version, uptime_s: Math.floor((Date.now() - startedAt) / 1000) }),
    }),
  ];
}
