import { EdgeError } from '../../core/errors.js';
import { quoteIdent } from '../../project/schemas.js';
import { callName, checkKeys, columnName, Emitter, PRIMARY_KEY_MARK, tickCall, unsupported, type Expr, type Node } from './emit.js';
import { isReservedName, reservedRefusal } from './reserved.js';
import { DECLTYPE, pgTypeOf, toCatalogType, typeNameOf, type ColumnType, type PgType } from './types.js';

/** One SQLite statement of a translated Postgres statement. */
export interface Step {
  /** SQLite text with `\0P<n>\0` / `\0T<name>\0` markers. */
  sql: string;
  /** Fixed values bound after the caller's (catalog bookkeeping). */
  fixed?: unknown[];
  /** Whether this step's rows are the statement's result. */
  result?: boolean;
}

export type Command = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE' | 'CREATE TABLE' | 'CREATE INDEX' | 'CREATE POLICY' | 'CREATE EXTENSION' | 'ALTER TABLE' | 'DROP TABLE' | 'DROP INDEX';

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
   * CREATE POLICY: the policy expressions it adds to a catalog table's rows-API policies, per
   * operation (each is ORed with the one there, as Postgres combines permissive policies).
   * query.ts compiles the result against the table and binds the step's values (POLICY_WRITE).
   */
  policy?: { name: string; table: string; add: Partial<Record<PolicyOp, string>> };
  /** `ALTER TABLE t ENABLE|DISABLE ROW LEVEL SECURITY`: the rows API's RLS switch of a catalog table. */
  rls?: { table: string; enable: boolean };
}

const NOW = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;

type PolicyOp = 'select' | 'insert' | 'update' | 'delete';

/** A raw-DDL table's definition in the rows API's catalog (the TableDef fields besides name, kind and created_at). */
export interface CatalogDef {
  columns: unknown[];
  indexes: unknown[];
  key?: 'int8';
  stamps?: false;
}

/**
 * A CREATE POLICY step: writes a table's policy sources and compiled forms, bound by
 * query.ts as (table, policies JSON, compiled JSON). The RLS switch is left as it is
 * (off for a table that had no RLS row: creating a policy does not enable RLS, as in Postgres).
 */
export const POLICY_WRITE = `INSERT INTO "_svc_meta.rls" (tbl, enabled, policies, compiled, version, updated_at) VALUES (?, 0, ?, ?, 1, ${NOW})
  ON CONFLICT (tbl) DO UPDATE SET policies = excluded.policies, compiled = excluded.compiled, version = "_svc_meta.rls".version + 1, updated_at = excluded.updated_at`;

export function statement(n: Node, em: Emitter): Statement {
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
      return createPolicy(n, em);
  }
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

const POLICY_ROLES = new Set(['anon', 'authenticated', 'service_role']);

/**
 * `CREATE POLICY` (read by translate.ts) → what it adds to the rows API's policies. Postgres'
 * rules decide which expression applies: USING to the rows a command sees (select, update,
 * delete), WITH CHECK to new rows (insert; FOR ALL's defaults to USING). `TO anon|authenticated`
 * becomes a condition on `auth.role()`. What the rows API's one-expression-per-operation model
 * cannot hold is refused by name: an UPDATE whose WITH CHECK differs from its USING, a
 * command without the expression it needs.
 */
