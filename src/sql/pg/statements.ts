import type { AlterColumnSpec } from '../worker/alter-column.js';
import { EdgeError } from '../../core/errors.js';
import { quoteIdent } from '../../project/schemas.js';
import { callName, checkKeys, columnName, Emitter, tickCall, unsupported, type Expr, type Node } from './emit.js';
import type { ColumnType, PgType } from './types.js';
import { alter, createExtension, createIndex, createTable, drop } from './ddl.js';
import { grantStatement } from './grant.js';
import { typeStatement } from './types-ddl.js';
import { alterView, createView, dropView, refuseViewWrite, viewFrom, type ViewEffect } from './views.js';
import { policyStatement, type PolicyChange } from './policy-stmt.js';
import { checkUpsertKeys } from './upsert-check.js';
import { routineStatement, type RoutineOp } from './triggers.js';
import { needsStatementWith, withStatement } from './dml-cte.js';

/** One SQLite statement of a translated Postgres statement. */
export interface Step {
  /** SQLite text with `\0P<n>\0` / `\0T<name>\0` markers. */
  sql: string;
  /** Fixed values bound after the caller's (catalog bookkeeping). */
  fixed?: unknown[];
  /** Whether this step's rows are the statement's result. */
  result?: boolean;
  /** 'collect': the worker keeps this step's first column (rowids); 'use': its last parameter becomes them, as a JSON array. */
  rowids?: 'collect' | 'use';
  /** Its rows go into this TEMP table (columns c1…cn) instead of a result: a data-modifying WITH item (dml-cte.ts). */
  into?: string;
  /** Instead of `sql`: the worker rebuilds the table with this column changed (src/sql/worker/alter-column.ts). */
  alter?: AlterColumnSpec;
}

export type Command = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE' | 'CREATE TABLE' | 'CREATE INDEX' | 'CREATE POLICY' | 'ALTER POLICY' | 'DROP POLICY' | 'CREATE EXTENSION' | 'ALTER TABLE' | 'DROP TABLE' | 'DROP INDEX' | 'GRANT' | 'REVOKE' | 'CREATE TYPE' | 'ALTER TYPE' | 'DROP TYPE' | 'COMMENT' | 'CREATE VIEW' | 'DROP VIEW' | 'ALTER VIEW' | 'CREATE FUNCTION' | 'CREATE TRIGGER' | 'DROP TRIGGER' | 'DROP FUNCTION';

export interface Statement {
  command: Command;
  steps: Step[];
  /** Types of the result columns by position; null where the runtime decides (declared type, value). */
  columns: ColumnType[] | null;
  readOnly: boolean;
  /**
   * A single-table SELECT of plain columns whose WHERE is only `col = value` terms: cheap
   * enough to run on the main thread when its plan is a unique-key lookup (query.ts).
   */
  pointLookup?: boolean;
  /** Schema changes, applied to the translator's view so later statements of a script see them. */
  effect?: { table: string; columns: ColumnType[] | null };
  /** CREATE TABLE: whether the new table joins the rows API's catalog. */
  adopted?: boolean;
  /** CREATE TABLE adopted by the catalog: its catalog definition (policies later in the script compile against it). */
  catalogDef?: CatalogDef;
  /**
   * CREATE / ALTER / DROP POLICY: the change to a catalog table's named policies; policy-writes.ts
   * applies it, compiles the result and binds the step's values (policy-stmt.ts POLICY_WRITE).
   */
  policy?: PolicyChange;
  /** `ALTER TABLE t ENABLE|DISABLE ROW LEVEL SECURITY`: the rows API's RLS switch of a catalog table. */
  rls?: { table: string; enable: boolean };
  /** GRANT/REVOKE (grant.ts): it writes the privileges the catalog caches, which then reloads. */
  grants?: true;
  /** Postgres' NOTICEs of the statement (what it did instead, what it skipped), answered as `notices`. */
  notices?: string[];
  /** CREATE/ALTER/DROP TYPE: the enum's labels afterwards (null: dropped), for later statements of the script. */
  enumEffect?: { name: string; labels: string[] | null };
  /** CREATE/DROP VIEW, DROP TABLE … CASCADE: the views made or dropped (views.ts), seen by later statements of the script. */
  views?: ViewEffect;
  /** CREATE FUNCTION / CREATE TRIGGER / DROP TRIGGER / DROP FUNCTION: its steps are made when it runs (triggers.ts). */
  routine?: RoutineOp;
  /**
   * INSERT/UPDATE … RETURNING: the same write in two steps — it returns the rowids, then the
   * RETURNING list is selected from the table by those rowids (the worker passes them on) — used
   * when the table has a BEFORE trigger that assigns NEW fields, whose SQLite AFTER trigger the
   * RETURNING of the one-step form would not see (query.ts, triggers.ts).
   */
  reread?: { table: string; steps: Step[] };
  /** The table privileges its data-modifying WITH items need (dml-cte.ts), besides the main statement's. */
  dmlPrivileges?: Map<string, number>;
}

