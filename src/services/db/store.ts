import { schemaChanged, schemaVersion } from '../../project/schema-version.js';
import type { ProjectLease } from '../../project/registry.js';
import type { AuthContext } from '../../core/auth-context.js';
import { CallerOf } from '../../sql/caller.js';
import { jsonField, quoteIdent, quoteLiteral } from '../../sql/quote.js';
import { toStored } from './column-values.js';
import { loadGrants } from './grants-store.js';
import { DROP_GRANTS, NO_GRANTS, type Grants } from '../../sql/grants.js';
import type { ColumnDef, ColumnType, CompiledPolicy, IndexDef, NamedPolicy, RlsState, TableDef, TableInfo } from '../../sql/table-model.js';
import { expandPolicies } from '../../sql/policy-expand.js';
import { recompileFunctionPolicies } from '../../sql/policy-functions.js';
import { readFunctions } from '../../sql/pg/triggers.js';
import { parserReady } from '../../sql/pg/parse.js';

/** The SQL of the database service: catalog, DDL and rows. Every value is bound. */

interface CatalogRow {
  name: string;
  kind: 'document' | 'relational';
  def: string;
  created_at: string;
}
interface RlsRow {
  tbl: string;
  enabled: number;
  policies: string;
  compiled: string | null;
  version: number;
  named: string | null;
}
interface PragmaCol {
  name: string;
  type: string;
  notnull: number;
  pk: number;
}

/**
 * Per open database handle: tables by name, valid while `schema_version` is unchanged. The
 * version is read through project/schema-version.ts (trusted for a second, reset by every
 * schema change this process makes); RLS writes drop the catalog itself.
 */
interface Catalog {
  schemaVersion: number;
  /** Null: not loaded, or dropped. */
  tables: Map<string, TableInfo> | null;
}
const CATALOG = 'store.catalog';
const newCatalog = (): Catalog => ({ schemaVersion: -1, tables: null });

export const PROFILES = 'profiles';
/** Per catalog snapshot: the privileges it was loaded with. */
const GRANTS = new WeakMap<ReadonlyMap<string, TableInfo>, Grants>();

const RUNNER = 'store.runner';
const newRunner = (lease: ProjectLease): ((fn: () => void) => void) => lease.db.transaction((f: () => void) => f());
/**
 * Runs `fn` in one transaction; the better-sqlite3 wrapper is built once per open connection.
 * With `auth`, as that caller: a stored `default auth.uid()` (and a trigger body's) reads it (src/sql/caller.ts).
 */
