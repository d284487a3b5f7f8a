import { jsonValue } from '../../json-text.js';
import { v7 as uuidv7 } from 'uuid';
import { EdgeError, invalidField, notFound } from '../../core/errors.js';
import type { AuthContext } from '../../core/auth-context.js';
import { appendChange, publishChanges, storedImage, type Change } from '../../events/change-log.js';
import type { EventBus } from '../../events/bus.js';
import type { ProjectLease } from '../../project/registry.js';
import { buildGroupedList, buildList } from './list-query.js';
import { bindPolicy, compilePolicy } from '../../sql/rls.js';
import { usePolicy } from '../../sql/policy-expand.js';
import { compileSet, namedFromJson, namedOf } from '../../sql/policy-set.js';
import { parseListQuery } from './filters.js';
import { catalogStore, inTransaction, omittedColumns, relInsertColumns, rowSql } from './store.js';
import { parseTableBody, validTableName } from './table-def.js';
import { POLICY_OPS, stampColumns, type ColumnDef, type CompiledPolicy, type NamedPolicy, type PolicyOp, type RlsState, type TableDef, type TableInfo } from '../../sql/table-model.js';
import { checkStrings, fromStored } from './column-values.js';
import { dataOf, relationalValues, rlsDenied } from './values.js';
import { schemaGraph, tableView } from './views.js';
import { writeRows } from './violation.js';
import { DELETE, INSERT, requirePrivilege, SELECT, UPDATE } from '../../sql/grants.js';
import { schemaVersion } from '../../project/schema-version.js';
import type { StoredView } from '../../sql/pg/views.js';
import type { ViewRows } from './view-rows.js';
import { readViews, viewCreatedAt } from './view-store.js';
import { viewIsReadOnly, viewListing, withViews } from './view-listing.js';
import { rowAfterTriggers, storedFunctions, triggerFilledColumns } from '../../sql/pg/triggers.js';
import type { FunctionLookup } from '../../sql/pg/sql-functions.js';

export interface Row {
  /** A string, or a number for a table with an integer key (TableDef.key). */
  id: string | number;
  data: Record<string, unknown>;
  /** Absent for a table without timestamps (TableDef.stamps). */
  created_at?: string;
  updated_at?: string;
}

type Raw = Record<string, unknown>;
/** A row changed by a foreign-key action of a delete. */
export interface Cascaded {
  op: 'delete' | 'update';
  table: string;
  id: string;
  data: Record<string, unknown> | null;
  old: Record<string, unknown>;
  /** The whole row after (null for a delete) and before, as stored (change-log.ts `storedImage`). */
  newRow: string | null;
  oldRow: string;
}
interface Bound {
  p: CompiledPolicy;
  values: unknown[];
}

/** A missing policy on an RLS-enabled table denies (DESIGN: "no policy → denied"). */
const DENY: CompiledPolicy = { sql: '(0)', params: [] };
const now = (): string => new Date().toISOString();
const OP_BITS: Record<PolicyOp, number> = { select: SELECT, insert: INSERT, update: UPDATE, delete: DELETE };
const ROW_META = new Set(['id', 'created_at', 'updated_at', 'rls.ok']);
const TEXT: ColumnDef = { name: '', type: 'text', nullable: true, default: null, unique: false, references: null };

/** The database service: tables, rows, RLS, schema graph (no HTTP here). */
export class DbService {
  readonly #bus: EventBus;

  constructor(bus: EventBus) {
    this.#bus = bus;
  }

  tables(lease: ProjectLease, fresh = false): Map<string, TableInfo> {
    return catalogStore.tables(lease, compileAll, fresh);
  }

  /** The stored LANGUAGE sql functions policies may call (docs/sql.md "Functions in policies"). */
  functions(lease: ProjectLease): FunctionLookup {
    const fns = storedFunctions(lease, schemaVersion(lease, true));
    return (n) => fns.get(n) ?? null;
  }

