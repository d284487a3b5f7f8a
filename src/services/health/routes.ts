import { json, route, type RouteDef } from '../../edge/route.js';

/**
 * `GET /health`: no auth; `{status, version, uptime_s}`.
 * `GET /health/key`: which project and scopes the presented key (or operator session)
 * has — a cheap way for clients to check their configuration.
 */
export function healthRoutes(version: string, startedAt: number): RouteDef[] {
  // note: the body changes once a second; serialise it once per second, not per request.
  let second = -1;
  let body = '';
  const health = (): string => {
    const up = Math.floor((Date.now() - startedAt) / 1000);
    if (up !== second) body = JSON.stringify({ status: 'ok', version, uptime_s: (second = up) });
    return body;
  };
  return [
    route({
      method: 'GET',
      path: '/health',
      auth: 'none',
      handler: () => ({ status: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, bytes: health() }),
    }),
    route({
      method: 'GET',
      path: '/health/key',
      auth: 'key',
      handler: (_req, ctx) =>
        json({
          project_id: ctx.auth.projectId,
          key_id: ctx.auth.keyId,
          role: ctx.auth.role,
          scopes: [...ctx.auth.scopes],
          operator: ctx.auth.operator?.email ?? null,
        }),
    }),
  ];
}
