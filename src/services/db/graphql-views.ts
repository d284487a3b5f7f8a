import { GraphQLBoolean, GraphQLFloat, GraphQLID, GraphQLInputObjectType, GraphQLInt, GraphQLList, GraphQLNonNull, GraphQLObjectType, GraphQLString, type GraphQLFieldConfig, type GraphQLInputFieldConfig, type GraphQLOutputType } from 'graphql';
import { EdgeError } from '../../core/errors.js';
import type { PgType } from '../../sql/pg/types.js';
import type { StoredView } from '../../sql/pg/views.js';
import type { DbService } from './db.js';
import { parseListQuery } from './filters.js';
import { listParams, readRows, selected, type Ctx, type ListArgs, type Row } from './graphql-rows.js';
import { BigIntScalar, DateTimeScalar, JSONScalar, UUIDScalar } from './graphql-scalars.js';

/**
 * Views in GraphQL (docs/api.md "Views"): per view an object type of its columns, a where input,
 * and the query fields `<view>` (list: where, order, limit, offset as for tables) and
 * `<view>_by_id` when it has an `id` column. No mutations (a view is read-only here) and no
 * nested relations (a view has no foreign keys). Rows are read through ViewRows, as the rows API
 * reads them: the view's tables under the caller's RLS.
 */
function scalar(t: PgType | null): GraphQLOutputType {
  switch (t) {
    case 'int4':
      return GraphQLInt;
    case 'int8':
      return BigIntScalar;
    case 'float8':
    case 'numeric':
      return GraphQLFloat;
    case 'bool':
      return GraphQLBoolean;
    case 'timestamptz':
    case 'timestamp':
      return DateTimeScalar;
    case 'uuid':
      return UUIDScalar;
    case 'text':
    case 'date':
    case 'bytea':
    case 'interval':
      return GraphQLString;
    case 'text[]':
      return new GraphQLList(GraphQLString);
    case 'int4[]':
      return new GraphQLList(GraphQLInt);
    case 'int8[]':
      return new GraphQLList(BigIntScalar);
    case 'float8[]':
    case 'numeric[]':
      return new GraphQLList(GraphQLFloat);
    case 'bool[]':
      return new GraphQLList(GraphQLBoolean);
    case 'uuid[]':
      return new GraphQLList(UUIDScalar);
    default:
      return JSONScalar;
  }
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The type and field names of the tables' (`t`, `t_where`, `t_insert_input`, `t_set_input`, `t_by_id`): a view whose own would clash is left out. */
const tableNames = (tables: ReadonlySet<string>): Set<string> => new Set([...tables].flatMap((t) => [t, `${t}_where`, `${t}_insert_input`, `${t}_set_input`, `${t}_by_id`]));

export function viewQueries(db: DbService, views: StoredView[], comparison: GraphQLInputObjectType, tables: ReadonlySet<string>): Record<string, GraphQLFieldConfig<unknown, Ctx>> {
  const out: Record<string, GraphQLFieldConfig<unknown, Ctx>> = {};
  const taken = tableNames(tables);
  for (const v of views) {
    if (!NAME.test(v.name) || v.name.startsWith('__') || [v.name, `${v.name}_where`, `${v.name}_by_id`].some((n) => taken.has(n))) continue;
    for (const n of [v.name, `${v.name}_where`, `${v.name}_by_id`]) taken.add(n);
    const cols = v.columns.filter((c) => NAME.test(c.name) && !c.name.startsWith('__'));
    if (!cols.length) continue;
    const type = new GraphQLObjectType({
      name: v.name,
      description: v.comment ?? `Rows of view "${v.name}" (read-only; its tables under the caller's row-level security).`,
      fields: () => Object.fromEntries(cols.map((c) => [c.name, { type: scalar(c.type), ...(v.columnComments?.[c.name] !== undefined ? { description: v.columnComments[c.name] } : {}) }])),
    });
    const where = new GraphQLInputObjectType({
      name: `${v.name}_where`,
      fields: () => Object.fromEntries(cols.map((c): [string, GraphQLInputFieldConfig] => [c.name, { type: comparison }])),
    });
    const reader = () => {
      if (!db.views) throw new EdgeError('unavailable', 'views are not readable here');
      return db.views;
    };
    out[v.name] = {
      type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(type))),
      args: {
        where: { type: where },
        order: { type: GraphQLString, description: 'As the rows API: "col.asc,other.desc.nullslast".' },
        limit: { type: GraphQLInt, description: 'Default 100, at most 1000.' },
        offset: { type: GraphQLInt },
      },
      resolve: async (_src, args: ListArgs, ctx, info) => {
        const q = parseListQuery(listParams(args));
        const r = await reader().rows(ctx.lease, ctx.auth, v, { ...q, select: null, count: false });
        return readRows(ctx, () => r.rows.slice(0, q.limit) as Row[], selected(info));
      },
    };
    if (cols.some((c) => c.name === 'id')) {
      out[`${v.name}_by_id`] = {
        type,
        args: { id: { type: new GraphQLNonNull(GraphQLID) } },
        resolve: async (_src, args: { id: string }, ctx) => {
          const q = parseListQuery(new URLSearchParams([['filter', `id.eq."${args.id.replace(/[\\"]/g, '\\$&')}"`], ['limit', '1']]));
          const r = await reader().rows(ctx.lease, ctx.auth, v, q);
          return r.rows[0] ?? null;
        },
      };
    }
  }
  return out;
}