export function inTransaction(lease: ProjectLease, fn: () => void, auth?: AuthContext): void {
  const run = lease.cache(RUNNER, newRunner);
  if (auth) lease.asCaller(new CallerOf(auth), () => run(fn));
  else run(fn);
}
const SQL_TYPE: Record<ColumnType, string> = {
  text: 'TEXT',
  int8: 'INTEGER',
  float8: 'REAL',
  bool: 'INTEGER',
  timestamptz: 'TEXT',
  jsonb: 'TEXT',
  uuid: 'TEXT',
  bytea: 'BLOB',
};
export const NOW_SQL = `(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;

/**
 * The columns of `t` an insert leaves out, as the proposed row's select items: each its stored
 * DEFAULT (evaluated now, so `default auth.uid()` is the writing caller's id, src/sql/caller.ts)
 * or NULL, as Postgres forms the row it checks against WITH CHECK.
 */
export function omittedColumns(lease: ProjectLease, t: string, given: readonly string[]): string[] {
  const cols = lease.db.pragma(`table_info(${quoteIdent(t)})`) as Array<{ name: string; dflt_value: string | null }>;
  return cols.filter((c) => !given.includes(c.name)).map((c) => `${c.dflt_value ?? 'NULL'} AS ${quoteIdent(c.name)}`);
}

export const catalogStore = {
  /** The catalog of the lease's project, reloaded when the schema changed. */
  tables(lease: ProjectLease, compile: (def: TableDef, rls: RlsState) => RlsState, fresh = false): Map<string, TableInfo> {
    const sv = schemaVersion(lease, fresh);
    const cached = lease.cache(CATALOG, newCatalog);
    if (cached.tables && cached.schemaVersion === sv) return cached.tables;
    const tables = new Map<string, TableInfo>();
    const rls = new Map<string, RlsRow>();
    for (const r of lease.stmt('SELECT tbl, enabled, policies, compiled, version, named FROM "_svc_meta.rls"').all() as RlsRow[]) {
      rls.set(r.tbl, r);
    }
    for (const r of lease.stmt('SELECT name, kind, def, created_at FROM "_svc_meta.tables" ORDER BY name').all() as CatalogRow[]) {
      const parsed = JSON.parse(r.def) as { columns: ColumnDef[]; indexes: IndexDef[]; key?: 'int8'; stamps?: false };
      const def: TableDef = { name: r.name, kind: r.kind, columns: parsed.columns, indexes: parsed.indexes, created_at: r.created_at };
      if (parsed.key === 'int8') def.key = 'int8';
      if (parsed.stamps === false) def.stamps = false;
      tables.set(r.name, info(def, loadRls(lease, def, rls.get(r.name), compile), false));
    }
    const profiles = profilesDef(lease);
    if (profiles) tables.set(PROFILES, info(profiles, loadRls(lease, profiles, rls.get(PROFILES), compile), true));
    const grants = loadGrants(lease);
    for (const [name, t] of tables) t.grants = grants.get(name);
    GRANTS.set(tables, grants);
    applyComments(lease, tables);
    // note: policies that call LANGUAGE sql functions are compiled against the functions as they are now; before
    // the parser has loaded (the first moments of a start) the stored form is used and the catalog is not kept.
    const withFns = [...tables.values()].some((t) => Object.values(t.rls.compiled).some((c) => c?.fns?.length));
    if (withFns && parserReady()) {
      const fns = readFunctions(lease.db);
      recompileFunctionPolicies(tables, (n) => fns.get(n) ?? null);
    }
    expandPolicies(tables);
    if (withFns && !parserReady()) return tables;
    cached.schemaVersion = sv;
    cached.tables = tables;
    return tables;
  },

  /** The recorded table privileges of every table (SQL-only ones too) as of this catalog snapshot (grants-store.ts). */
  grants(tables: ReadonlyMap<string, TableInfo>): Grants {
    return GRANTS.get(tables) ?? NO_GRANTS;
  },

  /** Forgets the cached catalog (after RLS writes, which do not change the schema version). */
  invalidate(lease: ProjectLease): void {
    lease.cache(CATALOG, newCatalog).tables = null;
    schemaChanged(lease);
  },

  /** Creates the table, its indexes and its catalog row in one transaction. */
  create(lease: ProjectLease, def: TableDef): void {
    lease.db.transaction(() => {
      lease.db.exec(createTableSql(def));
      def.indexes.forEach((ix, i) => lease.db.exec(createIndexSql(def, ix, i)));
      lease
        .stmt('INSERT INTO "_svc_meta.tables" (name, kind, def, created_at) VALUES (?, ?, ?, ?)')
        .run(def.name, def.kind, JSON.stringify({ columns: def.columns, indexes: def.indexes }), def.created_at);
    })();
    lease.cache(CATALOG, newCatalog).tables = null;
    schemaChanged(lease);
  },

  drop(lease: ProjectLease, name: string): void {
    lease.db.transaction(() => {
      lease.db.exec(`DROP TABLE ${quoteIdent(name)}`);
      lease.stmt('DELETE FROM "_svc_meta.tables" WHERE name = ?').run(name);
      lease.stmt('DELETE FROM "_svc_meta.rls" WHERE tbl = ?').run(name);
      lease.stmt(DROP_GRANTS).run(name);
    })();
    lease.cache(CATALOG, newCatalog).tables = null;
    schemaChanged(lease);
  },

  /**
   * The foreign keys among catalog tables, by the table they point at, read from SQLite
   * itself (so tables made by raw DDL count too); kept per catalog snapshot.
   */
  referencing(lease: ProjectLease, tables: ReadonlyMap<string, TableInfo>): ReadonlyMap<string, readonly ForeignKey[]> {
    let byParent = foreignKeys.get(tables);
    if (byParent) return byParent;
    byParent = new Map<string, ForeignKey[]>();
    for (const child of tables.keys()) {
      const rows = lease.db.pragma(`foreign_key_list(${quoteIdent(child)})`) as Array<{ table: string; from: string; to: string | null; on_delete: string }>;
      for (const r of rows) {
        const list = byParent.get(r.table) ?? [];
        list.push({ child, column: r.from, parentColumn: r.to ?? 'id', onDelete: r.on_delete.toLowerCase() });
        byParent.set(r.table, list);
      }
    }
    foreignKeys.set(tables, byParent);
    return byParent;
  },

  /** Whether a physical table (or view/index) of that name exists. */
  exists(lease: ProjectLease, name: string): boolean {
    return lease.stmt('SELECT 1 FROM sqlite_schema WHERE name = ? COLLATE NOCASE').get(name) !== undefined;
  },

  writeRls(lease: ProjectLease, table: string, enabled: boolean, policies: object, compiled: object, named: object, at: string): void {
    lease
      .stmt(
        `INSERT INTO "_svc_meta.rls" (tbl, enabled, policies, compiled, named, version, updated_at) VALUES (?, ?, ?, ?, ?, 1, ?)
         ON CONFLICT (tbl) DO UPDATE SET enabled = excluded.enabled, policies = excluded.policies,
           compiled = excluded.compiled, named = excluded.named, version = "_svc_meta.rls".version + 1, updated_at = excluded.updated_at`,
      )
      .run(table, enabled ? 1 : 0, JSON.stringify(policies), JSON.stringify(compiled), JSON.stringify(named), at);
    lease.cache(CATALOG, newCatalog).tables = null;
  },
};

/** `COMMENT ON` texts (raw SQL, `_svc_meta.comments`) onto the loaded definitions. */
function applyComments(lease: ProjectLease, tables: Map<string, TableInfo>): void {
  if (!catalogStore.exists(lease, '_svc_meta.comments')) return;
  for (const r of lease.stmt('SELECT tbl, col, comment FROM "_svc_meta.comments"').all() as Array<{ tbl: string; col: string; comment: string }>) {
    const t = tables.get(r.tbl);
    if (!t) continue;
    if (r.col === '') t.def.comment = r.comment;
    else {
      const c = t.def.columns.find((x) => x.name === r.col);
      if (c) c.comment = r.comment;
      else (t.def.systemComments ??= {})[r.col] = r.comment;
    }
  }
}

function info(def: TableDef, rls: RlsState, system: boolean): TableInfo {
  return { def, cols: new Map(def.columns.map((c) => [c.name, c])), rls, system, sql: new Map() };
}

function loadRls(
  lease: ProjectLease,
  def: TableDef,
  row: RlsRow | undefined,
  compile: (def: TableDef, rls: RlsState) => RlsState,
): RlsState {
  if (!row) return { enabled: false, policies: {}, compiled: {}, version: 0 };
  const state: RlsState = {
    enabled: row.enabled === 1,
    policies: JSON.parse(row.policies) as RlsState['policies'],
    compiled: row.compiled === null ? {} : (JSON.parse(row.compiled) as RlsState['compiled']),
    version: row.version,
    named: row.named === null ? null : (JSON.parse(row.named) as NamedPolicy[]),
  };
  if (row.compiled !== null) return state;
  // note: seeded policies (profiles) are compiled once on first load and stored.
  const done = compile(def, state);
  lease.stmt('UPDATE "_svc_meta.rls" SET compiled = ? WHERE tbl = ?').run(JSON.stringify(done.compiled), def.name);
  return done;
}

/** `profiles` as a relational table, from its real columns and the auth user-field types. */
function profilesDef(lease: ProjectLease): TableDef | null {
  const cols = lease.db.pragma(`table_info(${quoteIdent(PROFILES)})`) as PragmaCol[];
  if (cols.length === 0) return null;
  const fieldTypes = new Map<string, string>();
  if (catalogStore.exists(lease, '_svc_meta.auth_user_fields')) {
    for (const r of lease.stmt('SELECT name, type FROM "_svc_meta.auth_user_fields"').all() as { name: string; type: string }[]) {
      fieldTypes.set(r.name, r.type);
    }
  }
  const columns: ColumnDef[] = cols
    .filter((c) => !['id', 'created_at', 'updated_at'].includes(c.name))
    .map((c) => ({
      name: c.name,
      type: (fieldTypes.get(c.name) as ColumnType | undefined) ?? typeFromSql(c.type),
      nullable: c.notnull === 0,
      default: null,
      unique: false,
      references: null,
    }));
  return { name: PROFILES, kind: 'relational', columns, indexes: [], created_at: null };
}

function typeFromSql(t: string): ColumnType {
  const u = t.toUpperCase();
  if (u.includes('INT')) return 'int8';
  if (u.includes('REAL') || u.includes('FLOA') || u.includes('DOUB')) return 'float8';
  if (u.includes('BLOB')) return 'bytea';
  return 'text';
}

function createTableSql(def: TableDef): string {
  const t = quoteIdent(def.name);
  if (def.kind === 'document') {
    return `CREATE TABLE ${t} (
      "id" TEXT PRIMARY KEY NOT NULL,
      "data" TEXT NOT NULL CHECK (json_valid("data")),
      "created_at" TEXT NOT NULL,
      "updated_at" TEXT NOT NULL
    ) STRICT`;
  }
  const cols = def.columns.map(columnSql);
  return `CREATE TABLE ${t} (
    "id" TEXT PRIMARY KEY NOT NULL,
    ${cols.join(',\n    ')}${cols.length ? ',' : ''}
    "created_at" TEXT NOT NULL,
    "updated_at" TEXT NOT NULL
  ) STRICT`;
}

function columnSql(c: ColumnDef): string {
  const n = quoteIdent(c.name);
  let s = `${n} ${SQL_TYPE[c.type]}`;
  if (!c.nullable) s += ' NOT NULL';
  if (c.unique) s += ' UNIQUE';
  if (c.default !== null && c.default !== undefined) {
    s += ` DEFAULT ${c.type === 'timestamptz' && c.default === 'now()' ? NOW_SQL : defaultSql(toStored({ ...c, nullable: false }, c.default))}`;
  }
  if (c.type === 'bool') s += ` CHECK (${n} IN (0, 1))`;
  if (c.type === 'jsonb') s += ` CHECK (json_valid(${n}))`;
  if (c.references) {
    const r = c.references;
    s += ` REFERENCES ${quoteIdent(r.table)} (${quoteIdent(r.column)}) ON DELETE ${r.on_delete.toUpperCase()}`;
  }
  return s;
}

/** A validated default value (already in its stored form) as SQL text. */
function defaultSql(v: unknown): string {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error('non-finite default');
    return `(${String(v)})`;
  }
  if (Buffer.isBuffer(v)) return `X'${v.toString('hex')}'`;
  return quoteLiteral(String(v));
}

function createIndexSql(def: TableDef, ix: IndexDef, i: number): string {
  const exprs = ix.columns.map((c) => (def.kind === 'document' ? jsonField(c.split('.')) : quoteIdent(c)));
  // note: a trailing id lets `WHERE f = ? ORDER BY id` (the default list order) read the index in order, no sort.
  if (!ix.unique) exprs.push('"id"');
  const name = quoteIdent(`${def.name}.idx_${i}`);
  return `CREATE ${ix.unique ? 'UNIQUE ' : ''}INDEX ${name} ON ${quoteIdent(def.name)} (${exprs.join(', ')})`;
}

/** A foreign key of `child.column` to `parentColumn` of the table it is listed under. */
export interface ForeignKey {
  child: string;
  column: string;
  parentColumn: string;
  /** SQLite's action, lower case: `cascade`, `set null`, `restrict`, `no action`, `set default`. */
  onDelete: string;
}
const foreignKeys = new WeakMap<ReadonlyMap<string, TableInfo>, Map<string, ForeignKey[]>>();

/** The columns a rows-API insert binds, in order: id, the given columns, then the timestamps when `stamps`. */
export const relInsertColumns = (cols: readonly string[], stamps: boolean): string[] => (stamps ? ['id', ...cols, 'created_at', 'updated_at'] : ['id', ...cols]);

/** Row SQL for one table; statements are cached by the lease (ctx.project.stmt). */
export const rowSql = {
  /** The rows whose `column` is one of `n` values. */
  byColumn: (t: string, column: string, n: number) => `SELECT * FROM ${quoteIdent(t)} WHERE ${quoteIdent(column)} IN (${Array(n).fill('?').join(', ')})`,
  docInsert: (t: string) => `INSERT INTO ${quoteIdent(t)} ("id", "data", "created_at", "updated_at") VALUES (?, ?, ?, ?)`,
  /** Binds id (null: SQLite assigns an integer key), the columns, then created_at and updated_at when `stamps`. */
  relInsert: (t: string, cols: readonly string[], stamps = true) => {
    const names = relInsertColumns(cols, stamps);
    return `INSERT INTO ${quoteIdent(t)} (${names.map(quoteIdent).join(', ')}) VALUES (${Array(names.length).fill('?').join(', ')}) RETURNING *`;
  },
  /**
   * Whether a proposed row (the named columns bound in order, then the policy's values) passes a
   * policy, without writing it: the row is a one-row subquery under the table's name.
   */
  proposedPasses: (t: string, names: readonly string[], p: CompiledPolicy, omitted: readonly string[] = []) =>
    `SELECT 1 FROM (SELECT ${[...names.map((n) => `? AS ${quoteIdent(n)}`), ...omitted].join(', ')}) AS ${quoteIdent(t)} WHERE ${p.sql}`,
  /** The row by id, with `"rls.ok"` = the second policy (or 1) and filtered by the first (or none). */
  getWith: (t: string, visible: CompiledPolicy | null, check: CompiledPolicy | null) =>
    `SELECT *, ${check ? check.sql : '1'} AS "rls.ok" FROM ${quoteIdent(t)} WHERE "id" = ?${visible ? ` AND ${visible.sql}` : ''}`,
  get: (t: string) => `SELECT * FROM ${quoteIdent(t)} WHERE "id" = ?`,
  /** The named columns of the row by id (read in raw mode), filtered by the policy if any. */
  getColumns: (t: string, cols: readonly string[], p: CompiledPolicy | null) =>
    `SELECT ${cols.map(quoteIdent).join(', ')} FROM ${quoteIdent(t)} WHERE "id" = ?${p ? ` AND ${p.sql}` : ''}`,
  getVisible: (t: string, p: CompiledPolicy) => `SELECT * FROM ${quoteIdent(t)} WHERE "id" = ? AND ${p.sql}`,
  /**
   * Foreign keys checked at COMMIT for the rest of this transaction: a write under RLS checks its
   * policy first, so a 409 never tells a caller whether a row it may not write exists.
   */
  deferForeignKeys: 'PRAGMA defer_foreign_keys = ON',
  passes: (t: string, p: CompiledPolicy) => `SELECT 1 FROM ${quoteIdent(t)} WHERE "id" = ? AND ${p.sql}`,
  docUpdate: (t: string) =>
    `UPDATE ${quoteIdent(t)} SET "data" = json_patch("data", ?), "updated_at" = ? WHERE "id" = ? RETURNING *`,
  /** Binds the columns, then updated_at when `stamps`, then the id. */
  relUpdate: (t: string, cols: readonly string[], stamps = true) => {
    const names = stamps ? [...cols, 'updated_at'] : cols;
    // note: a stampless update of no column still needs a SET: id = id changes nothing.
    const set = names.length ? names.map((c) => `${quoteIdent(c)} = ?`).join(', ') : '"id" = "id"';
    return `UPDATE ${quoteIdent(t)} SET ${set} WHERE "id" = ? RETURNING *`;
  },
  delete: (t: string) => `DELETE FROM ${quoteIdent(t)} WHERE "id" = ?`,
};