  /** Reads of views (rows API, GraphQL) run through the SQL service (view-rows.ts); server.ts sets it. */
  views: ViewRows | null = null;

  /** The view of that name (made by CREATE VIEW, docs/sql.md "Views"), or null. */
  view(lease: ProjectLease, name: string): StoredView | null {
    return readViews(lease, schemaVersion(lease)).get(name) ?? null;
  }

  viewList(lease: ProjectLease): StoredView[] {
    return [...readViews(lease, schemaVersion(lease)).values()];
  }

  /** A view's reader, for a name that is not a table (checked by the caller first: the tables' reads pay nothing more). */
  #viewReader(lease: ProjectLease, name: string): { view: StoredView; rows: ViewRows } | null {
    const view = this.view(lease, name);
    return view && this.views ? { view, rows: this.views } : null;
  }

  /** The table by name: 400 for a name that cannot be a table, 404 for an unknown one. */
  table(lease: ProjectLease, name: string, fresh = false): TableInfo {
    if (!validTableName(name)) throw new EdgeError('invalid_request', 'invalid table name');
    const t = this.tables(lease, fresh).get(name) ?? (fresh ? undefined : this.tables(lease, true).get(name));
    if (!t && this.view(lease, name)) throw viewIsReadOnly(name);
    if (!t) throw notFound('table', name);
    return t;
  }

  /**
   * Runs `fn` with the table; when it fails on a platform table whose columns may have
   * changed underneath the cached catalog (profiles), retries once with a fresh catalog.
   */
  #with<R>(lease: ProjectLease, name: string, fn: (t: TableInfo) => R): R {
    const t = this.table(lease, name);
    if (!t.system) return fn(t);
    try {
      return fn(t);
    } catch (err) {
      if (!(err instanceof EdgeError) || (err.code !== 'invalid_request' && err.code !== 'invalid_field')) throw err;
      const again = this.table(lease, name, true);
      if (again === t) throw err;
      return fn(again);
    }
  }

  listTables(lease: ProjectLease): { tables: unknown[] } {
    const tables = [...this.tables(lease, true).values()].map(tableView);
    return { tables: [...tables, ...this.viewList(lease).map((v) => viewListing(v, viewCreatedAt(lease, schemaVersion(lease), v.name)))] };
  }

  schema(lease: ProjectLease): unknown {
    return withViews(schemaGraph([...this.tables(lease, true).values()]), this.viewList(lease));
  }

  createTable(lease: ProjectLease, body: Record<string, unknown>): unknown {
    const tables = this.tables(lease, true);
    const def = parseTableBody(body, (n) => tables.get(n), now());
    if (tables.has(def.name) || catalogStore.exists(lease, def.name)) throw new EdgeError('conflict', `table "${def.name}" already exists`);
    catalogStore.create(lease, def);
    return tableView(this.table(lease, def.name));
  }

  dropTable(lease: ProjectLease, name: string): void {
    const t = this.table(lease, name, true);
    if (t.system) throw new EdgeError('forbidden', `"${name}" is a platform table and cannot be dropped`);
    const over = this.viewList(lease).find((v) => v.deps.includes(name));
    if (over) throw new EdgeError('conflict', `view "${over.name}" reads "${name}"; drop it first (DROP VIEW, or DROP TABLE … CASCADE through /db/query)`);
    for (const other of this.tables(lease, true).values()) {
      if (other.def.name !== name && other.def.columns.some((c) => c.references?.table === name)) {
        throw new EdgeError('conflict', `table "${other.def.name}" references "${name}"; drop it first`);
      }
    }
    catalogStore.drop(lease, name);
  }

  getRls(lease: ProjectLease, name: string): unknown {
    const t = this.table(lease, name);
    return rlsView(name, t.rls.enabled, t.rls.policies, namedOf(t.rls));
  }

  /**
   * Replaces a table's policies: `policies` (one per operation, kept as rls_<op>) and/or `named`
   * (policies as CREATE POLICY makes them). Compiles every policy now; a policy that does not
   * translate is a 400 and nothing is stored (docs/api.md "Row-level security").
   */
  putRls(lease: ProjectLease, name: string, body: Record<string, unknown>): unknown {
    const t = this.table(lease, name, true);
    const { enabled, policies = {}, named = [] } = body;
    if (typeof enabled !== 'boolean') throw invalidField('enabled', 'must be a boolean');
    if (policies === null || typeof policies !== 'object' || Array.isArray(policies)) throw invalidField('policies', 'must be an object');
    if (!Array.isArray(named)) throw invalidField('named', 'must be a list of policies');
    const src: RlsState['policies'] = {};
    for (const [op, expr] of Object.entries(policies)) {
      if (!(POLICY_OPS as readonly string[]).includes(op)) throw invalidField(`policies.${op}`, 'must be select, insert, update or delete');
      if (expr === null) continue;
      if (typeof expr !== 'string') throw invalidField(`policies.${op}`, 'must be a SQL expression string');
      src[op as PolicyOp] = expr;
    }
    const list = [...namedOf({ named: null, policies: src }), ...named.map((v, i) => namedFromJson(v, i))];
    const tables = this.tables(lease, true);
    let set: ReturnType<typeof compileSet>;
    try {
      set = compileSet(list, t.def, (n) => tables.get(n)?.def ?? null, this.functions(lease));
    } catch (err) {
      // note: a `policies.<op>` expression keeps the message it always had.
      const m = err instanceof EdgeError ? /^policy "rls_(select|insert|update|delete)" \([a-z ]+\): /.exec(err.message) : null;
      if (m && err instanceof EdgeError) throw new EdgeError(err.code, `policies.${m[1]}: ${err.message.slice(m[0].length)}`, err.details ? { details: err.details } : undefined);
      throw err;
    }
    catalogStore.writeRls(lease, name, enabled, set.policies, set.compiled, list, now());
    return rlsView(name, enabled, set.policies, list);
  }

  /** The list envelope as JSON text (document rows are spliced from their stored JSON, never re-parsed). */
  list(lease: ProjectLease, auth: AuthContext, name: string, query: URLSearchParams): string | Promise<string> {
    const v = this.tables(lease).has(name) ? null : this.#viewReader(lease, name);
    if (v) return v.rows.list(lease, auth, v.view, query);
    const q = parseListQuery(query);
    return this.#with(lease, name, (t) => {
      const sql = buildList(t, q, policy(t, 'select', auth));
      const raws = lease.stmt(sql.sql).all(...sql.params) as Raw[];
      const more = raws.length > q.limit;
      if (more) raws.pop();
      const rows = raws.map((r) => rowJson(t, r, sql.columns)).join(',');
      const next = more && q.limit > 0 ? q.offset + q.limit : null;
      let out = `{"rows":[${rows}],"limit":${q.limit},"offset":${q.offset},"next_offset":${next}`;
      if (sql.countSql) out += `,"total":${(lease.stmt(sql.countSql).get(...sql.countParams) as { n: number }).n}`;
      return `${out}}`;
    });
  }

  /**
   * The rows of `name` whose `column` is one of `keys` (GraphQL's reverse relations), in one
   * statement: filtered, ordered, limited and offset per key as `query` says (the list
   * parameters), under the caller's select policy; at most `cap` rows overall.
   */
  listByKeys(lease: ProjectLease, auth: AuthContext, name: string, column: string, keys: readonly (string | number)[], query: URLSearchParams, cap: number): Row[] {
    const q = parseListQuery(query);
    return this.#with(lease, name, (t) => {
      if (!t.cols.has(column)) throw new EdgeError('invalid_request', `unknown column "${column}"`);
      if (keys.length === 0 || q.limit === 0) return [];
      const sql = buildGroupedList(t, q, column, keys, policy(t, 'select', auth), cap);
      return (lease.stmt(sql.sql).all(...sql.params) as Raw[]).map((r) => toRow(t, r, sql.columns));
    });
  }

  /** One row as JSON text. */
  get(lease: ProjectLease, auth: AuthContext, name: string, id: string): string | Promise<string> {
    const found = this.tables(lease).get(name);
    const v = found ? null : this.#viewReader(lease, name);
    if (v) return v.rows.get(lease, auth, v.view, id);
    const t = found ?? this.table(lease, name);
    id = keyOf(t, id);
    const sel = policy(t, 'select', auth);
    if (!t.system) {
      // note: the hot read: explicit columns in raw mode (arrays), serialised straight to JSON text.
      const stmt = lease.stmt(sqlOf(t, sel ? 'getRaw.visible' : 'getRaw', () => rowSql.getColumns(name, storedColumns(t), sel ? sel.p : null)), true);
      const a = (sel ? stmt.get(id, ...sel.values) : stmt.get(id)) as unknown[] | undefined;
      if (!a) throw notFound('row', id);
      return rawRowJson(t, a);
    }
    const r = (sel
      ? lease.stmt(sqlOf(t, 'getVisible', () => rowSql.getVisible(name, sel.p))).get(id, ...sel.values)
      : lease.stmt(sqlOf(t, 'get', () => rowSql.get(name))).get(id)) as Raw | undefined;
    if (!r) throw notFound('row', id);
    return rowJson(t, r, null);
  }

  /** Inserts one row; answers the row as JSON text. */
  insert(lease: ProjectLease, auth: AuthContext, name: string, body: unknown): string {
    return this.#with(lease, name, (t) => {
      let out!: { json: string; change: Change };
      inTransaction(lease, () => (out = this.#insertRow(lease, auth, t, name, body)), auth);
      publishChanges(this.#bus, lease, [out.change]);
      return out.json;
    });
  }

  /**
   * Inserts rows in one transaction (all or none), each exactly as `insert` would (checks, RLS
   * insert policy, change events after the commit); answers how many. A row that fails names its
   * index in `details.index`.
   */
  insertMany(lease: ProjectLease, auth: AuthContext, name: string, bodies: readonly unknown[]): number {
    return this.#with(lease, name, (t) => {
      const changes: Change[] = [];
      inTransaction(lease, () => {
        for (let i = 0; i < bodies.length; i++) {
          try {
            changes.push(this.#insertRow(lease, auth, t, name, bodies[i]).change);
          } catch (err) {
            if (!(err instanceof EdgeError) || err.status >= 500) throw err;
            throw new EdgeError(err.code, err.message, { details: { ...err.details, index: i }, headers: err.headers, cause: err.cause });
          }
        }
      }, auth);
      publishChanges(this.#bus, lease, changes);
      return changes.length;
    });
  }

  /** One insert, inside the caller's transaction. */
  #insertRow(lease: ProjectLease, auth: AuthContext, t: TableInfo, name: string, body: unknown): { json: string; change: Change } {
    const data = dataOf(body);
    const rel = t.def.kind === 'relational' ? relationalValues(t, data, true, triggerFilledColumns(lease, name)) : null;
    if (!rel) checkStrings(data, 'data');
    const ins = policy(t, 'insert', auth);
    // note: null lets SQLite assign an integer key (RETURNING reads it back).
    let id: string | number | null = t.def.key === 'int8' ? null : uuidv7();
    const at = now();
    const stamps = t.def.stamps !== false;
    // note: the values of the timestamp columns the table has (none without the pair).
    const stampVals = stamps ? [at, at] : [];
    let row: Row;
    let text: string | undefined;
    let image: string;
    // note: under RLS the policy is checked before foreign keys (they are checked at commit).
    if (ins) lease.stmt(rowSql.deferForeignKeys).run();
    if (rel) {
      const params = [id, ...rel.vals, ...stampVals];
      const r = policyFirst(lease, name, ins, relInsertColumns(rel.cols, stamps), params, () =>
        writeRows<Raw>(lease, t, rowSql.relInsert(name, rel.cols, stamps), params),
      );
      // note: an SQL trigger may skip the row (RETURN NULL) or change it after RETURNING (src/sql/pg/triggers.ts).
      if (!r[0]) throw new EdgeError('invalid_request', 'a BEFORE INSERT trigger skipped the row (RETURN NULL): nothing was inserted');
      const stored = rowAfterTriggers(lease, name, r[0]);
      row = toRow(t, stored, null);
      id = row.id;
      image = storedImage(stored);
    } else {
      text = JSON.stringify(data);
      const doc = text;
      policyFirst(lease, name, ins, ['id', 'data', 'created_at', 'updated_at'], [id, doc, at, at], () => lease.stmt(sqlOf(t, 'docInsert', () => rowSql.docInsert(name))).run(id, doc, at, at));
      row = { id: id!, data, created_at: at, updated_at: at };
      // note: the stored document row is exactly its wire form.
      image = docJson(id, text, at, at);
    }
    if (ins && !lease.stmt(sqlOf(t, 'passes.insert', () => rowSql.passes(name, ins.p))).get(id, ...ins.values)) throw rlsDenied('insert');
    const change = appendChange(lease, 'insert', name, String(id), row.data, null, at, { newRow: image, oldRow: null }, text);
    return { json: text === undefined ? JSON.stringify(row) : docJson(id, text, at, at), change };
  }

  /** Merges `data` into the row; answers the new row as JSON text. */
  update(lease: ProjectLease, auth: AuthContext, name: string, id: string, body: unknown): string {
    return this.#with(lease, name, (t) => {
      id = keyOf(t, id);
      const data = dataOf(body);
      const rel = t.def.kind === 'relational' ? relationalValues(t, data, false, triggerFilledColumns(lease, name)) : null;
      if (!rel) checkStrings(data, 'data');
      const upd = policy(t, 'update', auth);
      const at = now();
      let raw!: Raw;
      let row!: Row;
      let change!: Change;
      inTransaction(lease, () => {
        const { row: old, raw: oldRaw } = this.#visible(lease, t, id, auth, upd, 'update');
        if (upd) lease.stmt(rowSql.deferForeignKeys).run();
        const stamps = t.def.stamps !== false;
        const r = (rel
          ? writeRows(lease, t, rowSql.relUpdate(name, rel.cols, stamps), [...rel.vals, ...(stamps ? [at] : []), id])
          : lease.stmt(sqlOf(t, 'docUpdate', () => rowSql.docUpdate(name))).all(JSON.stringify(data), at, id)) as Raw[];
        if (!r[0]) throw new EdgeError('invalid_request', 'a BEFORE UPDATE trigger skipped the row (RETURN NULL): nothing was updated');
        raw = rowAfterTriggers(lease, name, r[0]);
        row = toRow(t, raw, null);
        const after = updateCheck(t, upd, auth);
        if (after && !lease.stmt(sqlOf(t, 'passes.update', () => rowSql.passes(name, after.p))).get(id, ...after.values)) throw rlsDenied('update');
        const images = { newRow: imageOf(t, raw), oldRow: imageOf(t, oldRaw) };
        change = appendChange(lease, 'update', name, id, row.data, old.data, at, images, rel ? undefined : (raw.data as string));
      }, auth);
      publishChanges(this.#bus, lease, [change]);
      return rel ? JSON.stringify(row) : rowJson(t, raw, null);
    });
  }

  delete(lease: ProjectLease, auth: AuthContext, name: string, id: string): void {
    const t = this.table(lease, name);
    id = keyOf(t, id);
    const del = policy(t, 'delete', auth);
    const at = now();
    const changes: Change[] = [];
    inTransaction(lease, () => {
      const { row: old, raw: oldRaw } = this.#visible(lease, t, id, auth, del, 'delete');
      const cascaded = this.cascade(lease, name, id);
      lease.stmt(sqlOf(t, 'delete', () => rowSql.delete(name))).run(id);
      changes.push(appendChange(lease, 'delete', name, id, null, old.data, at, { newRow: null, oldRow: imageOf(t, oldRaw) }));
      for (const c of cascaded) changes.push(appendChange(lease, c.op, c.table, c.id, c.data, c.old, at, c));
    }, auth);
    publishChanges(this.#bus, lease, changes);
  }

  /**
   * The rows a delete of `name`/`id` changes through foreign keys (ON DELETE CASCADE deletes,
   * SET NULL updates, following cascades down), read before the delete so each becomes a change
   * event like a direct write. As in Postgres, these actions do not consult RLS. Call it inside
   * the deleting transaction (the auth service does, for a user's `profiles` row).
   */
  cascade(lease: ProjectLease, name: string, id: string): Cascaded[] {
    const tables = this.tables(lease);
    const fks = catalogStore.referencing(lease, tables);
    if (!fks.has(name)) return [];
    const out: Cascaded[] = [];
    const seen = new Set<string>([`${name}\0${id}`]);
    const parents = lease.stmt(rowSql.get(name)).all(id) as Raw[];
    const walk = (parent: string, rows: Raw[]): void => {
      for (const fk of fks.get(parent) ?? []) {
        if (fk.onDelete !== 'cascade' && fk.onDelete !== 'set null') continue;
        const child = tables.get(fk.child);
        if (!child) continue;
        const keys = rows.map((r) => r[fk.parentColumn]).filter((v) => v !== null && v !== undefined);
        const found: Raw[] = [];
        for (let i = 0; i < keys.length; i += 500) {
          const chunk = keys.slice(i, i + 500);
          for (const r of lease.stmt(rowSql.byColumn(fk.child, fk.column, chunk.length)).all(...chunk) as Raw[]) {
            const key = `${fk.child}\0${String(r.id)}`;
            if (seen.has(key)) continue;
            seen.add(key);
            found.push(r);
          }
        }
        for (const r of found) {
          const old = toRow(child, r, null);
          const oldRow = imageOf(child, r);
          // note: change events name a row's id as a string, an integer key in decimal (docs/api.md "Change events").
          if (fk.onDelete === 'cascade') out.push({ op: 'delete', table: fk.child, id: String(old.id), data: null, old: old.data, newRow: null, oldRow });
          else {
            const newRow = imageOf(child, { ...r, [fk.column]: null });
            out.push({ op: 'update', table: fk.child, id: String(old.id), data: { ...old.data, [fk.column]: null }, old: old.data, newRow, oldRow });
          }
        }
        if (fk.onDelete === 'cascade' && found.length) walk(fk.child, found);
      }
    };
    walk(name, parents);
    return out;
  }

  /** The current row for a write: 404 when absent or hidden by the select policy, 403 when the op's policy rejects it. */
  #visible(lease: ProjectLease, t: TableInfo, id: string, auth: AuthContext, op: Bound | null, what: string): { row: Row; raw: Raw } {
    const sel = policy(t, 'select', auth);
    const name = t.def.name;
    if (!sel || !op) {
      const r = lease.stmt(sqlOf(t, 'get', () => rowSql.get(name))).get(id) as Raw | undefined;
      if (!r) throw notFound('row', id);
      return { row: toRow(t, r, null), raw: r };
    }
    const r = lease.stmt(sqlOf(t, `getWith.${what}`, () => rowSql.getWith(name, sel.p, op.p))).get(...op.values, id, ...sel.values) as Raw | undefined;
    if (!r) throw notFound('row', id);
    if (!r['rls.ok']) throw rlsDenied(what);
    return { row: toRow(t, r, null), raw: r };
  }
}

