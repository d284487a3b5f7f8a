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
  type GraphQLFieldConfig,
  type GraphQLFieldConfigArgumentMap,
  type GraphQLInputFieldConfig,
} from 'graphql';
import { EdgeError } from '../../core/errors.js';
import { requireScope } from '../../edge/scopes.js';
import type { ProjectLease } from '../../project/registry.js';
import type { DbService } from './db.js';
import { children, flat, listParams, loader, parsed, readRows, selected, type Ctx, type ListArgs, type Row, type Wire } from './graphql-rows.js';
import { BigIntScalar, DateTimeScalar, JSONScalar, UUIDScalar } from './graphql-scalars.js';
import type { ColumnType as CatalogType, TableInfo } from '../../sql/table-model.js';
import type { StoredView } from '../../sql/pg/views.js';
import { viewQueries } from './graphql-views.js';
import { triggerFilledColumns } from '../../sql/pg/triggers.js';

/**
 * The GraphQL schema of a project, generated from its db catalog and cached per catalog:
 * per table an object type, a where input, typed write inputs, list/by-id queries and
 * insert/update/delete mutations, foreign keys as nested fields both ways (the parent from the
 * child, the children from the parent). Every field resolves through DbService
 * (graphql-rows.ts), so scopes and RLS are the caller's, as in REST.
 */
/** A column's GraphQL type (output and input): int8 `BigInt`, timestamptz `DateTime`, uuid `UUID`, jsonb `JSON`, bytea base64 `String`. */
const SCALAR: Record<CatalogType, GraphQLScalarType> = {
  text: GraphQLString,
  int8: BigIntScalar,
  float8: GraphQLFloat,
  bool: GraphQLBoolean,
  timestamptz: DateTimeScalar,
  jsonb: JSONScalar,
  uuid: UUIDScalar,
  bytea: GraphQLString,
};

const OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike'] as const;
export const ComparisonInput = new GraphQLInputObjectType({
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
    s = build(db, tables, db.viewList(lease), (name) => triggerFilledColumns(lease, name));
    schemas.set(tables, s);
  }
  return s;
}

/** What the field builders share: the tables, their object and where types, and each parent's reverse relations. */
interface Build {
  db: DbService;
  tables: Map<string, TableInfo>;
  types: Map<string, GraphQLObjectType>;
  wheres: Map<string, GraphQLInputObjectType>;
  /** Per parent table: the foreign keys that point at it (child table, child column, parent column). */
  reverse: Map<string, Array<{ child: TableInfo; column: string; parentColumn: string }>>;
}

/** The arguments of a list field (root lists and reverse relations). */
function listArgs(b: Build, name: string): GraphQLFieldConfigArgumentMap {
  return {
    where: { type: b.wheres.get(name)! },
    order: { type: GraphQLString, description: 'As the rows API: "col.asc,other.desc.nullslast".' },
    limit: { type: GraphQLInt, description: 'Default 100, at most 1000 (per parent in a reverse relation).' },
    offset: { type: GraphQLInt },
  };
}

/**
 * Builds the schema: per table an object type, a where input, typed insert/set inputs
 * (relational tables), list/by-id queries and insert/update/delete mutations.
 */
