import { json, noContent, route, type EdgeResponse, type RouteDef } from '../../edge/route.js';
import type { DbService } from './db.js';

type Body = Record<string, unknown>;
const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };
/** A body the service already serialized (rows spliced from stored JSON). */
const jsonText = (text: string, status = 200): EdgeResponse => ({ status, bytes: text, headers: JSON_TYPE });

/**
 * The database endpoints (DESIGN.md §6, docs/api.md "Database"). Reads need
 * `data:read`, row writes `data:write`; table DDL and RLS writes need the service
 * role (service key or operator session). A Bearer token, when sent, makes RLS
 * policies see the user.
 */
export function dbRoutes(db: DbService): RouteDef[] {
  return [
    route({ method: 'GET', path: '/db/schema', auth: 'key', scope: 'data:read', handler: (_r, c) => json(db.schema(c.project)) }),
    route({ method: 'GET', path: '/db/tables', auth: 'key', scope: 'data:read', handler: (_r, c) => json(db.listTables(c.project)) }),
    route({
      method: 'POST',
      path: '/db/tables',
      auth: 'key',
      scope: 'data:write',
      role: 'service_role',
      body: 'json',
      handler: (r, c) => json(db.createTable(c.project, r.json as Body), 201),
    }),
    route({
      method: 'DELETE',
      path: '/db/tables/:t',
      auth: 'key',
      scope: 'data:write',
      role: 'service_role',
      handler: (r, c) => {
        db.dropTable(c.project, r.params.t!);
        return noContent();
      },
    }),
    route({
      method: 'GET',
      path: '/db/tables/:t/rls',
      auth: 'key',
      scope: 'data:read',
      handler: (r, c) => json(db.getRls(c.project, r.params.t!)),
    }),
    route({
      method: 'PUT',
      path: '/db/tables/:t/rls',
      auth: 'key',
      scope: 'data:write',
      role: 'service_role',
      body: 'json',
      handler: (r, c) => json(db.putRls(c.project, r.params.t!, r.json as Body)),
    }),
    route({
      method: 'GET',
      path: '/db/tables/:t/rows',
      auth: 'bearer?',
      scope: 'data:read',
      handler: (r, c) => jsonText(db.list(c.project, c.auth, r.params.t!, r.query)),
    }),
    route({
      method: 'POST',
      path: '/db/tables/:t/rows',
      auth: 'bearer?',
      scope: 'data:write',
      body: 'json',
      handler: (r, c) => jsonText(db.insert(c.project, c.auth, r.params.t!, r.json), 201),
    }),
    route({
      method: 'GET',
      path: '/db/tables/:t/rows/:id',
      auth: 'bearer?',
      scope: 'data:read',
      handler: (r, c) => jsonText(db.get(c.project, c.auth, r.params.t!, r.params.id!)),
    }),
    route({
      method: 'PATCH',
      path: '/db/tables/:t/rows/:id',
      auth: 'bearer?',
      scope: 'data:write',
      body: 'json',
      handler: (r, c) => jsonText(db.update(c.project, c.auth, r.params.t!, r.params.id!, r.json)),
    }),
    route({
      method: 'DELETE',
      path: '/db/tables/:t/rows/:id',
      auth: 'bearer?',
      scope: 'data:write',
      handler: (r, c) => {
        db.delete(c.project, c.auth, r.params.t!, r.params.id!);
        return noContent();
      },
    }),
  ];
}