export const NOW = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;


/** A raw-DDL table's definition in the rows API's catalog (the TableDef fields besides name, kind and created_at). */
export interface CatalogDef {
  columns: unknown[];
  indexes: unknown[];
  key?: 'int8';
  stamps?: false;
}

export function statement(n: Node, em: Emitter): Statement {
  if (needsStatementWith(n)) return withStatement(n, em, statement);
  refuseViewWrite(n, em);
  switch (n.type) {
    case 'select': {
      const s = em.select(n);
      return { command: 'SELECT', steps: [{ sql: s.sql, result: true }], columns: s.columns, readOnly: true, pointLookup: isPointLookup(n) };
    }
    case 'insert':
      return insert(n, em);
    case 'update':
      return update(n, em);
    case 'delete':
      return del(n, em);
    case 'create':
      if (n.keyword === 'table') return createTable(n, em);
      if (n.keyword === 'index') return createIndex(n, em);
      if (n.keyword === 'extension') return createExtension(n);
      throw unsupported(`CREATE ${String(n.keyword).toUpperCase()}`);
    case 'alter':
      return alter(n, em);
    case 'drop':
      return drop(n, em);
    case 'transaction':
      throw unsupported('transaction control (BEGIN/COMMIT/ROLLBACK): a request is one transaction');
    case 'pe_rls':
      return rlsToggle(n, em);
    case 'pe_policy':
      return policyStatement(n, em);
    case 'pe_grant':
      return grantStatement(n, em);
    case 'pe_view':
      return createView(n, em);
    case 'pe_drop_view':
      return dropView(n, em);
    case 'pe_alter_view':
      return alterView(n, em);
    case 'pe_routine':
      return routineStatement(n, em);
  }
  const typed = typeStatement(n, em);
  if (typed) return typed;
  throw unsupported(`${String(n.type ?? 'this').toUpperCase()} statements`);
}

/**
 * Turns the rows API's RLS on or off for a table (its policies stay): `_svc_meta.rls` is the
 * same switch as `PUT /db/tables/{t}/rls`. With RLS on and no policy for an operation, callers
 * other than the service role are denied it, as in Postgres. The caller (query.ts) checks that
 * the table is one the rows API lists.
 */
function rlsToggle(n: Node, em: Emitter): Statement {
  const phys = em.physical(null, n.table);
  if (em.opts.schema(phys) === null) throw new EdgeError('invalid_request', `relation "${phys}" does not exist`);
  const enable = n.enable === true;
  return {
    command: 'ALTER TABLE',
    steps: [
      {
        sql: `INSERT INTO "_svc_meta.rls" (tbl, enabled, policies, compiled, version, updated_at) VALUES (?, ?, '{}', NULL, 1, ${NOW})
              ON CONFLICT (tbl) DO UPDATE SET enabled = excluded.enabled, version = "_svc_meta.rls".version + 1, updated_at = excluded.updated_at`,
        fixed: [phys, enable ? 1 : 0],
      },
    ],
    columns: [],
    readOnly: false,
    rls: { table: phys, enable },
  };
}

function oneTable(n: Node, em: Emitter): { phys: string; alias: string; columns: ColumnType[] | null } {
  const list = n.table as Node[] | undefined;
  if (!Array.isArray(list) || list.length !== 1) throw unsupported('statements on several tables');
  const t = list[0]!;
  const phys = em.physical(t.db, t.table);
  const alias = typeof t.as === 'string' ? t.as.toLowerCase() : String(t.table).toLowerCase();
  return { phys, alias, columns: em.opts.schema(phys) };
}