/**
 * A row id from a path, as the table keys it: for an integer key (TableDef.key) the
 * canonical decimal form, and a 404 for anything that is not an integer (`05` is `5`).
 */
function keyOf(t: TableInfo, id: string): string {
  if (t.def.key !== 'int8') return id;
  if (!/^-?\d{1,19}$/.test(id)) throw notFound('row', id);
  return BigInt(id).toString();
}

/** Row SQL of a table, built once (the same string object also keeps the statement-cache lookup cheap). */
function sqlOf(t: TableInfo, key: string, build: () => string): string {
  let sql = t.sql.get(key);
  if (sql === undefined) t.sql.set(key, (sql = build()));
  return sql;
}

/**
 * The caller's compiled policy for an op with its bound values; null when RLS does not apply.
 * Every rows-API access asks for its operations' policies here first (update and delete also
 * `select`, to find the row), so this is also where the table's privileges are checked: a
 * missing one is Postgres' 403 (docs/sql.md "Privileges: GRANT and REVOKE").
 */
function policy(t: TableInfo, op: PolicyOp, auth: AuthContext): Bound | null {
  if (t.grants !== undefined) requirePrivilege(t.grants, auth, t.def.name, OP_BITS[op]);
  if (!t.rls.enabled || auth.role === 'service_role') return null;
  const p = usePolicy(t.rls.compiled[op] ?? DENY);
  return { p, values: p.params.length ? bindPolicy(p.params, auth) : [] };
}

