import { route, type RouteDef } from '../../edge/route.js';

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
  const bodies = new Map<string, string>();
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
      handler: (_req, ctx) => {
        const a = ctx.auth;
        // note: the body depends only on the credential, so it is serialised once per credential.
        const id = `${a.keyId ?? ''}\n${a.operator?.email ?? ''}\n${a.projectId}\n${a.role}`;
        let bytes = bodies.get(id);
        if (bytes === undefined) {
          bytes = JSON.stringify({ project_id: a.projectId, key_id: a.keyId, role: a.role, scopes: [...a.scopes], operator: a.operator?.email ?? null });
          if (bodies.size >= 1000) bodies.clear();
          bodies.set(id, bytes);
        }
        return { status: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, bytes };
      },
    }),
  ];
}
