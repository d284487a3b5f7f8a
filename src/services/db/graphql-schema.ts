import {
  GraphQLBoolean,
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
  type GraphQLFieldConfig,
  type GraphQLInputFieldConfig,
  type GraphQLOutputType,
  type ValueNode,
} from 'graphql';
import { EdgeError } from '../../core/errors.js';
import { requireScope } from '../../edge/scopes.js';
import type { ProjectLease } from '../../project/registry.js';
import type { DbService } from './db.js';
import { filters, flat, loader, parsed, readRows, selected, type Ctx, type Row, type Wire } from './graphql-rows.js';
import type { ColumnType as CatalogType, TableInfo } from '../../sql/table-model.js';

/**
 * The GraphQL schema of a project, generated from its db catalog and cached per catalog:
 * per table an object type, a where input, list/by-id queries and insert/update/delete
 * mutations, foreign keys as nested fields. Every field resolves through DbService
 * (graphql-rows.ts), so scopes and RLS are the caller's, as in REST.
 */
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

/** The project's schema, cached until its table catalog (the Map DbService returns) changes. */
export function schemaOf(db: DbService, lease: ProjectLease): GraphQLSchema {
  const tables = db.tables(lease);
  let s = schemas.get(tables);
  if (!s) {
    s = build(db, tables);
    schemas.set(tables, s);
  }
  return s;
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
