import { EdgeError, normalize } from '../../core/errors.js';
import type { AuthContext, Scope } from '../../core/auth-context.js';
import { requireScope } from '../../edge/scopes.js';
import type { ProjectLease } from '../../project/registry.js';
import type { Admission } from '../../sql/worker/pool.js';
import type { DbService } from './db.js';
import type { QueryService } from './query.js';

/**
 * JSON-RPC 2.0 over the database service (`POST /db/rpc`): the same operations, scopes
 * and RLS as the REST routes, one method per operation (docs/api.md).
 */
export const MAX_BATCH = 100;
/** The scopes /db/rpc admits a key with (any one); each method then needs its own. */
/** The route scope of the doors that serve several operations (JSON-RPC, GraphQL): any data scope; each operation then needs its own. */
export const DATA_SCOPES: readonly Scope[] = ['data:read', 'data:write'];

type Id = string | number | null;
interface RpcError {
  code: number;
  message: string;
  data?: { code: string; status: number; details?: Record<string, unknown> };
}
export interface RpcResponse {
  jsonrpc: '2.0';
  id: Id;
  result?: unknown;
  error?: RpcError;
}

type Params = Record<string, unknown>;
interface Method {
  scope: Scope;
  run(p: Params, lease: ProjectLease, auth: AuthContext, at: Admission): unknown;
}

const invalidParams = (message: string): RpcError => ({ code: -32602, message });
class ParamError extends Error {}

const str = (p: Params, k: string): string => {
  const v = p[k];
  if (typeof v !== 'string' || v === '') throw new ParamError(`params.${k} must be a non-empty string`);
  return v;
};
/** A row id: a string, or an integer for a table with an integer key (docs/sql.md). */
const rowId = (p: Params): string => (Number.isSafeInteger(p.id) ? String(p.id) : str(p, 'id'));

/** The list params (`filter`, `or`, `select`, `order`, `limit`, `offset`, `count`) as the REST query string. */
function listQuery(p: Params): URLSearchParams {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(p)) {
    if (k === 'table') continue;
    const values = Array.isArray(v) ? v : [v];
    for (const x of values) {
      if (typeof x !== 'string' && typeof x !== 'number') throw new ParamError(`params.${k} must be a string, a number or an array of strings`);
      q.append(k, String(x));
    }
  }
  return q;
}

export class RpcService {
  /** A Map, so that only the methods below are found (never `constructor`, `__proto__`, `toString`, …). */
  readonly #methods: ReadonlyMap<string, Method>;

  constructor(db: DbService, query: QueryService) {
    const methods: Record<string, Method> = {
      'db.tables': { scope: 'data:read', run: (_p, lease) => db.listTables(lease) },
      'db.schema': { scope: 'data:read', run: (_p, lease) => db.schema(lease) },
      'db.list': { scope: 'data:read', run: (p, lease, auth) => parsed(db.list(lease, auth, str(p, 'table'), listQuery(p))) },
      'db.get': { scope: 'data:read', run: (p, lease, auth) => parsed(db.get(lease, auth, str(p, 'table'), rowId(p))) },
      'db.insert': { scope: 'data:write', run: (p, lease, auth) => parsed(db.insert(lease, auth, str(p, 'table'), { data: p.data })) },
      'db.update': { scope: 'data:write', run: (p, lease, auth) => parsed(db.update(lease, auth, str(p, 'table'), rowId(p), { data: p.data })) },
      'db.delete': {
        scope: 'data:write',
        run: (p, lease, auth) => {
          db.delete(lease, auth, str(p, 'table'), rowId(p));
          return { deleted: true };
        },
      },
      'db.query': {
        scope: 'data:read',
        run: (p, lease, auth, at) => {
          const params = p.params ?? [];
          if (!Array.isArray(params)) throw new ParamError('params.params must be an array');
          return query.run(lease, auth, str(p, 'sql'), params, at);
        },
      },
    };
    this.#methods = new Map(Object.entries(methods));
  }

  /**
   * Handles a parsed body: one call, or a batch (array in, array out). Null: nothing to
   * answer (notifications). `at` is the request's one SQL time budget: the db.query calls of
   * a batch share it, each getting what the earlier ones left.
   */
  async handle(body: unknown, lease: () => ProjectLease, auth: AuthContext, at: Admission): Promise<RpcResponse | RpcResponse[] | null> {
    if (Array.isArray(body)) {
      if (body.length === 0) return fail(null, { code: -32600, message: 'invalid request: empty batch' });
      if (body.length > MAX_BATCH) return fail(null, { code: -32600, message: `invalid request: a batch holds at most ${MAX_BATCH} calls` });
      const out: RpcResponse[] = [];
      // note: calls run one after another, in order, like the REST requests they stand for.
      for (const call of body) {
        const r = await this.#call(call, lease, auth, at);
        if (r) out.push(r);
      }
      return out.length ? out : null;
    }
    return this.#call(body, lease, auth, at);
  }

  async #call(call: unknown, lease: () => ProjectLease, auth: AuthContext, at: Admission): Promise<RpcResponse | null> {
    if (call === null || typeof call !== 'object' || Array.isArray(call)) return fail(null, { code: -32600, message: 'invalid request: a call is an object' });
    const c = call as Record<string, unknown>;
    const hasId = 'id' in c;
    const id: Id = typeof c.id === 'string' || typeof c.id === 'number' || c.id === null ? (c.id as Id) : null;
    if (c.jsonrpc !== '2.0' || typeof c.method !== 'string' || (hasId && id === null && c.id !== null)) {
      return fail(id, { code: -32600, message: 'invalid request: needs "jsonrpc": "2.0", a string "method" and an optional string or number "id"' });
    }
    const reply = (r: RpcResponse): RpcResponse | null => (hasId ? r : null);
    const m = this.#methods.get(c.method);
    if (!m) return reply(fail(id, { code: -32601, message: `method not found: ${c.method.slice(0, 100)}` }));
    const params = c.params ?? {};
    if (params === null || typeof params !== 'object' || Array.isArray(params)) return reply(fail(id, invalidParams('params must be an object (named parameters)')));
    try {
      // note: the route admits any data scope (DATA_SCOPES); each method needs its own, checked as the pipeline checks a route's.
      requireScope(auth.scopes, m.scope);
      const result = await m.run(params as Params, lease(), auth, at);
      return reply({ jsonrpc: '2.0', id, result: result ?? null });
    } catch (err) {
      if (err instanceof ParamError) return reply(fail(id, invalidParams(err.message)));
      const e = normalize(err);
      if (e.code === 'internal') return reply(fail(id, { code: -32603, message: 'internal error' }));
      return reply(fail(id, dataError(e)));
    }
  }
}

/** The rows API answers some reads as ready JSON text (its fast path); RPC embeds them as values. */
// note: a view's rows come later (db.list/db.get of a view run in the SQL worker pool).
const parsed = (v: unknown): unknown => (v instanceof Promise ? v.then(parsed) : typeof v === 'string' ? (JSON.parse(v) as unknown) : v);

const fail = (id: Id, error: RpcError): RpcResponse => ({ jsonrpc: '2.0', id, error });

/** A service error as a JSON-RPC error: server-error range, our code and HTTP status in `data`. */
function dataError(e: EdgeError): RpcError {
  const data: NonNullable<RpcError['data']> = { code: e.code, status: e.status };
  if (e.details && (e.code === 'invalid_field' || e.code === 'missing_scope' || 'sqlstate' in e.details)) data.details = e.details;
  return { code: -32000, message: e.message, data };
}