function returning(n: Node, em: Emitter, scope: { alias: string; columns: ColumnType[] | null }[]): { sql: string; list: string; columns: ColumnType[] | null } {
  const r = n.returning as { columns?: Node[] } | undefined;
  if (!r?.columns?.length) return { sql: '', list: '', columns: [] };
  const parts: string[] = [];
  const columns: ColumnType[] = [];
  let known = true;
  for (const item of r.columns) {
    const e = item.expr as Node;
    if (e?.type === 'column_ref' && e.column === '*') {
      const src = scope[0]!;
      if (src.columns) {
        for (const c of src.columns) {
          parts.push(`${quoteIdent(c.name)} AS ${quoteIdent(c.name)}`);
          columns.push(c);
        }
      } else {
        parts.push('*');
        known = false;
      }
      continue;
    }
    const x = em.expr(e, scope);
    const alias = typeof item.as === 'string' ? item.as : null;
    const name = alias ?? x.name;
    parts.push(`${x.sql} AS ${quoteIdent(name)}`);
    columns.push({ name, type: x.type === 'unknown' ? 'text' : x.type });
  }
  const list = parts.map((p) => (p === '*' ? `${quoteIdent(scope[0]!.alias)}.*` : p)).join(', ');
  return { sql: ` RETURNING ${parts.join(', ')}`, list, columns: known ? columns : null };
}

/** The worker's stand-in for the rowids a `rowids: 'collect'` step returned (Statement.reread). */
export const ROWIDS_PARAM = '[]';

/** See Statement.reread: the write returning its rowids, then the RETURNING list read from the table in the rows' order. */
function reread(write: string, table: string, ref: string, alias: string, list: string): Statement['reread'] {
  const a = quoteIdent(alias);
  return {
    table,
    steps: [
      { sql: `${write} RETURNING ${a}.rowid`, rowids: 'collect' },
      { sql: `SELECT ${list} FROM (SELECT "key" AS "pe_rowid_n", "value" AS "pe_rowid" FROM json_each(?)) AS "pe_rowids" JOIN ${ref} AS ${a} ON ${a}.rowid = "pe_rowids"."pe_rowid" ORDER BY "pe_rowids"."pe_rowid_n"`, fixed: [ROWIDS_PARAM], result: true, rowids: 'use' },
    ],
  };
}

function typeOf(columns: ColumnType[] | null, name: string): PgType | null {
  return columns?.find((c) => c.name === name)?.type ?? null;
}

/** The clauses the emitter reads per data-changing statement; any other is refused by name (see emit.ts NODE_KEYS). */
const DML_KEYS = {
  insert: new Set('type,table,columns,values,conflict,returning,prefix,parentheses'.split(',')),
  update: new Set('type,table,set,from,where,returning,parentheses'.split(',')),
  delete: new Set('type,table,from,where,returning,parentheses'.split(',')),
};

export function insert(n: Node, em: Emitter): Statement {
  checkKeys(n, DML_KEYS.insert, 'INSERT');
  const t = oneTable(n, em);
  const ref = em.tableRef(t.phys);
  let cols: string[];
  if (Array.isArray(n.columns) && n.columns.length) cols = (n.columns as Node[]).map((c) => (typeof c === 'string' ? c : String(c.value)).toLowerCase());
  else if (t.columns) cols = t.columns.map((c) => c.name);
  else throw new EdgeError('invalid_request', `relation "${t.phys}" does not exist`);
  const values = n.values as Node;
  let body: string;
  let rows: string[][] = [];
  if (values?.type === 'values') {
    rows = (values.values as Node[]).map((row) => {
      const vals = (row.value as Node[]) ?? [];
      if (vals.length > cols.length) throw new EdgeError('invalid_request', 'INSERT has more expressions than target columns');
      return vals.map((v, i) => valueFor(em, v, typeOf(t.columns, cols[i]!)));
    });
    if (rows.length === 0) throw unsupported('INSERT without rows');
    checkUpsertKeys(n.conflict as Node | undefined, cols, rows);
    const width = (values.values as Node[])[0]!.value as Node[];
    cols = cols.slice(0, width.length);
    body = `VALUES ${rows.map((r) => `(${r.join(', ')})`).join(', ')}`;
  } else if (values?.type === 'select') {
    body = em.select(values).sql;
  } else throw unsupported('this INSERT form');
  // note: the rows API's id and timestamps, which have no default in SQLite's table, take the ones
  // they have through the rows API when left out (docs/sql.md "One table, two doors").
  const fills = (t.columns ?? []).filter((c) => c.auto !== undefined && !cols.includes(c.name));
  if (fills.length && values?.type === 'values') {
    const extra = fills.map((c) => autoValue(c.auto!));
    body = `VALUES ${rows.map((r) => `(${[...r, ...extra].join(', ')})`).join(', ')}`;
  }
  const names = [...cols, ...fills.map((c) => c.name)].map((c) => em.ident(c)).join(', ');
  const scope = [{ alias: t.alias, columns: t.columns }];
  let sql = `INSERT INTO ${ref} AS ${quoteIdent(t.alias)} (${names}) ${body}`;
  if (values?.type === 'select') {
    const extra = fills.map((c) => `, ${autoValue(c.auto!)}`).join('');
    sql = `INSERT INTO ${ref} AS ${quoteIdent(t.alias)} (${names}) SELECT *${extra} FROM (${body}) WHERE true`;
  }
  const conflict = n.conflict as Node | undefined;
  if (conflict) sql += onConflict(conflict, em, t, scope);
  const ret = returning(n, em, scope);
  const out: Statement = { command: 'INSERT', steps: [{ sql: sql + ret.sql, result: true }], columns: ret.columns, readOnly: false };
  if (ret.list) out.reread = reread(sql, t.phys, ref, t.alias, ret.list);
  return out;
}

