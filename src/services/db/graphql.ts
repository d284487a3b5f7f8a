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
  visit,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLFieldConfig,
  type GraphQLInputFieldConfig,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import { EdgeError, normalize } from '../../edge/errors.js';
import type { AuthContext } from '../../edge/route.js';
import { requireScope } from '../../edge/scopes.js';
import type { ProjectLease } from '../../project/registry.js';
import type { DbService } from './db.js';
import type { ColumnType as CatalogType, TableInfo } from './types.js';

/**
 * GraphQL over the database service (`POST/GET /db/graphql`), with `graphql` (DESIGN.md §2).
 * The schema is generated from the db catalog and rebuilt when it changes. Every field
 * resolves through DbService, so scopes and RLS are the caller's, as in REST. Foreign keys
 * become nested fields resolved in one list query per level (no N+1).
 *
 * Parsing, validation and execution run on the main thread, so every cost that grows with
 * the input is capped before it is paid (docs/api.md "GraphQL"): the query text and its
 * tokens at parse; fields, aliases, directives, fragment spreads and depth over the
 * document and each operation with fragments expanded, before validation; rows read and
 * response bytes during and after execution.
 */
/** Nesting depth of data fields. */
export const MAX_DEPTH = 8;
/**
 * Nesting depth under `__schema` and `__type`: the standard introspection query
 * (graphql's getIntrospectionQuery, 9 levels of `ofType`) is 15 deep. Introspection cannot
 * multiply at depth: its list fields nest at most twice (graphql's MaxIntrospectionDepthRule)
 * and aliases are refused inside it, so depth there only follows `ofType` chains.
 */
export const MAX_INTROSPECTION_DEPTH = 15;
/** Fields per operation with fragments expanded (and in the whole document), `__typename` included. */
export const MAX_FIELDS = 500;
export const MAX_ALIASES = 100;
export const MAX_DIRECTIVES = 50;
export const MAX_SPREADS = 500;
/** `__type` lookups per operation (aliases of it count). */
export const MAX_TYPE_LOOKUPS = 10;
/** Rows read per request (lists and nested foreign keys), as raw SQL's 10,000 per statement. */
export const MAX_ROWS = 10_000;
/**
 * Values a request's lists produce (rows × the fields selected under the list, nested
 * foreign keys included): graphql-js resolves each one on the main thread (about 5 µs
 * each), so this bounds execution; a 1000-row list of 50 fields fits.
 */
export const MAX_VALUES = 50_000;
/** Bytes of the JSON response; never truncated, refused. */
export const MAX_RESPONSE = 16 * 1024 * 1024;
const MAX_QUERY = 64 * 1024;
const MAX_TOKENS = 10_000;
/** Introspection responses kept per schema version. */
const INTROSPECTION_CACHE = 8;
const INTROSPECTION_CACHE_CHARS = 2 * 1024 * 1024;

interface Ctx {
  lease: ProjectLease;
  auth: AuthContext;
  /** Per request: batched by-id loads, keyed by table. */
  loaders: Map<string, Loader>;
  /** Rows read so far; past MAX_ROWS the request is refused. */
  rows: number;
  /** Values the lists read so far will produce; past MAX_VALUES the request is refused. */
  values: number;
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
  parseLiteral: (ast, variables) => literal(ast, variables),
});