function build(db: DbService, tables: Map<string, TableInfo>, views: StoredView[] = [], filled: (table: string) => ReadonlySet<string> = () => new Set()): GraphQLSchema {
  const usable = [...tables.values()].filter((t) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(t.def.name) && !t.def.name.startsWith('__'));
  const b: Build = { db, tables, types: new Map(), wheres: new Map(), reverse: new Map() };
  for (const t of usable) {
    b.types.set(
      t.def.name,
      new GraphQLObjectType({
        name: t.def.name,
        description: t.def.comment ?? `Rows of table "${t.def.name}" (${t.def.kind}).`,
        fields: () => objectFields(b, t),
      }),
    );
    b.wheres.set(
      t.def.name,
      new GraphQLInputObjectType({
        name: `${t.def.name}_where`,
        fields: () => {
          const f: Record<string, GraphQLInputFieldConfig> = { id: { type: ComparisonInput } };
          if (t.def.stamps !== false) f.created_at = f.updated_at = { type: ComparisonInput };
          for (const c of t.def.columns) f[c.name] = { type: ComparisonInput };
          return f;
        },
      }),
    );
  }
  for (const t of usable) {
    for (const c of t.def.columns) {
      const ref = c.references;
      if (!ref || !b.types.has(ref.table)) continue;
      const list = b.reverse.get(ref.table) ?? [];
      list.push({ child: t, column: c.name, parentColumn: ref.column });
      b.reverse.set(ref.table, list);
    }
  }
  const query: Record<string, GraphQLFieldConfig<unknown, Ctx>> = {};
  const mutation: Record<string, GraphQLFieldConfig<unknown, Ctx>> = {};
  for (const t of usable) {
    const name = t.def.name;
    const type = b.types.get(name)!;
    query[name] = {
      type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(type))),
      args: listArgs(b, name),
      resolve: (_src, args: ListArgs, ctx, info) =>
        readRows(ctx, () => parsed<{ rows: Wire[] }>(db.list(ctx.lease, ctx.auth, name, listParams(args))).rows.map((r) => flat(t, r)), selected(info)),
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
    const typed = inputs(t, filled(name));
    mutation[`insert_${name}`] = {
      type,
      args: typed
        ? { object: { type: typed.insert, description: 'The row, typed per column.' }, data: { type: JSONScalar, description: 'The row as JSON (instead of object).' } }
        : { data: { type: new GraphQLNonNull(JSONScalar) } },
      extensions: typed ? { oneOfArgs: ['object', 'data'] } : undefined,
      resolve: (_src, args: { object?: Row | null; data?: unknown }, ctx) => {
        requireScope(ctx.auth.scopes, 'data:write');
        return flat(t, parsed<Wire>(db.insert(ctx.lease, ctx.auth, name, { data: oneOf(`insert_${name}`, 'object', args.object, args.data) })));
      },
    };
    mutation[`update_${name}`] = {
      type,
      args: typed
        ? {
            id: { type: new GraphQLNonNull(GraphQLID) },
            set: { type: typed.set, description: 'The columns to change, typed.' },
            data: { type: JSONScalar, description: 'The columns to change as JSON (instead of set).' },
          }
        : { id: { type: new GraphQLNonNull(GraphQLID) }, data: { type: new GraphQLNonNull(JSONScalar) } },
      extensions: typed ? { oneOfArgs: ['set', 'data'] } : undefined,
      resolve: (_src, args: { id: string; set?: Row | null; data?: unknown }, ctx) => {
        requireScope(ctx.auth.scopes, 'data:write');
        return flat(t, parsed<Wire>(db.update(ctx.lease, ctx.auth, name, args.id, { data: oneOf(`update_${name}`, 'set', args.set, args.data) })));
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
  Object.assign(query, viewQueries(db, views, ComparisonInput, new Set(usable.map((t) => t.def.name))));
  if (Object.keys(query).length === 0) {
    query._empty = { type: GraphQLBoolean, description: 'The project has no tables yet.', resolve: () => null };
  }
  return new GraphQLSchema({
    query: new GraphQLObjectType({ name: 'Query', fields: query }),
    mutation: Object.keys(mutation).length ? new GraphQLObjectType({ name: 'Mutation', fields: mutation }) : undefined,
  });
}

/**
 * The value of a write given either typed (`object`/`set`) or as JSON (`data`): exactly one.
 * Validation already refused a document naming both or neither (400); this catches variables
 * that are null when the request runs.
 */
function oneOf(field: string, typedName: string, typed: unknown, data: unknown): unknown {
  const given = (typed !== undefined && typed !== null ? 1 : 0) + (data !== undefined && data !== null ? 1 : 0);
  if (given !== 1) throw new EdgeError('invalid_request', `${field} takes exactly one of ${typedName} (typed) or data (JSON)`);
  return typed ?? data;
}

/**
 * A relational table's typed write inputs: `<t>_insert_input` (a column is required when it
 * is NOT NULL without a default and no BEFORE trigger fills it) and `<t>_set_input` (every column optional); none for
 * documents or a table without columns.
 */
function inputs(t: TableInfo, filled: ReadonlySet<string>): { insert: GraphQLInputObjectType; set: GraphQLInputObjectType } | null {
  if (t.def.kind !== 'relational' || t.def.columns.length === 0) return null;
  const name = t.def.name;
  return {
    insert: new GraphQLInputObjectType({
      name: `${name}_insert_input`,
      description: `A row to insert into "${name}".`,
      fields: () => {
        const f: Record<string, GraphQLInputFieldConfig> = {};
        for (const c of t.def.columns) {
          // note: a NOT NULL column a BEFORE trigger fills may be left out (src/sql/worker/relax-not-null.ts).
          const required = !c.nullable && (c.default === null || c.default === undefined) && !t.system && !filled.has(c.name);
          f[c.name] = { type: required ? new GraphQLNonNull(SCALAR[c.type]) : SCALAR[c.type] };
        }
        return f;
      },
    }),
    set: new GraphQLInputObjectType({
      name: `${name}_set_input`,
      description: `Columns of "${name}" to change.`,
      fields: () => Object.fromEntries(t.def.columns.map((c) => [c.name, { type: SCALAR[c.type] }])),
    }),
  };
}

function objectFields(b: Build, t: TableInfo): Record<string, GraphQLFieldConfig<Row, Ctx>> {
  const { db, tables, types } = b;
  const sc = t.def.systemComments ?? {};
  const f: Record<string, GraphQLFieldConfig<Row, Ctx>> = { id: { type: new GraphQLNonNull(GraphQLID), ...described(sc.id) } };
  if (t.def.kind === 'document') f.data = { type: new GraphQLNonNull(JSONScalar) };
  for (const c of t.def.columns) f[c.name] = { type: c.nullable ? SCALAR[c.type] : new GraphQLNonNull(SCALAR[c.type]), ...described(columnDescription(c)) };
  if (t.def.stamps !== false) {
    f.created_at = { type: new GraphQLNonNull(DateTimeScalar), ...described(sc.created_at) };
    f.updated_at = { type: new GraphQLNonNull(DateTimeScalar), ...described(sc.updated_at) };
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
  // Reverse relations: the child table's name (`projects { tasks }`), or `<child>_by_<column>`
  // when the child has several foreign keys to this table or the name is taken; resolved
  // per level in one grouped query.
  const back = b.reverse.get(t.def.name) ?? [];
  for (const r of back) {
    const child = r.child.def.name;
    const several = back.filter((o) => o.child === r.child).length > 1;
    const field = several || f[child] ? `${child}_by_${r.column}` : child;
    if (f[field]) continue;
    f[field] = {
      // note: the list itself may be null, only when it failed (its error in errors[]), so the parent row still answers.
      type: new GraphQLList(new GraphQLNonNull(types.get(child)!)),
      description: `Rows of "${child}" whose ${r.column} is this row's ${r.parentColumn}.`,
      args: listArgs(b, child),
      resolve: (row, args: ListArgs, ctx, info) => {
        const v = row[r.parentColumn];
        if (v === null || v === undefined) return [];
        requireScope(ctx.auth.scopes, 'data:read');
        return children(ctx, db, r.child, r.column, args).load(v as string | number, selected(info));
      },
    };
  }
  return f;
}

/** A field's description: its `COMMENT ON COLUMN`, and for an enum column the type's name (the value is a String). */
function columnDescription(c: TableInfo['def']['columns'][number]): string | undefined {
  const en = c.enum ? `enum ${c.enum}` : undefined;
  if (c.comment !== undefined) return en ? `${c.comment}\n\n(${en})` : c.comment;
  return en;
}

const described = (d: string | undefined): { description?: string } => (d === undefined ? {} : { description: d });