/**
 * A UUIDv7 (the rows API's ids): the statement's millisecond time, version 7, the variant,
 * random bits. Native SQLite only ('now' is fixed within a statement, so both reads agree).
 */
const MS_HEX = `printf('%012x', CAST(strftime('%s', 'now') AS INTEGER) * 1000 + CAST(substr(strftime('%f', 'now'), 4) AS INTEGER))`;
export const UUID_V7 =
  `lower(substr(${MS_HEX}, 1, 8) || '-' || substr(${MS_HEX}, 9, 4) || '-7' || substr(hex(randomblob(2)), 2) || '-' || ` +
  `substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`;

/** The value the translator gives a left-out column of ColumnType.auto. */
const autoValue = (auto: 'uuid' | 'now' | 'touch'): string => (auto === 'uuid' ? UUID_V7 : NOW);

/** `, "updated_at" = now` for a table whose column is kept current (`touch`) when the SET list leaves it out. */
function touch(columns: ColumnType[] | null, set: Node[]): string {
  const named = new Set(set.map((x) => columnName(x)));
  return (columns ?? [])
    .filter((c) => c.auto === 'touch' && !named.has(c.name))
    .map((c) => `, ${quoteIdent(c.name)} = ${NOW}`)
    .join('');
}

/** A value assigned to a column: literals and parameters take the column's type (Postgres assignment casts). */
function valueFor(em: Emitter, v: Node, type: PgType | null): string {
  if (v.type === 'column_ref' && !v.table && columnName(v) === 'default') throw unsupported('DEFAULT in VALUES (leave the column out)');
  return em.coerce(em.expr(v, []), type).sql;
}

function onConflict(c: Node, em: Emitter, t: { phys: string; alias: string; columns: ColumnType[] | null }, scope: { alias: string; columns: ColumnType[] | null }[]): string {
  const target = c.target as { expr?: Node[] } | undefined;
  const cols = target?.expr?.map((e) => em.ident(columnName(e))) ?? [];
  const action = (c.action as Node | undefined)?.expr as Node | undefined;
  const tgt = cols.length ? ` (${cols.join(', ')})` : '';
  if (action?.type === 'origin' && String(action.value).toLowerCase() === 'nothing') return ` ON CONFLICT${tgt} DO NOTHING`;
  if (action?.type === 'update') {
    if (!cols.length) throw new EdgeError('invalid_request', 'ON CONFLICT DO UPDATE requires inference specification or constraint name');
    const excluded = { alias: 'excluded', columns: t.columns };
    const sets = setList(action.set as Node[], em, t.columns, [...scope, excluded]) + touch(t.columns, action.set as Node[]);
    const where = action.where ? ` WHERE ${em.bool(action.where as Node, [...scope, excluded])}` : '';
    return ` ON CONFLICT${tgt} DO UPDATE SET ${sets}${where}`;
  }
  throw unsupported('this ON CONFLICT action');
}

function setList(set: Node[], em: Emitter, columns: ColumnType[] | null, scope: { alias: string; columns: ColumnType[] | null }[]): string {
  return set
    .map((s) => {
      const name = columnName(s);
      const v = s.value as Node;
      if (v?.type === 'column_ref' && !v.table && columnName(v) === 'default') throw unsupported('SET col = DEFAULT');
      const e: Expr = em.coerce(em.expr(v, scope), typeOf(columns, name));
      return `${em.ident(name)} = ${e.sql}`;
    })
    .join(', ');
}