/** The new row of an update: the update policies' WITH CHECK when one differs from their USING. */
function updateCheck(t: TableInfo, upd: Bound | null, auth: AuthContext): Bound | null {
  const c = t.rls.compiled.update_check;
  if (!upd || !c) return upd;
  const p = usePolicy(c);
  return { p, values: p.params.length ? bindPolicy(p.params, auth) : [] };
}

/** `GET`/`PUT …/rls`: the combined expression per operation, and the named policies. */
function rlsView(table: string, enabled: boolean, policies: RlsState['policies'], named: NamedPolicy[]): unknown {
  return { table, enabled, policies, named: named.map((p) => ({ name: p.name, command: p.command, permissive: p.permissive, roles: p.roles.length ? p.roles : ['public'], using: p.using, check: p.check })) };
}

/** Compiles stored policy sources (seeded defaults); one that no longer translates denies. */
function compileAll(def: TableDef, state: RlsState): RlsState {
  const compiled: RlsState['compiled'] = {};
  for (const op of POLICY_OPS) {
    const src = state.policies[op];
    if (src === undefined) continue;
    try {
      compiled[op] = compilePolicy(src, def);
    } catch {
      // note: left out, so the op is denied rather than open.
    }
  }
  return { ...state, compiled };
}

/** A stored row (every column, as `SELECT *` reads it) → its change-log image. */
function imageOf(t: TableInfo, r: Raw): string {
  return storedImage(r, t.def.kind === 'document' ? 'data' : null, IMAGE_SKIP);
}
const IMAGE_SKIP: ReadonlySet<string> = new Set(['rls.ok']);

