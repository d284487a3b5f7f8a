import { route, type RouteDef } from '../../edge/route.js';

/**
 * `GET /health`: no auth; `{status, version, uptime_s}`.
 * `GET /health/key`: which project and scopes the presented key (or operator session)
 * has — a cheap way for clients to check their configuration.
 */
export function healthRoutes(version: string, startedAt: number): RouteDef[] {
  // note: the body changes once a second; serialise it once per second, not per request.
  let second = -1;
  let body = Buffer.alloc(0);
  const health = (): Buffer => {
    const up = Math.floor((Date.now() - startedAt) / 1000);
    if (up !== second) body = Buffer.from(JSON.stringify({ status: 'ok', version, uptime_s: (second = up) }));
    return body;
  };
  const keyBodies = new WeakMap<object, Buffer>();
  const operatorBodies = new Map<string, Buffer>();
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
        // note: the body depends only on the credential, so it is serialised once per credential:
        // by the key's own scope set (one per key record), or by project and e-mail for an operator.
        const id = a.keyId !== null ? a.scopes : `${a.operator?.email ?? ''}\n${a.projectId}`;
        let bytes = typeof id === 'string' ? operatorBodies.get(id) : keyBodies.get(id);
        if (bytes === undefined) {
          bytes = Buffer.from(JSON.stringify({ project_id: a.projectId, key_id: a.keyId, role: a.role, scopes: [...a.scopes], operator: a.operator?.email ?? null }));
          if (typeof id !== 'string') keyBodies.set(id, bytes);
          else {
            if (operatorBodies.size >= 1000) operatorBodies.clear();
            operatorBodies.set(id, bytes);
          }
        }
        return { status: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, bytes };
      },
    }),
  ];
}
