import type Database from 'better-sqlite3';
import { quoteIdent } from '../../project/schemas.js';
import { callerDefaultText } from '../caller.js';
import { quoteLiteral } from '../quote.js';
import { isReservedName } from './reserved.js';
import type { ColumnType, PgType, SchemaLookup } from './types.js';

/**
 * `information_schema.tables`, `.columns`, `.table_constraints`, `.key_column_usage` and
 * `pg_catalog.pg_tables` (docs/sql.md "Introspection"): read-only views of the project's own
 * tables (never the reserved `_svc_*` ones), for the service role. Their rows are read when a
 * statement naming one is translated and written into it as literals: the translation is
 * cached per schema version, which every DDL changes, so they are as current as the schema.
 */
export interface IntrospectColumn {
  name: string;
  type: PgType | null;
  nullable: boolean;
  default: string | null;
  /** A column of an enum type (types-ddl.ts): Postgres shows `USER-DEFINED` and the type's name. */
  enum?: string;
}
export interface IntrospectTable {
  name: string;
  columns: IntrospectColumn[];
  constraints: Array<{ name: string; type: 'PRIMARY KEY' | 'UNIQUE' | 'FOREIGN KEY'; columns: string[] }>;
  /** A view (views.ts): `VIEW` in `tables`, not updatable, not in `pg_tables`. */
  view?: true;
}
export type Introspect = () => IntrospectTable[];

const CATALOG = 'postgres';
const SCHEMA = 'public';

/** Postgres' `data_type` and `udt_name` of each type. */
const TYPE_NAMES: Record<Exclude<PgType, 'unknown'>, [string, string]> = {
  int4: ['integer', 'int4'],
  int8: ['bigint', 'int8'],
  float8: ['double precision', 'float8'],
  numeric: ['numeric', 'numeric'],
  text: ['text', 'text'],
  bool: ['boolean', 'bool'],
  timestamptz: ['timestamp with time zone', 'timestamptz'],
  timestamp: ['timestamp without time zone', 'timestamp'],
  date: ['date', 'date'],
  jsonb: ['jsonb', 'jsonb'],
  json: ['json', 'json'],
  uuid: ['uuid', 'uuid'],
  bytea: ['bytea', 'bytea'],
  'text[]': ['ARRAY', '_text'],
  'int4[]': ['ARRAY', '_int4'],
  'int8[]': ['ARRAY', '_int8'],
  'float8[]': ['ARRAY', '_float8'],
  'numeric[]': ['ARRAY', '_numeric'],
  'bool[]': ['ARRAY', '_bool'],
  'uuid[]': ['ARRAY', '_uuid'],
  interval: ['interval', 'interval'],
};

type Value = string | number | null;
interface View {
  columns: ColumnType[];
  rows: (tables: IntrospectTable[]) => Value[][];
}

const text = (name: string): ColumnType => ({ name, type: 'text' });
const int = (name: string): ColumnType => ({ name, type: 'int4' });

const VIEWS: Record<string, View> = {
  'information_schema.tables': {
    columns: ['table_catalog', 'table_schema', 'table_name', 'table_type', 'is_insertable_into', 'is_typed'].map(text),
    rows: (ts) => ts.map((t) => [CATALOG, SCHEMA, t.name, t.view ? 'VIEW' : 'BASE TABLE', t.view ? 'NO' : 'YES', 'NO']),
  },
  'information_schema.columns': {
    columns: [...['table_catalog', 'table_schema', 'table_name', 'column_name'].map(text), int('ordinal_position'), ...['column_default', 'is_nullable', 'data_type', 'udt_name', 'is_identity', 'is_generated', 'is_updatable'].map(text)],
    rows: (ts) =>
      ts.flatMap((t) =>
        t.columns.map((c, i) => {
          const [dataType, udt] = c.enum ? ['USER-DEFINED', c.enum] : c.type && c.type !== 'unknown' ? TYPE_NAMES[c.type] : ['text', 'text'];
          return [CATALOG, SCHEMA, t.name, c.name, i + 1, c.default, c.nullable ? 'YES' : 'NO', dataType, udt, 'NO', 'NEVER', t.view ? 'NO' : 'YES'];
        }),
      ),
  },
  'information_schema.table_constraints': {
    columns: ['constraint_catalog', 'constraint_schema', 'constraint_name', 'table_catalog', 'table_schema', 'table_name', 'constraint_type', 'is_deferrable', 'initially_deferred'].map(text),
    rows: (ts) => ts.flatMap((t) => t.constraints.map((k) => [CATALOG, SCHEMA, k.name, CATALOG, SCHEMA, t.name, k.type, 'NO', 'NO'])),
  },
  'information_schema.key_column_usage': {
    columns: [...['constraint_catalog', 'constraint_schema', 'constraint_name', 'table_catalog', 'table_schema', 'table_name', 'column_name'].map(text), int('ordinal_position')],
    rows: (ts) => ts.flatMap((t) => t.constraints.flatMap((k) => k.columns.map((c, i) => [CATALOG, SCHEMA, k.name, CATALOG, SCHEMA, t.name, c, i + 1]))),
  },
  'pg_catalog.pg_tables': {
    columns: [...['schemaname', 'tablename', 'tableowner', 'tablespace'].map(text), { name: 'hasindexes', type: 'bool' }, { name: 'hasrules', type: 'bool' }, { name: 'hastriggers', type: 'bool' }, { name: 'rowsecurity', type: 'bool' }],
    rows: (ts) => ts.filter((t) => !t.view).map((t) => [SCHEMA, t.name, 'postgres', null, t.constraints.some((k) => k.type !== 'FOREIGN KEY') ? 1 : 0, 0, 0, 0]),
  },
};

