import {
  GraphQLBoolean,
  GraphQLError,
  GraphQLFloat,
  GraphQLID,
  GraphQLInputObjectType,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLSchema,
  GraphQLString,
  Kind,
  execute,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLFieldConfig,
  type GraphQLInputFieldConfig,
  type GraphQLOutputType,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import { EdgeError, normalize } from '../../edge/errors.js';
import type { AuthContext } from '../../edge/route.js';
import type { ProjectLease } from '../../project/registry.js';
import type { DbService } from './db.js';
import type { ColumnType as CatalogType, TableInfo } from './types.js';

/**
 * GraphQL over the database service (`POST/GET /db/graphql`), with `graphql` (DESIGN.md §2).
 * The schema is generated from the db catalog and rebuilt when it changes. Every field
 * resolves through DbService, so scopes and RLS are the caller's, as in REST. Foreign keys
 * become nested fields resolved in one list query per level (no N+1).
 */
export const MAX_DEPTH = 8;
export const MAX_FIELDS = 500;
const MAX_QUERY = 64 * 1024;

interface Ctx {
  lease: ProjectLease;
  auth: AuthContext;
  /** Per request: batched by-id loads, keyed by table. */
  loaders: Map<string, Loader>;
}

type Row = Record<string, unknown>;
interface Wire {
  id: string | number;
  data: Record<string, unknown>;
  created_at?: string;
  updated_at?: string;
}

export interface GraphQLBody {
  query?: unknown;
  variables?: unknown;
  operationName?: unknown;
}

const JSONScalar = new GraphQLScalarType({
  name: 'JSON',
  description: 'Any JSON value.',
  serialize: (v) => v,
  parseValue: (v) => v,
  parseLiteral: (ast) => literal(ast),
});

function literal(ast: ValueNode): unknown {
  switch (ast.kind) {
    case Kind.STRING:
    case Kind.ENUM:
      return ast.value;
    case Kind.BOOLEAN:
      return ast.value;
    case Kind.INT:
    case Kind.FLOAT:
      return Number(ast.value);
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return ast.values.map(literal);
    case Kind.OBJECT:
      return Object.fromEntries(ast.fields.map((f) => [f.name.value, literal(f.value)]));
    default:
      return undefined;
  }
}

const SCALAR: Record<CatalogType, GraphQLOutputType> = {
  text: GraphQLString,
  int8: GraphQLFloat,
  float8: GraphQLFloat,
  bool: GraphQLBoolean,
  timestamptz: GraphQLString,
  jsonb: JSONScalar,
  uuid: GraphQLString,
  bytea: GraphQLString,
};

const OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike'] as const;
const ComparisonInput = new GraphQLInputObjectType({
  name: 'Comparison',
  description: 'The filter operators of the rows API; values are compared with the column typed.',
  fields: () => {
    const f: Record<string, GraphQLInputFieldConfig> = {};
    for (const op of OPS) f[op] = { type: JSONScalar };
    f.in = { type: new GraphQLList(JSONScalar) };
    f.is = { type: GraphQLString, description: 'null, true or false' };
    f.contains = { type: JSONScalar };
    return f;
  },
});

const schemas = new WeakMap<Map<string, TableInfo>, GraphQLSchema>();

export class GraphQLService {
  constructor(readonly db: DbService) {}

  /** The project's schema, cached until its table catalog changes. */
  schema(lease: ProjectLease): GraphQLSchema {
    const tables = this.db.tables(lease);
    let s = schemas.get(tables);
    if (!s) {
      s = build(this.db, tables);
      schemas.set(tables, s);
    }
    return s;
  }

  /** Runs one GraphQL request; returns the HTTP status and the GraphQL response. */
  async run(lease: ProjectLease, auth: AuthContext, body: GraphQLBody, method: 'GET' | 'POST'): Promise<{ status: number; body: unknown }> {
    const { query, variables = null, operationName = null } = body;
    if (typeof query !== 'string' || query.trim() === '') return fail(400, 'query must be a non-empty string', 'invalid_field');
    if (query.length > MAX_QUERY) return fail(413, `query is longer than ${MAX_QUERY} characters`, 'payload_too_large');
    if (variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) return fail(400, 'variables must be an object', 'invalid_field');
    if (operationName !== null && typeof operationName !== 'string') return fail(400, 'operationName must be a string', 'invalid_field');
    let doc: DocumentNode;
    try {
      doc = parse(query, { maxTokens: 10_000 });
    } catch (err) {
      return fail(400, (err as Error).message, 'invalid_request');
    }
    const schema = this.schema(lease);
    const errors = validate(schema, doc, specifiedRules);
    if (errors.length) return { status: 400, body: { errors: errors.map((e) => ({ message: e.message, locations: e.locations, extensions: { code: 'invalid_request' } })) } };
    const limit = limits(doc, operationName as string | null);
    if (limit) return fail(400, limit, 'invalid_request');
    if (method === 'GET' && operationKind(doc, operationName as string | null) !== 'query') return fail(405, 'mutations need POST', 'method_not_allowed');
    const ctx: Ctx = { lease, auth, loaders: new Map() };
    const result = await execute({ schema, document: doc, contextValue: ctx, variableValues: variables as Record<string, unknown> | null, operationName: operationName as string | null });
    const out: Record<string, unknown> = { data: result.data ?? null };
    if (result.errors?.length) out.errors = result.errors.map(formatError);
    return { status: 200, body: out };
  }
}

const fail = (status: number, message: string, code: string) => ({ status, body: { errors: [{ message, extensions: { code } }] } });

function formatError(e: GraphQLError): unknown {
  const orig = e.originalError;
  let code = 'invalid_request';
  let message = e.message;
  if (orig && !(orig instanceof GraphQLError)) {
    const n = normalize(orig);
    code = n.code;
    message = n.code === 'internal' ? 'internal error' : n.message;
  } else if (typeof e.extensions?.code === 'string') code = e.extensions.code;
  return { message, locations: e.locations, path: e.path, extensions: { code } };
}

function operationKind(doc: DocumentNode, name: string | null): string | null {
  const ops = doc.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  const op = name ? ops.find((d) => d.name?.value === name) : ops[0];
  return op ? op.operation : null;
}

/** Depth and field-count limits over the operation, fragments expanded. */
function limits(doc: DocumentNode, name: string | null): string | null {
  const frags = new Map<string, FragmentDefinitionNode>();
  for (const d of doc.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) frags.set(d.name.value, d);
  const ops = doc.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  const op = name ? ops.find((d) => d.name?.value === name) : ops[0];
  if (!op) return null;
  let fields = 0;
  let tooDeep = false;
  const walk = (set: SelectionSetNode, depth: number, seen: Set<string>): void => {
    for (const sel of set.selections) {
      if (fields > MAX_FIELDS || tooDeep) return;
      if (sel.kind === Kind.FIELD) {
        if (sel.name.value.startsWith('__')) continue;
        fields++;
        if (sel.selectionSet) {
          if (depth + 1 > MAX_DEPTH) {
            tooDeep = true;
            return;
          }
          walk(sel.selectionSet, depth + 1, seen);
        }
      } else if (sel.kind === Kind.INLINE_FRAGMENT) walk(sel.selectionSet, depth, seen);
      else {
        const f = frags.get(sel.name.value);
        if (f && !seen.has(f.name.value)) walk(f.selectionSet, depth, new Set([...seen, f.name.value]));
      }
    }
  };
  walk(op.selectionSet, 1, new Set());
  if (tooDeep) return `the query nests deeper than ${MAX_DEPTH} levels`;
  if (fields > MAX_FIELDS) return `the query selects more than ${MAX_FIELDS} fields`;
  return null;
}

/** A wire row → the GraphQL object: relational columns flattened beside id and timestamps. */
function flat(t: TableInfo, r: Wire): Row {
  if (t.def.kind === 'document') return { id: r.id, data: r.data, created_at: r.created_at, updated_at: r.updated_at };
  if (t.def.stamps === false) return { ...r.data, id: r.id };
  return { ...r.data, id: r.id, created_at: r.created_at, updated_at: r.updated_at };
}

const parsed = <T>(v: unknown): T => (typeof v === 'string' ? (JSON.parse(v) as T) : (v as T));
const quote = (v: unknown): string => `"${String(v).replace(/[\\"]/g, '\\$&')}"`;

/** Where-input → the rows API's filter strings (`col.op.value`, values quoted). */
function filters(where: Record<string, Record<string, unknown> | null> | null | undefined): URLSearchParams {
  const q = new URLSearchParams();
  for (const [col, ops] of Object.entries(where ?? {})) {
    for (const [op, v] of Object.entries(ops ?? {})) {
      if (v === undefined) continue;
      if (op === 'in') q.append('filter', `${col}.in.(${(v as unknown[]).map(quote).join(',')})`);
      else if (op === 'is') q.append('filter', `${col}.is.${String(v)}`);
      else if (op === 'contains') q.append('filter', `${col}.contains.${typeof v === 'string' ? quote(v) : JSON.stringify(v)}`);
      else q.append('filter', `${col}.${op}.${v === null ? 'null' : typeof v === 'object' ? quote(JSON.stringify(v)) : quote(v)}`);
    }
  }
  return q;
}

/** Batches the by-key loads of one table in one tick into one list query (`key.in.(…)`). */
class Loader {
  #pending = new Map<string, Array<{ resolve: (r: Row | null) => void; reject: (e: unknown) => void }>>();
  #scheduled = false;
  constructor(
    readonly db: DbService,
    readonly t: TableInfo,
    readonly column: string,
    readonly ctx: Ctx,
  ) {}

  load(key: string): Promise<Row | null> {
    return new Promise((resolve, reject) => {
      const waiters = this.#pending.get(key) ?? [];
      waiters.push({ resolve, reject });
      this.#pending.set(key, waiters);
      if (!this.#scheduled) {
        this.#scheduled = true;
        // note: resolvers of one level run in the same tick, so one microtask sees all their keys.
        queueMicrotask(() => this.#flush());
      }
    });
  }

  #flush(): void {
    const batch = this.#pending;
    this.#pending = new Map();
    this.#scheduled = false;
    const keys = [...batch.keys()];
    const found = new Map<string, Row>();
    try {
      for (let i = 0; i < keys.length; i += 1000) {
        const part = keys.slice(i, i + 1000);
        const q = new URLSearchParams({ limit: '1000', filter: `${this.column}.in.(${part.map(quote).join(',')})` });
        const out = parsed<{ rows: Wire[] }>(this.db.list(this.ctx.lease, this.ctx.auth, this.t.def.name, q));
        for (const r of out.rows) {
          const row = flat(this.t, r);
          found.set(String(row[this.column]), row);
        }
      }
    } catch (err) {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
      return;
    }
    for (const [k, waiters] of batch) for (const w of waiters) w.resolve(found.get(k) ?? null);
  }
}

function loader(ctx: Ctx, db: DbService, t: TableInfo, column: string): Loader {
  const key = `${t.def.name}.${column}`;
  let l = ctx.loaders.get(key);
  if (!l) {
    l = new Loader(db, t, column, ctx);
    ctx.loaders.set(key, l);
  }
  return l;
}

const needWrite = (ctx: Ctx): void => {
  if (!ctx.auth.scopes.has('data:write')) throw new EdgeError('missing_scope', 'this request needs the "data:write" scope', { details: { scope: 'data:write' } });
};

/** Builds the schema: per table an object type, a where input, list/by-id queries and insert/update/delete mutations. */
function build(db: DbService, tables: Map<string, TableInfo>): GraphQLSchema {
  const usable = [...tables.values()].filter((t) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(t.def.name) && !t.def.name.startsWith('__'));
  const types = new Map<string, GraphQLObjectType>();
  for (const t of usable) {
    types.set(
      t.def.name,
      new GraphQLObjectType({
        name: t.def.name,
        description: `Rows of table "${t.def.name}" (${t.def.kind}).`,
        fields: () => objectFields(db, t, tables, types),
      }),
    );
  }
  const query: Record<string, GraphQLFieldConfig<unknown, Ctx>> = {};
  const mutation: Record<string, GraphQLFieldConfig<unknown, Ctx>> = {};
  for (const t of usable) {
    const name = t.def.name;
    const type = types.get(name)!;
    const where = new GraphQLInputObjectType({
      name: `${name}_where`,
      fields: () => {
        const f: Record<string, GraphQLInputFieldConfig> = { id: { type: ComparisonInput } };
        if (t.def.stamps !== false) f.created_at = f.updated_at = { type: ComparisonInput };
        for (const c of t.def.columns) f[c.name] = { type: ComparisonInput };
        return f;
      },
    });
    query[name] = {
      type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(type))),
      args: {
        where: { type: where },
        order: { type: GraphQLString, description: 'As the rows API: "col.asc,other.desc.nullslast".' },
        limit: { type: GraphQLInt, description: 'Default 100, at most 1000.' },
        offset: { type: GraphQLInt },
      },
      resolve: (_src, args: { where?: Record<string, Record<string, unknown>>; order?: string; limit?: number; offset?: number }, ctx) => {
        const q = filters(args.where);
        if (args.order) q.set('order', args.order);
        if (args.limit !== undefined && args.limit !== null) q.set('limit', String(args.limit));
        if (args.offset !== undefined && args.offset !== null) q.set('offset', String(args.offset));
        return parsed<{ rows: Wire[] }>(db.list(ctx.lease, ctx.auth, name, q)).rows.map((r) => flat(t, r));
      },
    };
    query[`${name}_by_id`] = {
      type,
      args: { id: { type: new GraphQLNonNull(GraphQLID) } },
      resolve: (_src, args: { id: string }, ctx) => {
        try {
          return flat(t, parsed<Wire>(db.get(ctx.lease, ctx.auth, name, args.id)));
        } catch (err) {
          if (err instanceof EdgeError && err.code === 'not_found') return null;
          throw err;
        }
      },
    };
    mutation[`insert_${name}`] = {
      type,
      args: { data: { type: new GraphQLNonNull(JSONScalar) } },
      resolve: (_src, args: { data: unknown }, ctx) => {
        needWrite(ctx);
        return flat(t, parsed<Wire>(db.insert(ctx.lease, ctx.auth, name, { data: args.data })));
      },
    };
    mutation[`update_${name}`] = {
      type,
      args: { id: { type: new GraphQLNonNull(GraphQLID) }, data: { type: new GraphQLNonNull(JSONScalar) } },
      resolve: (_src, args: { id: string; data: unknown }, ctx) => {
        needWrite(ctx);
        return flat(t, parsed<Wire>(db.update(ctx.lease, ctx.auth, name, args.id, { data: args.data })));
      },
    };
    mutation[`delete_${name}`] = {
      type: GraphQLBoolean,
      args: { id: { type: new GraphQLNonNull(GraphQLID) } },
      resolve: (_src, args: { id: string }, ctx) => {
        needWrite(ctx);
        db.delete(ctx.lease, ctx.auth, name, args.id);
        return true;
      },
    };
  }
  if (Object.keys(query).length === 0) {
    query._empty = { type: GraphQLBoolean, description: 'The project has no tables yet.', resolve: () => null };
  }
  return new GraphQLSchema({
    query: new GraphQLObjectType({ name: 'Query', fields: query }),
    mutation: Object.keys(mutation).length ? new GraphQLObjectType({ name: 'Mutation', fields: mutation }) : undefined,
  });
}