/** A stored row → wire JSON text; a document's stored `data` text is spliced as is (it is valid JSON by CHECK). */
function rowJson(t: TableInfo, r: Raw, columns: string[] | null): string {
  if (t.def.kind !== 'document') return JSON.stringify(toRow(t, r, columns));
  return docJson(r.id, r.data as string, r.created_at, r.updated_at);
}

const docJson = (id: unknown, data: string, created: unknown, updated: unknown): string =>
  `{"id":${jsonValue(id)},"data":${data},"created_at":${jsonValue(created)},"updated_at":${jsonValue(updated)}}`;

/** The stored columns in the order `rawRowJson` reads them: id, data or the table's columns, the timestamps (if any). */
function storedColumns(t: TableInfo): readonly string[] {
  return t.def.kind === 'document' ? DOC_COLUMNS : ['id', ...t.def.columns.map((c) => c.name), ...stampColumns(t.def)];
}
const DOC_COLUMNS = ['id', 'data', 'created_at', 'updated_at'];

/** A row read in raw mode (columns of `storedColumns`) → wire JSON text, without building the row object. */
function rawRowJson(t: TableInfo, a: unknown[]): string {
  if (t.def.kind === 'document') return docJson(a[0], a[1] as string, a[2], a[3]);
  const cols = t.def.columns;
  const keys = jsonKeys(t);
  let out = `{"id":${jsonValue(a[0])},"data":{`;
  for (let i = 0; i < cols.length; i++) out += keys[i]! + jsonValue(fromStored(cols[i]!, a[i + 1]));
  const n = cols.length;
  if (t.def.stamps === false) return `${out}}}`;
  return `${out}},"created_at":${jsonValue(a[n + 1])},"updated_at":${jsonValue(a[n + 2])}}`;
}