/** A JSON literal's value; a `$variable` inside it (`{name: $n}`) is the variable's value. */
function literal(ast: ValueNode, variables: Readonly<Record<string, unknown>> | null | undefined): unknown {
  switch (ast.kind) {
    case Kind.VARIABLE:
      return variables?.[ast.name.value];
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
      return ast.values.map((v) => literal(v, variables));
    case Kind.OBJECT:
      return Object.fromEntries(ast.fields.map((f) => [f.name.value, literal(f.value, variables)]));
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
/**
 * Responses of introspection-only queries, per schema (so per schema version: a catalog
 * change builds a new schema), keyed by query text, operation name and variables. They do
 * not depend on the caller, so a client loading the schema again costs a lookup.
 */
const introspections = new WeakMap<GraphQLSchema, Map<string, string>>();

/** One answer of `run`: the HTTP status and the JSON response, serialized once. */
export interface GraphQLAnswer {
  status: number;
  json: string;
}

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

  /**
   * Runs one GraphQL request. Scopes are checked per operation, as REST checks them per
   * route: a query needs `data:read`, a mutation `data:write` (401 `missing_scope`, thrown).
   * GET passes `variables` as the JSON text of its query string.
   */
  async run(lease: ProjectLease, auth: AuthContext, body: GraphQLBody, method: 'GET' | 'POST'): Promise<GraphQLAnswer> {
    const { query, operationName = null } = body;
    let { variables = null } = body;
    if (typeof query !== 'string' || query.trim() === '') return fail(400, 'query must be a non-empty string', 'invalid_field');
    if (query.length > MAX_QUERY) return fail(413, `query is longer than ${MAX_QUERY} characters`, 'payload_too_large');
    if (method === 'GET' && typeof variables === 'string') {
      try {
        variables = JSON.parse(variables) as unknown;
      } catch {
        return fail(400, 'variables must be JSON', 'invalid_field');
      }
    }
    if (variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) return fail(400, 'variables must be an object', 'invalid_field');
    if (operationName !== null && typeof operationName !== 'string') return fail(400, 'operationName must be a string', 'invalid_field');
    const schema = this.schema(lease);
    // note: only requests without variables are cached (introspection clients send none), so no request pays for a key of them.
    const cacheKey = variables === null || Object.keys(variables).length === 0 ? `${operationName ?? ''}\u0000${query}` : null;
    const cached = cacheKey === null ? undefined : introspections.get(schema)?.get(cacheKey);
    if (cached !== undefined) {
      requireScope(auth.scopes, 'data:read');
      return { status: 200, json: cached };
    }
    let doc: DocumentNode;
    try {
      doc = parse(query, { maxTokens: MAX_TOKENS });
    } catch (err) {
      return fail(400, (err as Error).message, 'invalid_request');
    }
    // note: before validation, whose cost grows with fields and fragments (overlapping fields are compared pairwise).
    const limit = limits(doc);
    if (limit) return fail(400, limit, 'invalid_request');
    const op = operation(doc, operationName as string | null);
    if (op) {
      if (method === 'GET' && op.operation !== 'query') return fail(405, 'mutations need POST', 'method_not_allowed');
      requireScope(auth.scopes, op.operation === 'mutation' ? 'data:write' : 'data:read');
    }
    const errors = validate(schema, doc, specifiedRules);
    if (errors.length) return answer(400, { errors: errors.map((e) => ({ message: e.message, locations: e.locations, extensions: { code: 'invalid_request' } })) });
    const ctx: Ctx = { lease, auth, loaders: new Map(), rows: 0, values: 0 };
    const result = await execute({ schema, document: doc, contextValue: ctx, variableValues: variables as Record<string, unknown> | null, operationName: operationName as string | null });
    const mutation = op?.operation === 'mutation';
    if (ctx.rows > MAX_ROWS) return refuse(mutation, `the query reads more than ${MAX_ROWS} rows; page with limit and offset`);
    if (ctx.values > MAX_VALUES) return refuse(mutation, `the query returns more than ${MAX_VALUES} values (rows × fields); select fewer rows or fields`);
    const out: Record<string, unknown> = { data: result.data ?? null };
    if (result.errors?.length) out.errors = result.errors.map(formatError);
    const json = JSON.stringify(out);
    // note: a UTF-16 unit is at most 3 UTF-8 bytes, so most answers skip counting them.
    const bytes = json.length * 3 <= MAX_RESPONSE ? 0 : Buffer.byteLength(json);
    if (bytes > MAX_RESPONSE) return refuse(mutation, `the response would be ${bytes} bytes, more than the limit of ${MAX_RESPONSE}; select fewer rows or fields`);
    if (cacheKey !== null && op && !out.errors && json.length <= INTROSPECTION_CACHE_CHARS && introspectionOnly(doc, op)) remember(schema, cacheKey, json);
    return { status: 200, json };
  }
}

const answer = (status: number, body: unknown): GraphQLAnswer => ({ status, json: JSON.stringify(body) });
const fail = (status: number, message: string, code: string): GraphQLAnswer => answer(status, { errors: [{ message, extensions: { code } }] });
/**
 * A result over a cap is refused whole, never truncated: 400 for a query. A mutation has
 * committed by then, so it answers 200 and says so (a committed write is acknowledged).
 */
const refuse = (mutation: boolean, why: string): GraphQLAnswer =>
  mutation ? answer(200, { data: null, errors: [{ message: `the mutation was applied, but ${why}`, extensions: { code: 'invalid_request' } }] }) : fail(400, why, 'invalid_request');

function remember(schema: GraphQLSchema, key: string, json: string): void {
  let m = introspections.get(schema);
  if (!m) {
    m = new Map();
    introspections.set(schema, m);
  }
  // note: insertion order makes the Map a FIFO; the oldest entry goes first.
  if (m.size >= INTROSPECTION_CACHE) m.delete(m.keys().next().value!);
  m.set(key, json);
}

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

/** The operation `execute` will run, or null when it will refuse (no such name, or several unnamed). */
function operation(doc: DocumentNode, name: string | null): OperationDefinitionNode | null {
  const ops = doc.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (name) return ops.find((d) => d.name?.value === name) ?? null;
  return ops.length === 1 ? ops[0]! : null;
}

/** Whether the operation's root selects only `__schema`, `__type` and `__typename` (fragments followed). */
function introspectionOnly(doc: DocumentNode, op: OperationDefinitionNode): boolean {
  if (op.operation !== 'query') return false;
  const frags = fragments(doc);
  const only = (set: SelectionSetNode, seen: Set<string>): boolean =>
    set.selections.every((sel) => {
      if (sel.kind === Kind.FIELD) return sel.name.value.startsWith('__');
      if (sel.kind === Kind.INLINE_FRAGMENT) return only(sel.selectionSet, seen);
      const f = frags.get(sel.name.value);
      if (!f || seen.has(f.name.value)) return false;
      return only(f.selectionSet, new Set([...seen, f.name.value]));
    });
  return only(op.selectionSet, new Set());
}

function fragments(doc: DocumentNode): Map<string, FragmentDefinitionNode> {
  const frags = new Map<string, FragmentDefinitionNode>();
  for (const d of doc.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) frags.set(d.name.value, d);
  return frags;
}

/**
 * The caps of docs/api.md "GraphQL", checked before validation: over the whole document as
 * written, and over each operation with its fragments expanded (a fragment spread twice
 * counts twice), so neither validation nor execution sees more. Returns the reason, or null.
 */
function limits(doc: DocumentNode): string | null {
  // The document as written: bounds validation, which also looks at unused definitions.
  let fields = 0;
  let aliases = 0;
  let directives = 0;
  visit(doc, {
    Field: (n) => {
      fields++;
      if (n.alias) aliases++;
    },
    Directive: () => {
      directives++;
    },
  });
  const over = tally(fields, aliases, directives, 0);
  if (over) return over;
  const frags = fragments(doc);
  for (const d of doc.definitions) {
    if (d.kind !== Kind.OPERATION_DEFINITION) continue;
    const why = expanded(d, frags);
    if (why) return why;
  }
  return null;
}

function tally(fields: number, aliases: number, directives: number, spreads: number): string | null {
  if (fields > MAX_FIELDS) return `the query selects more than ${MAX_FIELDS} fields`;
  if (aliases > MAX_ALIASES) return `the query uses more than ${MAX_ALIASES} aliases`;
  if (directives > MAX_DIRECTIVES) return `the query uses more than ${MAX_DIRECTIVES} directives`;
  if (spreads > MAX_SPREADS) return `the query expands more than ${MAX_SPREADS} fragment spreads`;
  return null;
}

/** One operation with fragments expanded: the counts of `tally`, depth, and the introspection rules. */
function expanded(op: OperationDefinitionNode, frags: Map<string, FragmentDefinitionNode>): string | null {
  let fields = 0;
  let aliases = 0;
  let directives = op.directives?.length ?? 0;
  let spreads = 0;
  let typeLookups = 0;
  let why: string | null = null;
  // `intro`: inside __schema or __type, where the depth cap is MAX_INTROSPECTION_DEPTH and aliases are refused.
  const walk = (set: SelectionSetNode, depth: number, intro: boolean, seen: ReadonlySet<string>): void => {
    for (const sel of set.selections) {
      if (why) return;
      directives += sel.directives?.length ?? 0;
      if (sel.kind === Kind.FIELD) {
        fields++;
        const name = sel.name.value;
        if (sel.alias) {
          aliases++;
          if (intro) why = 'aliases are not allowed inside __schema or __type';
          else if (depth === 1 && name === '__schema') why = '__schema cannot be aliased; select it once';
        }
        if (depth === 1 && name === '__type' && ++typeLookups > MAX_TYPE_LOOKUPS) why = `the query selects __type more than ${MAX_TYPE_LOOKUPS} times`;
        why ??= tally(fields, aliases, directives, spreads);
        if (why || !sel.selectionSet) continue;
        const inner = intro || (depth === 1 && (name === '__schema' || name === '__type'));
        const cap = inner ? MAX_INTROSPECTION_DEPTH : MAX_DEPTH;
        if (depth + 1 > cap) why = `the query nests deeper than ${cap} levels`;
        else walk(sel.selectionSet, depth + 1, inner, seen);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) walk(sel.selectionSet, depth, intro, seen);
      else {
        spreads++;
        why = tally(fields, aliases, directives, spreads);
        const f = frags.get(sel.name.value);
        // note: an unknown or cyclic spread is left to validation, which names it.
        if (!why && f && !seen.has(f.name.value)) {
          directives += f.directives?.length ?? 0;
          walk(f.selectionSet, depth, intro, new Set([...seen, f.name.value]));
        }
      }
    }
  };
  walk(op.selectionSet, 1, false, new Set());
  return why ?? tally(fields, aliases, directives, spreads);
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
        const rows = readRows(this.ctx, () => parsed<{ rows: Wire[] }>(this.db.list(this.ctx.lease, this.ctx.auth, this.t.def.name, q)).rows.map((r) => flat(this.t, r)));
        for (const row of rows) found.set(String(row[this.column]), row);
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

/**
 * Counts rows read against MAX_ROWS before a read: once past it, every further read fails and
 * `run` refuses the whole request, so at most one list (1000 rows) is read past the cap.
 * A list (`perRow`: the fields selected under it) also counts its values against
 * MAX_VALUES, and fails before graphql resolves them.
 */
function readRows(ctx: Ctx, read: () => Row[], perRow = 0): Row[] {
  if (ctx.rows > MAX_ROWS) throw new EdgeError('invalid_request', `the query reads more than ${MAX_ROWS} rows`);
  if (ctx.values > MAX_VALUES) throw new EdgeError('invalid_request', `the query returns more than ${MAX_VALUES} values`);
  const rows = read();
  ctx.rows += rows.length;
  ctx.values += rows.length * perRow;
  if (ctx.values > MAX_VALUES) throw new EdgeError('invalid_request', `the query returns more than ${MAX_VALUES} values`);
  return rows;
}

/** The fields selected under a field, at every depth, fragments expanded (at most MAX_FIELDS: `limits` ran). */
function selected(info: GraphQLResolveInfo): number {
  let n = 0;
  const walk = (set: SelectionSetNode | undefined, seen: ReadonlySet<string>): void => {
    for (const sel of set?.selections ?? []) {
      if (sel.kind === Kind.FIELD) {
        n++;
        walk(sel.selectionSet, seen);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) walk(sel.selectionSet, seen);
      else if (!seen.has(sel.name.value)) walk(info.fragments[sel.name.value]?.selectionSet, new Set([...seen, sel.name.value]));
    }
  };
  for (const node of info.fieldNodes) walk(node.selectionSet, new Set());
  return n;
}

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
      resolve: (_src, args: { where?: Record<string, Record<string, unknown>>; order?: string; limit?: number; offset?: number }, ctx, info) => {
        const q = filters(args.where);
        if (args.order) q.set('order', args.order);
        if (args.limit !== undefined && args.limit !== null) q.set('limit', String(args.limit));
        if (args.offset !== undefined && args.offset !== null) q.set('offset', String(args.offset));
        return readRows(ctx, () => parsed<{ rows: Wire[] }>(db.list(ctx.lease, ctx.auth, name, q)).rows.map((r) => flat(t, r)), selected(info));
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
        requireScope(ctx.auth.scopes, 'data:write');
        return flat(t, parsed<Wire>(db.insert(ctx.lease, ctx.auth, name, { data: args.data })));
      },
    };
    mutation[`update_${name}`] = {
      type,
      args: { id: { type: new GraphQLNonNull(GraphQLID) }, data: { type: new GraphQLNonNull(JSONScalar) } },
      resolve: (_src, args: { id: string; data: unknown }, ctx) => {
        requireScope(ctx.auth.scopes, 'data:write');
        return flat(t, parsed<Wire>(db.update(ctx.lease, ctx.auth, name, args.id, { data: args.data })));
      },
    };
    mutation[`delete_${name}`] = {
      type: GraphQLBoolean,
      args: { id: { type: new GraphQLNonNull(GraphQLID) } },
      resolve: (_src, args: { id: string }, ctx) => {
        requireScope(ctx.auth.scopes, 'data:write');
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
        // note: reached from a mutation too, whose own row needs only data:write (as REST's answer to a write).
        requireScope(ctx.auth.scopes, 'data:read');
        return loader(ctx, db, target, ref.column).load(String(v));
      },
    };
  }
  return f;
}