function objectFields(db: DbService, t: TableInfo, tables: Map<string, TableInfo>, types: Map<string, GraphQLObjectType>): Record<string, GraphQLFieldConfig<Row, Ctx>> {
  const f: Record<string, GraphQLFieldConfig<Row, Ctx>> = { id: { type: new GraphQLNonNull(GraphQLID) } };
  if (t.def.kind === 'document') f.data = { type: new GraphQLNonNull(JSONScalar) };
  for (const c of t.def.columns) f[c.name] = { type: c.nullable ? SCALAR[c.type] : new GraphQLNonNull(SCALAR[c.type] as GraphQLOutputType & { name: string }) };
  if (t.def.stamps !== false) {
    f.created_at = { type: new GraphQLNonNull(GraphQLString) };
    f.updated_at = { type: new GraphQLNonNull(GraphQLString) };
  }
  // Foreign keys: `author_id` → `author` (or `<col>_ref`), resolved by a batched loader.
  for (const c of t.def.columns) {
    const ref = c.references;
    if (!ref) continue;
    const target = tables.get(ref.table);
    const type = types.get(ref.table);
    if (!target || !type) continue;
    let field = c.name.endsWith('_id') ? c.name.slice(0, -3) : `${c.name}_ref`;
    if (field === '' || f[field]) field = `${c.name}_ref`;
    if (f[field]) continue;
    f[field] = {
      type,
      resolve: (row, _args, ctx) => {
        const v = row[c.name];
        if (v === null || v === undefined) return null;
        return loader(ctx, db, target, ref.column).load(String(v));
      },
    };
  }
  return f;
}