/** Per table, each data column's `"name":` (with its leading comma after the first), made once. */
const JSON_KEYS = new WeakMap<TableInfo, string[]>();
function jsonKeys(t: TableInfo): string[] {
  let keys = JSON_KEYS.get(t);
  if (keys === undefined) JSON_KEYS.set(t, (keys = t.def.columns.map((c, i) => `${i ? ',' : ''}${JSON.stringify(c.name)}:`)));
  return keys;
}

/** A stored row → the wire row `{id, data, created_at, updated_at}`. */
function toRow(t: TableInfo, r: Raw, columns: string[] | null): Row {
  let data: Record<string, unknown>;
  if (t.def.kind === 'document') data = JSON.parse(r.data as string) as Record<string, unknown>;
  else {
    data = {};
    if (columns) for (const n of columns) data[n] = fromStored(t.cols.get(n)!, r[n]);
    else if (t.system) {
      // note: platform tables (profiles) may have gained columns since the catalog was read.
      for (const k in r) if (!ROW_META.has(k)) data[k] = fromStored(t.cols.get(k) ?? TEXT, r[k]);
    } else for (const c of t.def.columns) data[c.name] = fromStored(c, r[c.name]);
  }
  if (t.def.stamps === false) return { id: r.id as string | number, data };
  return { id: r.id as string | number, data, created_at: r.created_at as string, updated_at: r.updated_at as string };
}