function createPolicy(n: Node, em: Emitter): Statement {
  const phys = em.physical(null, n.table);
  if (em.opts.schema(phys) === null) throw new EdgeError('invalid_request', `relation "${phys}" does not exist`);
  const command = n.command as 'all' | PolicyOp;
  const using = n.using as string | null;
  const check = n.check as string | null;
  if ((command === 'select' || command === 'delete') && check !== null) throw new EdgeError('invalid_request', 'WITH CHECK cannot be applied to SELECT or DELETE');
  if (command === 'insert' && using !== null) throw new EdgeError('invalid_request', 'only WITH CHECK expression allowed for INSERT');
  if (command === 'insert' ? check === null : using === null) {
    throw new EdgeError('invalid_request', `a policy FOR ${command.toUpperCase()} needs ${command === 'insert' ? 'WITH CHECK' : 'USING'} (…) here`);
  }
  if ((command === 'update' || command === 'all') && check !== null && check.replace(/\s+/g, ' ').trim() !== using!.replace(/\s+/g, ' ').trim()) {
    throw unsupported(`FOR ${command.toUpperCase()} policies whose WITH CHECK differs from USING (the rows API checks one update expression before and after the change)`);
  }
  const roles = (n.roles as string[]).filter((r) => r !== 'public');
  for (const r of roles) if (!POLICY_ROLES.has(r)) throw unsupported(`policies for role "${r}" (roles here: public, anon, authenticated, service_role)`);
  const guard = (expr: string): string => (roles.length ? `auth.role() IN (${roles.map((r) => `'${r}'`).join(', ')}) AND (${expr})` : expr.trim());
  const add: Partial<Record<PolicyOp, string>> = {};
  if (command === 'all' || command === 'select') add.select = guard(using!);
  if (command === 'all' || command === 'update') add.update = guard(using!);
  if (command === 'all' || command === 'delete') add.delete = guard(using!);
  if (command === 'all' || command === 'insert') add.insert = guard(check ?? using!);
  return { command: 'CREATE POLICY', steps: [{ sql: POLICY_WRITE }], columns: [], readOnly: false, policy: { name: String(n.name), table: phys, add } };
}

function oneTable(n: Node, em: Emitter): { phys: string; alias: string; columns: ColumnType[] | null } {
  const list = n.table as Node[] | undefined;
  if (!Array.isArray(list) || list.length !== 1) throw unsupported('statements on several tables');
  const t = list[0]!;
  const phys = em.physical(t.db, t.table);
  const alias = typeof t.as === 'string' ? t.as.toLowerCase() : String(t.table).toLowerCase();
  return { phys, alias, columns: em.opts.schema(phys) };
}