/** The physical name the emitter gives an introspection view (`schema.view`), or null for any other name. */
export function introspectionView(schema: string | null, name: string): string | null {
  const key = schema === null && name === 'pg_tables' ? 'pg_catalog.pg_tables' : `${schema}.${name}`;
  return key in VIEWS ? key : null;
}

export const isIntrospectionView = (physical: string): boolean => physical in VIEWS;

export const introspectionColumns = (physical: string): ColumnType[] => VIEWS[physical]!.columns.map((c) => ({ ...c }));

/** The view as a subquery of literal rows (no rows: a SELECT of NULLs that yields none). */
export function introspectionSql(physical: string, tables: IntrospectTable[]): string {
  const view = VIEWS[physical]!;
  const names = view.columns.map((c) => quoteIdent(c.name));
  const rows = view.rows(tables);
  if (rows.length === 0) return `(SELECT ${names.map((n) => `NULL AS ${n}`).join(', ')} WHERE 0)`;
  const lit = (v: Value): string => (v === null ? 'NULL' : typeof v === 'number' ? String(v) : quoteLiteral(v));
  const first = rows[0]!.map((v, i) => `${lit(v)} AS ${names[i]}`).join(', ');
  const rest = rows.slice(1).map((r) => ` UNION ALL SELECT ${r.map(lit).join(', ')}`).join('');
  return `(SELECT ${first}${rest})`;
}

const NOW_DEFAULT = /strftime\('%Y-%m-%dT%H:%M:%fZ', *'now'\)/;

/** A column default as Postgres would show it (the translator's own forms back to their Postgres names). */
function shownDefault(dflt: string | null, auto: ColumnType['auto']): string | null {
  if (auto === 'uuid') return 'gen_random_uuid()';
  if (auto === 'now' || auto === 'touch') return 'now()';
  if (dflt === null) return null;
  if (NOW_DEFAULT.test(dflt)) return 'now()';
  if (/randomblob/.test(dflt)) return 'gen_random_uuid()';
  // note: the caller in a stored default (src/sql/caller.ts) as written: auth.uid(), auth.role(), auth.jwt() ->> 'claim'.
  const caller = callerDefaultText(dflt);
  if (caller) return caller;
  const bare = dflt.replace(/^\((.*)\)$/s, '$1');
  const cast = /^CAST\((.*) AS ([A-Z_]+)\)$/s.exec(bare);
  return cast ? `${cast[1]}::${cast[2]!.toLowerCase()}` : bare;
}

/**
 * The project's own tables (not the platform's `_svc_*`, not SQLite's), with their columns
 * typed as the translator types them (`columns`: the caller's SchemaLookup), keys and
 * foreign keys named as Postgres names them (`t_pkey`, `t_col_key`, `t_col_fkey`).
 */
export function readIntrospection(db: Database.Database, columns: SchemaLookup): IntrospectTable[] {
  const names = (db.prepare(`SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`).all() as Array<{ name: string }>)
    .map((r) => r.name)
    .filter((n) => !isReservedName(n) && !n.startsWith('sqlite_') && !n.includes('.'));
  return names.map((name) => {
    const q = quoteIdent(name);
    const info = db.pragma(`table_info(${q})`) as Array<{ name: string; notnull: number; dflt_value: string | null; pk: number }>;
    const types = columns(name) ?? [];
    // note: a NOT NULL column a BEFORE trigger fills is enforced by triggers instead (src/sql/worker/relax-not-null.ts): still NOT NULL.
    const relaxed = new Set(db.prepare(`SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ? AND name LIKE 'pe\\_nn\\_%\\_insert' ESCAPE '\\'`).pluck().all(name) as string[]);
    const cols: IntrospectColumn[] = info.map((c) => {
      const t = types.find((x) => x.name === c.name);
      const notNull = c.notnull !== 0 || relaxed.has(`pe_nn_${name}_${c.name}_insert`);
      const col: IntrospectColumn = { name: c.name, type: t?.type ?? null, nullable: !notNull && c.pk === 0, default: shownDefault(c.dflt_value, t?.auto) };
      return t?.enum ? { ...col, enum: t.enum } : col;
    });
    const constraints: IntrospectTable['constraints'] = [];
    const pk = info.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name);
    if (pk.length) constraints.push({ name: `${name}_pkey`, type: 'PRIMARY KEY', columns: pk });
    for (const ix of db.pragma(`index_list(${q})`) as Array<{ name: string; unique: number; origin: string }>) {
      if (!ix.unique || ix.origin !== 'u') continue;
      const on = (db.pragma(`index_info(${quoteIdent(ix.name)})`) as Array<{ seqno: number; name: string }>).sort((a, b) => a.seqno - b.seqno).map((c) => c.name);
      constraints.push({ name: `${name}_${on.join('_')}_key`, type: 'UNIQUE', columns: on });
    }
    const fks = new Map<number, string[]>();
    for (const fk of db.pragma(`foreign_key_list(${q})`) as Array<{ id: number; seq: number; from: string }>) {
      const list = fks.get(fk.id) ?? [];
      list[fk.seq] = fk.from;
      fks.set(fk.id, list);
    }
    for (const from of fks.values()) constraints.push({ name: `${name}_${from.join('_')}_fkey`, type: 'FOREIGN KEY', columns: from });
    return { name, columns: cols, constraints };
  });
}
