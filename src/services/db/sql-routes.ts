import { EdgeError } from '../../edge/errors.js';
import { parseJsonBody } from '../../edge/json-body.js';
import { json, noContent, route, type RouteDef } from '../../edge/route.js';
import { QueryService } from './query.js';
import type { GraphQLBody, GraphQLService } from './graphql.js';
import type { RpcService } from './rpc.js';

/** Raw SQL body limit: far above any real statement, far below what would stall the parser. */
export const SQL_MAX_BODY = 1024 * 1024;

/** The SQL surface of the db service: raw SQL and JSON-RPC (docs/api.md "Raw SQL, JSON-RPC and GraphQL"). */
export function sqlRoutes(query: QueryService, rpc: RpcService, gql: Pick<GraphQLService, 'run'>): RouteDef[] {
  return [
    route({
      method: 'POST',
      path: '/db/query',
      auth: 'bearer?',
      scope: 'data:read',
      body: 'json',
      maxBody: SQL_MAX_BODY,
      // note: a cached point lookup (a read) answers at once; anything else waits for the next loop
      // turn first, so it never runs when uWS will not answer it (docs/api.md, "HTTP/1.1 pipelining").
      awaits: false,
      handler: (req, ctx) => {
        const b = QueryService.parseBody(req.json);
        const fast = query.fast(ctx.project, ctx.auth, b.sql, b.params);
        if (fast !== null) return { status: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, bytes: fast };
        return ctx.later().then(() => query.run(ctx.project, ctx.auth, b.sql, b.params, b.timeoutMs)).then((r) => json(r));
      },
    }),
    route({
      method: 'POST',
      path: '/db/rpc',
      auth: 'bearer?',
      scope: 'data:read',
      // note: raw, so that a body that is not JSON answers JSON-RPC's -32700 instead of 400.
      body: 'raw',
      maxBody: SQL_MAX_BODY,
      handler: async (req, ctx) => {
        let body: unknown;
        try {
          body = parseJsonBody(req, ctx.config, true);
        } catch (err) {
          if (err instanceof EdgeError && err.code === 'invalid_body') {
            return json({ jsonrpc: '2.0', id: null, error: { code: -32700, message: `parse error: ${err.message}` } });
          }
          throw err;
        }
        const out = await rpc.handle(body, () => ctx.project, ctx.auth);
        return out === null ? noContent() : json(out);
      },
    }),
    route({
      method: 'POST',
      path: '/db/graphql',
      auth: 'bearer?',
      scope: 'data:read',
      body: 'json',
      maxBody: SQL_MAX_BODY,
      handler: async (req, ctx) => {
        const r = await gql.run(ctx.project, ctx.auth, req.json as GraphQLBody, 'POST');
        return json(r.body, r.status);
      },
    }),
    route({
      method: 'GET',
      path: '/db/graphql',
      auth: 'bearer?',
      scope: 'data:read',
      handler: async (req, ctx) => {
        let variables: unknown = null;
        const v = req.query.get('variables');
        if (v) {
          try {
            variables = JSON.parse(v) as unknown;
          } catch {
            return json({ errors: [{ message: 'variables must be JSON', extensions: { code: 'invalid_field' } }] }, 400);
          }
        }
        const body: GraphQLBody = { query: req.query.get('query') ?? undefined, variables, operationName: req.query.get('operationName') };
        const r = await gql.run(ctx.project, ctx.auth, body, 'GET');
        return json(r.body, r.status);
      },
    }),
  ];
}