export function update(n: Node, em: Emitter): Statement {
  checkKeys(n, DML_KEYS.update, 'UPDATE');
  const t = oneTable(n, em);
  const ref = em.tableRef(t.phys);
  const scope: { alias: string; columns: ColumnType[] | null }[] = [{ alias: t.alias, columns: t.columns }];
  let from = '';
  if (Array.isArray(n.from) && n.from.length) {
    // note: UPDATE … FROM: SQLite (3.33+) has the same form.
    const items = n.from as Node[];
    const parts: string[] = [];
    for (const it of items) {
      if (typeof it.table !== 'string' || it.join) throw unsupported('this UPDATE … FROM item');
      const alias = typeof it.as === 'string' ? it.as.toLowerCase() : it.table.toLowerCase();
      const view = viewFrom(em, it.db, it.table, alias);
      if (view) {
        parts.push(view.text);
        scope.push(view.source);
        continue;
      }
      const phys = em.physical(it.db, it.table, true);
      parts.push(`${em.tableRef(phys)} AS ${quoteIdent(alias)}`);
      scope.push({ alias, columns: em.columnsOf(phys) });
    }
    from = ` FROM ${parts.join(', ')}`;
  }
  const sets = setList(n.set as Node[], em, t.columns, scope) + touch(t.columns, n.set as Node[]);
  const where = n.where ? `(${em.bool(n.where as Node, scope)}) AND ${tickCall(scope)}` : tickCall(scope);
  const ret = returning(n, em, scope);
  const sql = `UPDATE ${ref} AS ${quoteIdent(t.alias)} SET ${sets}${from} WHERE ${where}`;
  const out: Statement = { command: 'UPDATE', steps: [{ sql: sql + ret.sql, result: true }], columns: ret.columns, readOnly: false };
  if (ret.list) out.reread = reread(sql, t.phys, ref, t.alias, ret.list);
  return out;
}

function del(n: Node, em: Emitter): Statement {
  checkKeys(n, DML_KEYS.delete, 'DELETE');
  const list = (n.from as Node[] | undefined) ?? [];
  if (list.length !== 1 || list[0]!.join) throw unsupported('DELETE … USING');
  const t = list[0]!;
  const phys = em.physical(t.db, t.table);
  const alias = typeof t.as === 'string' ? t.as.toLowerCase() : String(t.table).toLowerCase();
  const ref = em.tableRef(phys);
  const scope = [{ alias, columns: em.opts.schema(phys) }];
  const where = n.where ? `(${em.bool(n.where as Node, scope)}) AND ${tickCall(scope)}` : tickCall(scope);
  const ret = returning(n, em, scope);
  return {
    command: 'DELETE',
    steps: [{ sql: `DELETE FROM ${ref} AS ${quoteIdent(alias)} WHERE ${where}${ret.sql}`, result: true }],
    columns: ret.columns,
    readOnly: false,
  };
}

const LEAF = new Set(['var', 'number', 'single_quote_string', 'bool']);

/** `auth.uid()` or `auth.role()`: a value bound per call, like a parameter. */
function isAuthCall(x: Node): boolean {
  if (x.type !== 'function') return false;
  const { schema, name } = callName(x);
  return schema === 'auth' && (name === 'uid' || name === 'role');
}

/** See Statement.pointLookup: decided on the AST, before any plan is looked at. */
function isPointLookup(n: Node): boolean {
  if ((Array.isArray(n.with) && n.with.length) || n._next || n.having || n.window) return false;
  if ((n.distinct as Node | null | undefined)?.type) return false;
  if ((n.groupby as { columns?: unknown[] } | null | undefined)?.columns?.length) return false;
  if (Array.isArray(n.orderby) && n.orderby.length) return false;
  const from = n.from as Node[] | undefined;
  if (!Array.isArray(from) || from.length !== 1 || typeof from[0]!.table !== 'string' || from[0]!.join || from[0]!.expr) return false;
  const cols = (n.columns as Node[] | undefined) ?? [];
  if (!cols.length || !cols.every((c) => c.type !== 'cast' && (c.expr as Node | undefined)?.type === 'column_ref')) return false;
  const eqOnly = (w: Node | undefined): boolean => {
    if (!w || w.type !== 'binary_expr') return false;
    const op = String(w.operator).toUpperCase();
    if (op === 'AND') return eqOnly(w.left as Node) && eqOnly(w.right as Node);
    if (op !== '=') return false;
    const l = w.left as Node;
    const r = w.right as Node;
    const leaf = (x: Node) => LEAF.has(String(x.type)) || isAuthCall(x);
    return (l.type === 'column_ref' && leaf(r)) || (r.type === 'column_ref' && leaf(l));
  };
  return eqOnly(n.where as Node | undefined);
}