function returning(n: Node, em: Emitter, scope: { alias: string; columns: ColumnType[] | null }[]): { sql: string; columns: ColumnType[] | null } {
  const r = n.returning as { columns?: Node[] } | undefined;
  if (!r?.columns?.length) return { sql: '', columns: [] };
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
  return { sql: ` RETURNING ${parts.join(', ')}`, columns: known ? columns : null };
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

function insert(n: Node, em: Emitter): Statement {
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
  return { command: 'INSERT', steps: [{ sql: sql + ret.sql, result: true }], columns: ret.columns, readOnly: false };
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

function update(n: Node, em: Emitter): Statement {
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
      const phys = em.physical(it.db, it.table, true);
      const alias = typeof it.as === 'string' ? it.as.toLowerCase() : it.table.toLowerCase();
      parts.push(`${em.tableRef(phys)} AS ${quoteIdent(alias)}`);
      scope.push({ alias, columns: em.columnsOf(phys) });
    }
    from = ` FROM ${parts.join(', ')}`;
  }
  const sets = setList(n.set as Node[], em, t.columns, scope) + touch(t.columns, n.set as Node[]);
  const where = n.where ? `(${em.bool(n.where as Node, scope)}) AND ${tickCall(scope)}` : tickCall(scope);
  const ret = returning(n, em, scope);
  return {
    command: 'UPDATE',
    steps: [{ sql: `UPDATE ${ref} AS ${quoteIdent(t.alias)} SET ${sets}${from} WHERE ${where}${ret.sql}`, result: true }],
    columns: ret.columns,
    readOnly: false,
  };
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

// ---------------------------------------------------------------- DDL

interface ColumnSpec {
  name: string;
  type: PgType;
  sql: string;
  pk: boolean;
  notNull: boolean;
  unique: boolean;
  hasDefault: boolean;
  /** `GENERATED … AS IDENTITY` (the primary key, an autoincrementing rowid). */
  identity: boolean;
  references: { table: string; column: string; on_delete: string } | null;
}

function createTable(n: Node, em: Emitter): Statement {
  if (n.temporary) throw unsupported('temporary tables');
  if (n.as || n.query_expr) throw unsupported('CREATE TABLE … AS');
  if (n.like) throw unsupported('CREATE TABLE … LIKE');
  const t = (n.table as Node[])[0]!;
  const phys = em.physical(t.db, t.table);
  if (phys.startsWith('_svc') || phys.startsWith('pg_')) {
    if (!phys.includes('.')) throw unsupported(`table name "${phys}" (reserved prefix)`);
  }
  em.native = true;
  const cols: ColumnSpec[] = [];
  const constraints: string[] = [];
  let tablePk: string[] | null = null;
  for (const d of (n.create_definitions as Node[]) ?? []) {
    if (d.resource === 'column') cols.push(columnSpec(d, em, phys));
    else if (d.resource === 'constraint') {
      const ct = String(d.constraint_type ?? '').toLowerCase();
      // note: a CHECK's definition is expressions, not column names: read as names only for key constraints.
      const keys = ct === 'check' ? [] : ((d.definition as Node[]) ?? []).map((k) => em.ident(columnName(k)));
      const named = d.constraint ? `CONSTRAINT ${em.ident(String(d.constraint))} ` : '';
      if (ct === 'primary key') {
        tablePk = ((d.definition as Node[]) ?? []).map((k) => columnName(k));
        constraints.push(`${named}PRIMARY KEY (${keys.join(', ')})`);
      } else if (ct === 'unique' || ct === 'unique key' || ct === 'unique index') constraints.push(`${named}UNIQUE (${keys.join(', ')})`);
      else if (ct === 'check') constraints.push(`${named}CHECK (${((d.definition as Node[]) ?? []).map((x) => em.bool(x, [{ alias: phys, columns: cols }])).join(' AND ')})`);
      else if (ct === 'foreign key') {
        const r = references(d.reference_definition as Node, em, phys);
        constraints.push(`${named}FOREIGN KEY (${keys.join(', ')}) ${r.sql}`);
        // note: a one-column key is the column's reference in the catalog, as when written on the column.
        const own = keys.length === 1 ? cols.find((c) => c.name === columnName(((d.definition as Node[]) ?? [])[0]!)) : undefined;
        if (own && r.ref && !own.references) own.references = r.ref;
      }
      else throw unsupported(`table constraint ${ct}`);
    } else throw unsupported(`this table definition item (${String(d.resource)})`);
  }
  em.native = false;
  if (cols.length === 0) throw unsupported('tables without columns');
  const body = [...cols.map((c) => c.sql), ...constraints].join(', ');
  const ine = n.if_not_exists ? 'IF NOT EXISTS ' : '';
  const steps: Step[] = [{ sql: `CREATE TABLE ${ine}${quoteIdent(phys)} (${body})` }];
  if (n.pe_identity_always === true) {
    const id = cols.find((c) => c.identity);
    if (!id) throw unsupported('GENERATED ALWAYS AS IDENTITY outside a column definition');
    steps.push(...alwaysIdentity(phys, id.name, ine));
  }
  const catalog = catalogDef(phys, cols, tablePk);
  if (catalog) {
    steps.push({
      sql: `INSERT ${ine ? 'OR IGNORE ' : ''}INTO "_svc_meta.tables" (name, kind, def, created_at) VALUES (?, 'relational', ?, ${NOW})`,
      fixed: [phys, JSON.stringify(catalog)],
    });
  }
  return {
    command: 'CREATE TABLE',
    steps,
    columns: [],
    readOnly: false,
    effect: { table: phys, columns: cols.map((c) => ({ name: c.name, type: c.type, pk: c.pk || (tablePk?.length === 1 && tablePk[0] === c.name) })) },
    adopted: catalog !== null,
    ...(catalog ? { catalogDef: catalog } : {}),
  };
}

/**
 * What `GENERATED ALWAYS AS IDENTITY` adds to BY DEFAULT: the value is never the caller's.
 * An insert that names the column (SQLite shows an omitted rowid as -1 to BEFORE triggers)
 * and an update that changes it are refused with Postgres' messages (400).
 */
function alwaysIdentity(phys: string, col: string, ifNotExists: string): Step[] {
  const t = quoteIdent(phys);
  const c = quoteIdent(col);
  const trigger = (what: string) => `CREATE TRIGGER ${ifNotExists}${quoteIdent(`pe_identity_${what}_${phys}`)}`;
  return [
    { sql: `${trigger('insert')} BEFORE INSERT ON ${t} WHEN NEW.${c} IS NOT -1 BEGIN SELECT RAISE(ABORT, 'pe_invalid_input: cannot insert a non-DEFAULT value into column "${col}"'); END` },
    { sql: `${trigger('update')} BEFORE UPDATE OF ${c} ON ${t} WHEN NEW.${c} IS NOT OLD.${c} BEGIN SELECT RAISE(ABORT, 'pe_invalid_input: column "${col}" can only be updated to DEFAULT'); END` },
  ];
}

/**
 * A raw-DDL table in `public` joins the rows API's catalog when its primary key is one
 * column `id` that the rows API can fill: uuid or text (it writes a UUIDv7), or an integer
 * rowid (`serial`, `bigserial`, `int`/`integer`: SQLite assigns it). `created_at` and
 * `updated_at` timestamptz columns become the rows' timestamps when both are there;
 * otherwise the rows carry none (`stamps: false`) and such columns are data columns.
 */
function catalogDef(phys: string, cols: ColumnSpec[], tablePk: string[] | null): CatalogDef | null {
  if (phys.includes('.')) return null;
  const id = cols.find((c) => c.name === 'id');
  if (!id || !(id.pk || (tablePk?.length === 1 && tablePk[0] === 'id'))) return null;
  // note: only INTEGER PRIMARY KEY is SQLite's rowid (assigned when omitted); a BIGINT key is not.
  const rowid = /^"id" INTEGER( |$)/.test(id.sql);
  if (id.type !== 'uuid' && id.type !== 'text' && !rowid) return null;
  const ts = (name: string) => cols.find((c) => c.name === name)?.type === 'timestamptz';
  const stamps = ts('created_at') && ts('updated_at');
  const columns: unknown[] = [];
  for (const c of cols) {
    if (c.name === 'id' || (stamps && (c.name === 'created_at' || c.name === 'updated_at'))) continue;
    const type = toCatalogType(c.type);
    if (!type) return null;
    // note: defaults stay in the table (SQLite applies them); the catalog records none, and such a column is
    // not required by the rows API (it is "nullable" there: an omitted value takes the default).
    columns.push({ name: c.name, type, nullable: !c.notNull || c.hasDefault, default: null, unique: c.unique, references: c.references });
  }
  return { columns, indexes: [], ...(rowid ? { key: 'int8' as const } : {}), ...(stamps ? {} : { stamps: false as const }) };
}

/** A column definition; `self` is the table it belongs to (a foreign key may name it). */
function columnSpec(d: Node, em: Emitter, self: string): ColumnSpec {
  const name = columnName(d.column as Node);
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw unsupported(`column name "${name}"`);
  const def = d.definition as Node;
  const raw = typeNameOf(def);
  let type = pgTypeOf(raw);
  if (!type || type === 'interval' || type === 'unknown') throw unsupported(`column type ${raw.toLowerCase()}`);
  // note: `generated by default as identity` (Supabase's default key) is a sequence-backed key like serial.
  const identity = d.generated_by_default !== undefined && d.generated_by_default !== null;
  if (identity && !/^(SMALLINT|INT|INTEGER|BIGINT|INT2|INT4|INT8)$/i.test(raw)) throw unsupported(`identity columns of type ${raw.toLowerCase()}`);
  const serial = /SERIAL/i.test(raw) || identity;
  const pk = Boolean(d.primary_key);
  const notNull = (d.nullable as Node | undefined)?.type === 'not null' || pk;
  const unique = Boolean(d.unique);
  const parts = [quoteIdent(name)];
  const q = quoteIdent(name);
  if (serial) {
    if (!pk) throw unsupported(identity ? 'identity columns other than the primary key' : 'serial columns other than the primary key');
    type = 'int8';
    // note: INTEGER PRIMARY KEY is SQLite's rowid; AUTOINCREMENT never reuses a value, like a sequence.
    parts.push('INTEGER PRIMARY KEY AUTOINCREMENT');
  } else {
    parts.push(DECLTYPE[type as keyof typeof DECLTYPE]);
    if (pk) parts.push('PRIMARY KEY');
    if (notNull && !pk) parts.push('NOT NULL');
    // note: INTEGER PRIMARY KEY is SQLite's rowid, never null (a missing value is assigned; Postgres would
    // refuse it, docs/sql.md); any other key is NOT NULL as in Postgres (SQLite would accept NULL keys).
    if (pk && type !== 'int4') parts.push('NOT NULL');
  }
  if (unique) parts.push('UNIQUE');
  const dv = d.default_val as Node | undefined;
  if (dv) {
    const e = em.coerce(em.expr((dv.value as Node) ?? dv, []), type);
    parts.push(`DEFAULT (${e.sql})`);
  }
  if (def.length && type === 'text' && /CHAR/i.test(raw)) {
    // note: named, so that a violation reads as Postgres' "value too long for type …" (22001), not as a CHECK (query.ts).
    parts.push(`CONSTRAINT pe_${/VAR/i.test(raw) ? 'varchar' : 'bpchar'}_${Number(def.length)} CHECK (length(${q}) <= ${Number(def.length)})`);
  }
  if (type === 'bool') parts.push(`CHECK (${q} IN (0, 1))`);
  if (type === 'jsonb' || type === 'json') parts.push(`CHECK (json_valid(${q}))`);
  if (type === 'text[]') parts.push(`CHECK (json_valid(${q}) AND json_type(${q}) = 'array')`);
  const check = d.check as { definition?: Node[]; name?: string } | undefined;
  if (check?.definition?.length) {
    parts.push(`${check.name ? `CONSTRAINT ${quoteIdent(check.name)} ` : ''}CHECK (${check.definition.map((x) => em.bool(x, [{ alias: '', columns: [{ name, type }] }])).join(' AND ')})`);
  }
  let refs: ColumnSpec['references'] = null;
  if (d.reference_definition) {
    const r = references(d.reference_definition as Node, em, self);
    parts.push(r.sql);
    refs = r.ref;
  }
  return { name, type, sql: parts.join(' '), pk, notNull, unique, hasDefault: Boolean(dv), identity, references: refs };
}

/**
 * `REFERENCES t [(cols)] [ON DELETE …]`. Without a column list (lower-stmt.ts puts the mark
 * there) it is t's primary key, as in Postgres: SQLite reads a bare
 * REFERENCES the same way. `auth.users`, Supabase's user table, is `profiles` here: every
 * user has exactly one profiles row with the user's id, made and deleted with the user, so
 * a key to it is a key to the user (docs/sql.md "Names").
 */
function references(r: Node, em: Emitter, self: string): { sql: string; ref: ColumnSpec['references'] } {
  const t = (r.table as Node[])[0]!;
  const authUsers = String(t.db ?? '').toLowerCase() === 'auth' && String(t.table).toLowerCase() === 'users';
  const phys = authUsers ? 'profiles' : em.physical(t.db, t.table);
  const target = em.opts.schema(phys);
  // note: SQLite accepts a key to a missing table (and fails each write later); Postgres refuses it at once.
  if (target === null && phys !== self) throw new EdgeError('invalid_request', `relation "${phys}" does not exist`);
  let cols = ((r.definition as Node[]) ?? []).map((c) => columnName(c));
  let refCol = cols.length === 1 ? cols[0]! : null;
  if (cols.length === 1 && cols[0] === PRIMARY_KEY_MARK) {
    cols = [];
    refCol = authUsers ? 'id' : (target?.find((c) => c.pk)?.name ?? null);
    if (target && refCol === null) throw new EdgeError('invalid_request', `there is no primary key for referenced table "${phys}"`);
  }
  let sql = `REFERENCES ${quoteIdent(phys)}${cols.length ? ` (${cols.map(quoteIdent).join(', ')})` : ''}`;
  let onDelete = 'no action';
  for (const a of (r.on_action as Node[]) ?? []) {
    const kind = String(a.type).toLowerCase();
    const v = String((a.value as Node | undefined)?.value ?? '').toLowerCase();
    if (!['cascade', 'set null', 'restrict', 'no action', 'set default'].includes(v)) throw unsupported(`${kind} ${v}`);
    if (kind === 'on delete') onDelete = v;
    else if (kind !== 'on update') throw unsupported(kind);
    sql += ` ${kind.toUpperCase()} ${v.toUpperCase()}`;
  }
  return { sql, ref: refCol !== null ? { table: phys, column: refCol, on_delete: onDelete } : null };
}

function createIndex(n: Node, em: Emitter): Statement {
  const t = n.table as Node;
  const phys = em.physical(t.db, t.table);
  const using = String((n.index_using as Node | null | undefined)?.type ?? 'btree').toLowerCase();
  // note: SQLite's indexes are B-trees, Postgres' default; GIN, GiST, hash, BRIN have no counterpart.
  if (using !== 'btree') throw unsupported(`index method ${using} (indexes here are B-trees)`);
  // note: an unnamed index gets Postgres' name, <table>_<columns>_idx (an expression counts as "expr").
  const name = typeof n.index === 'string' ? n.index.toLowerCase() : defaultIndexName(phys, (n.index_columns as Node[]) ?? []);
  if (isReservedName(name)) throw reservedRefusal(name);
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw unsupported(`index name "${name}"`);
  const uniq = String(n.index_type ?? '').toLowerCase() === 'unique' ? 'UNIQUE ' : '';
  if (n.index_type && !uniq) throw unsupported(`${String(n.index_type)} indexes`);
  em.native = true;
  const scope = [{ alias: phys, columns: em.opts.schema(phys) }];
  const cols = ((n.index_columns as Node[]) ?? []).map((c) => {
    const { order_by: by, ...x } = c;
    const dir = String(by ?? '').toUpperCase();
    const e = x.type === 'column_ref' ? em.ident(columnName(x)) : `(${em.expr(x, scope).sql})`;
    return dir === 'DESC' ? `${e} DESC` : e;
  });
  const where = n.where ? ` WHERE ${em.bool(n.where as Node, scope)}` : '';
  em.native = false;
  const ine = n.if_not_exists ? 'IF NOT EXISTS ' : '';
  // note: index names are schema-wide in Postgres and database-wide in SQLite: the same rule for one schema.
  return {
    command: 'CREATE INDEX',
    steps: [{ sql: `CREATE ${uniq}INDEX ${ine}${quoteIdent(name)} ON ${quoteIdent(phys)} (${cols.join(', ')})${where}` }],
    columns: [],
    readOnly: false,
  };
}

function defaultIndexName(table: string, cols: Node[]): string {
  const parts = cols.map((c) => (c.type === 'column_ref' ? columnName(c) : 'expr'));
  return `${table}_${parts.join('_')}`.slice(0, 59) + '_idx';
}

/** Extensions Supabase projects have installed, whose functions the translator provides. */
const INSTALLED_EXTENSIONS = new Set(['uuid-ossp', 'pgcrypto']);

/**
 * `CREATE EXTENSION "uuid-ossp" | pgcrypto`: installed already, as in a Supabase project
 * (`uuid_generate_v4()`, `gen_random_uuid()` work), so IF NOT EXISTS does nothing and
 * without it the statement fails as Postgres would. Other extensions are refused by name.
 */
function createExtension(n: Node): Statement {
  const ext = String((n.extension as Node | undefined)?.value ?? '').toLowerCase();
  if (!INSTALLED_EXTENSIONS.has(ext)) throw unsupported(`extension "${ext}" (installed: uuid-ossp, pgcrypto)`);
  if (!n.if_not_exists) throw new EdgeError('invalid_request', `extension "${ext}" already exists`);
  return { command: 'CREATE EXTENSION', steps: [], columns: [], readOnly: false };
}

function alter(n: Node, em: Emitter): Statement {
  if (n.keyword !== 'table') throw unsupported(`ALTER ${String(n.keyword).toUpperCase()}`);
  const t = (n.table as Node[])[0]!;
  const phys = em.physical(t.db, t.table);
  const actions = (n.expr as Node[]) ?? [];
  if (actions.length !== 1) throw unsupported('several ALTER TABLE actions in one statement');
  const a = actions[0]!;
  const action = String(a.action).toLowerCase();
  const q = quoteIdent(phys);
  const columns = em.opts.schema(phys);
  if (action === 'add' && a.resource === 'column') {
    em.native = true;
    const c = columnSpec(a, em, phys);
    em.native = false;
    const steps: Step[] = [{ sql: `ALTER TABLE ${q} ADD COLUMN ${c.sql}` }];
    const type = toCatalogType(c.type);
    if (type) {
      steps.push({
        sql: `UPDATE "_svc_meta.tables" SET def = json_set(def, '$.columns[#]', json(?)) WHERE name = ?`,
        fixed: [JSON.stringify({ name: c.name, type, nullable: true, default: null, unique: c.unique, references: c.references }), phys],
      });
    }
    return { command: 'ALTER TABLE', steps, columns: [], readOnly: false, effect: { table: phys, columns: columns ? [...columns, { name: c.name, type: c.type }] : null } };
  }
  if (action === 'drop' && a.resource === 'column') {
    const name = columnName(a.column as Node);
    return {
      command: 'ALTER TABLE',
      steps: [
        { sql: `ALTER TABLE ${q} DROP COLUMN ${em.ident(name)}` },
        {
          sql: `UPDATE "_svc_meta.tables" SET def = json_set(def, '$.columns', (SELECT json_group_array(json(value)) FROM json_each(def, '$.columns') WHERE json_extract(value, '$.name') <> ?)) WHERE name = ?`,
          fixed: [name, phys],
        },
      ],
      columns: [],
      readOnly: false,
      effect: { table: phys, columns: columns ? columns.filter((c) => c.name !== name) : null },
    };
  }
  if (action === 'rename' && a.resource === 'column') {
    const from = String((a.old_column as Node | undefined)?.column ?? '').toLowerCase();
    const to = String((a.column as Node | undefined)?.column ?? '').toLowerCase();
    const NAME = /^[a-z_][a-z0-9_]{0,62}$/;
    if (!NAME.test(from) || !NAME.test(to)) throw unsupported('this RENAME COLUMN');
    return {
      command: 'ALTER TABLE',
      steps: [
        { sql: `ALTER TABLE ${q} RENAME COLUMN ${quoteIdent(from)} TO ${quoteIdent(to)}` },
        {
          sql: `UPDATE "_svc_meta.tables" SET def = json_set(def, '$.columns', (SELECT json_group_array(json_set(value, '$.name', CASE WHEN json_extract(value, '$.name') = ? THEN ? ELSE json_extract(value, '$.name') END)) FROM json_each(def, '$.columns'))) WHERE name = ?`,
          fixed: [from, to, phys],
        },
      ],
      columns: [],
      readOnly: false,
      effect: { table: phys, columns: columns ? columns.map((c) => (c.name === from ? { ...c, name: to } : c)) : null },
    };
  }
  if (action === 'rename' && a.resource === 'table') {
    const to = em.physical(null, a.table);
    return {
      command: 'ALTER TABLE',
      steps: [
        { sql: `ALTER TABLE ${q} RENAME TO ${quoteIdent(to)}` },
        { sql: `UPDATE "_svc_meta.tables" SET name = ? WHERE name = ?`, fixed: [to, phys] },
        { sql: `UPDATE "_svc_meta.rls" SET tbl = ? WHERE tbl = ?`, fixed: [to, phys] },
      ],
      columns: [],
      readOnly: false,
      effect: { table: to, columns },
    };
  }
  throw unsupported(`ALTER TABLE … ${action.toUpperCase()} ${String(a.resource ?? '').toUpperCase()}`);
}

function drop(n: Node, em: Emitter): Statement {
  const kw = String(n.keyword).toLowerCase();
  const ie = String(n.prefix ?? '').toUpperCase() === 'IF EXISTS' ? 'IF EXISTS ' : '';
  const names = Array.isArray(n.name) ? (n.name as Node[]) : [];
  if (kw === 'table') {
    const steps: Step[] = [];
    const effects: string[] = [];
    for (const x of names) {
      // note: the parser reads a trailing CASCADE/RESTRICT as an alias.
      const mode = typeof x.as === 'string' ? x.as.toLowerCase() : null;
      if (mode === 'cascade') throw unsupported('DROP TABLE … CASCADE');
      if (mode && mode !== 'restrict') throw unsupported('DROP TABLE with this option');
      const phys = em.physical(x.db, x.table);
      steps.push({ sql: `DROP TABLE ${ie}${quoteIdent(phys)}` });
      steps.push({ sql: `DELETE FROM "_svc_meta.tables" WHERE name = ?`, fixed: [phys] });
      steps.push({ sql: `DELETE FROM "_svc_meta.rls" WHERE tbl = ?`, fixed: [phys] });
      effects.push(phys);
    }
    if (!steps.length) throw unsupported('DROP TABLE without a table');
    return { command: 'DROP TABLE', steps, columns: [], readOnly: false, effect: { table: effects[0]!, columns: null } };
  }
  if (kw === 'index') {
    const list = Array.isArray(n.name) ? (n.name as Node[]) : n.name ? [n.name as Node] : [];
    const steps = list.map((x) => {
      // note: the platform's indexes (on its _svc_* tables) are all named "_svc_…".
      // note: a qualified name `s.i` is read as a column reference whose table is the schema.
      const schema = x.type === 'column_ref' && typeof x.table === 'string' && x.table !== '' ? x.table.toLowerCase() : null;
      if (schema !== null && isReservedName(schema)) throw reservedRefusal(schema);
      if (schema !== null && schema !== 'public') throw unsupported(`schema "${schema}"`);
      const name = (x.type === 'column_ref' ? columnName(x) : String(x.table ?? x.value ?? '')).toLowerCase();
      if (isReservedName(name)) throw reservedRefusal(name);
      return { sql: `DROP INDEX ${ie}${em.ident(name)}` };
    });
    if (!steps.length) throw unsupported('DROP INDEX without an index');
    return { command: 'DROP INDEX', steps, columns: [], readOnly: false };
  }
  throw unsupported(`DROP ${kw.toUpperCase()}`);
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