/** Errors Postgres reports only after WITH CHECK: a unique key (409), NOT NULL (23502) and CHECK (23514) constraints. */
const policyFirstErrors = (err: EdgeError): boolean => err.code === 'conflict' || (err.code === 'invalid_field' && (err.details?.sqlstate === '23502' || err.details?.sqlstate === '23514'));

/**
 * Runs an insert under the caller's insert policy `ins` (null: no RLS). When a unique key, NOT
 * NULL or CHECK refuses the row, the policy is asked first about the proposed row (the columns
 * given, the others' defaults), as Postgres checks WITH CHECK before them: a row the policy
 * refuses is 403 `rls_denied`, never a 409 naming a key another user's row holds, nor anon's
 * 23502 for a `default auth.uid()` that is NULL (docs/api.md "Row-level security").
 */
function policyFirst<R>(lease: ProjectLease, name: string, ins: { p: CompiledPolicy; values: unknown[] } | null, names: readonly string[], params: readonly unknown[], write: () => R): R {
  try {
    return write();
  } catch (err) {
    if (ins === null || !(err instanceof EdgeError) || !policyFirstErrors(err)) throw err;
    let passes = false;
    try {
      passes = lease.db.prepare(rowSql.proposedPasses(name, names, ins.p, omittedColumns(lease, name, names))).get(...params, ...ins.values) !== undefined;
    } catch {
      // note: a policy that cannot be asked of the proposed row (it names a column it does not have) refuses.
    }
    if (!passes) throw rlsDenied('insert');
    throw err;
  }
}
