import { EdgeError } from '../../core/errors.js';
import { parseJsonBody } from '../../edge/json-body.js';
import { json, noContent, route, type EdgeResponse, type RouteDef } from '../../edge/route.js';
import { QueryService } from './query.js';
import type { GraphQLAnswer, GraphQLBody, GraphQLService } from './graphql.js';
import { DATA_SCOPES, type RpcService } from './rpc.js';

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
        const b = query.parseBody(req.json);
        const fast = query.fast(ctx.project, ctx.auth, b.sql, b.params);
        if (fast !== null) return { status: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, bytes: fast };
        // note: the budget starts now, so the wait for the next loop turn counts against it.
        const budget = query.budget(ctx.auth.projectId, b.timeoutMs);
        return ctx.later().then(() => query.run(ctx.project, ctx.auth, b.sql, b.params, budget)).then((r) => json(r));
      },
    }),
    route({
      method: 'POST',
      path: '/db/rpc',
      auth: 'bearer?',
      // note: any data scope; each method checks its own (rpc.ts), as REST checks each route's.
      scope: DATA_SCOPES,
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
        // note: one SQL time budget for the whole request; a batch's db.query calls share it.
        const out = await rpc.handle(body, () => ctx.project, ctx.auth, query.budget(ctx.auth.projectId));
        return out === null ? noContent() : json(out);
      },
    }),
    // note: any data scope here; GraphQL checks each operation's own (a query data:read, a mutation data:write).
    route({
      method: 'POST',
      path: '/db/graphql',
      auth: 'bearer?',
      scope: DATA_SCOPES,
      body: 'json',
      maxBody: SQL_MAX_BODY,
      handler: async (req, ctx) => graphqlResponse(await gql.run(ctx.project, ctx.auth, req.json as GraphQLBody, 'POST')),
    }),
    route({
      method: 'GET',
      path: '/db/graphql',
      auth: 'bearer?',
      scope: DATA_SCOPES,
      handler: async (req, ctx) => {
        const body: GraphQLBody = { query: req.query.get('query') ?? undefined, variables: req.query.get('variables') || null, operationName: req.query.get('operationName') };
        return graphqlResponse(await gql.run(ctx.project, ctx.auth, body, 'GET'));
      },
    }),
  ];
}

/** A GraphQL answer, already serialized by the service (it measures the bytes against its cap). */
const graphqlResponse = (r: GraphQLAnswer): EdgeResponse => ({ status: r.status, headers: { 'content-type': 'application/json; charset=utf-8' }, bytes: r.json });
