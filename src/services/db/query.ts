import type Database from 'better-sqlite3';
import { join } from 'node:path';
import { EdgeError, invalidField, normalize } from '../../core/errors.js';
import type { AuthContext } from '../../core/auth-context.js';
import type { EventBus } from '../../events/bus.js';
import type { ProjectLease } from '../../project/registry.js';
import { quoteIdent } from '../../project/schemas.js';
import { bind, bindPlain, cachedTranslation, translateAsync, type TableSource, type Translation } from '../../sql/pg/translate.js';
import type { Statement } from '../../sql/pg/statements.js';
import { AUTH_USERS } from '../../sql/pg/reserved.js';
import { isIntrospectionView, readIntrospection } from '../../sql/pg/introspect.js';
import { fromCatalogType, typeOfDecl, type ColumnType, type PgType, type SchemaLookup } from '../../sql/pg/types.js';
import { budget, type Admission, type SqlPool } from '../../sql/worker/pool.js';
import type { WorkerChange, WorkerJob, WorkerResult } from '../../sql/worker/worker-main.js';
import { APPEND_CHANGE, CLEAR_CHANGES, READ_CHANGES, trackSetup, trackedOf } from '../../sql/pg/changes.js';
import { assigningTables, routineSteps, storedFunctions, triggerWrites } from '../../sql/pg/triggers.js';
import { functionPolicies } from '../../sql/policy-functions.js';
import { catchUpChanges, expectChanges, publishChanges } from '../../events/change-log.js';
import { Lru } from '../../sql/pg/lru.js';
import { DbService } from './db.js';
import { schemaVersion } from '../../project/schema-version.js';
import { catalogStore } from './store.js';
import { readViews } from './view-store.js';
import { introspectedViews } from '../../sql/pg/views.js';
import type { TableInfo } from '../../sql/table-model.js';
import { bindPolicy } from '../../sql/rls.js';
import { policyWrites } from './policy-writes.js';
import { usePolicy } from '../../sql/policy-expand.js';
import { pgError } from '../../sql/pg/violations.js';
import { requirePrivileges } from '../../sql/grants.js';
import { enumOfDecl } from '../../sql/pg/types-ddl.js';
import { CallerOf, plainCaller } from '../../sql/caller.js';
import { readEnum } from './enum-store.js';
import { shape, shapeText, type QueryResult } from './query-shape.js';

export type { QueryResult } from './query-shape.js';

const PARSE_TIMEOUT_MS = 3000;
/** Rows one statement may return through /db/query (page with LIMIT/OFFSET beyond). */
export const MAX_ROWS = 10_000;
/**
 * About how many bytes of JSON the results of one request may make (a JSON-RPC batch's
 * db.query calls together): the worker counts while it reads and stops past it, so the main
 * thread never copies or serialises more.
 */
export const MAX_RESULT_BYTES = 8 * 1024 * 1024;
const MAX_PARAMS = 1000;
/** A character String.prototype.trim would keep (`\s` is the same whitespace set), tested without the trimmed copy. */
const NON_BLANK = /\S/;

interface SchemaCache {
  version: number;
  tables: Map<string, ColumnType[] | null>;
}
/** Per open connection (`lease.cache`): table columns at one schema version. */
const SCHEMAS = 'query.schemas';
const newSchemas = (): SchemaCache => ({ version: Number.NaN, tables: new Map() });

/**
 * Raw Postgres-style SQL for `POST /db/query` (and `db.query` over JSON-RPC): translated
 * on the main thread (cached), run in the SQL worker pool. The service role runs
 * anything; other callers run read-only SELECTs in which every table is its
 * RLS-filtered form, as the rows API would show it (docs/sql.md).
 */
export class QueryService {
  readonly #db: DbService;

  readonly #bus: EventBus;

  constructor(
    readonly pool: SqlPool,
    readonly dataDir: string,
    bus: EventBus,
    /** The SQL time limit of one request (config `sqlTimeoutMs`); `timeout_ms` may only lower it. */
    readonly timeoutMs: number,
  ) {
    this.#bus = bus;
    this.#db = new DbService(bus);
    bus.on('project.deleted', (e) => pool.forget(this.#file(e.projectId)));
  }

  #file(projectId: string): string {
    return join(this.dataDir, 'projects', projectId, 'project.db');
  }

  /** The time budget of a request that starts now: `timeout_ms`, or the server's limit. */
  budget(projectId: string, timeoutMs = this.timeoutMs): Admission {
    return budget(projectId, timeoutMs, MAX_RESULT_BYTES);
  }

  /** Validates a `{sql, params?, timeout_ms?}` body. */
  parseBody(body: unknown): { sql: string; params: unknown[]; timeoutMs: number } {
    const b = body as Record<string, unknown>;
    for (const k in b) if (k !== 'sql' && k !== 'params' && k !== 'timeout_ms') throw invalidField(k, 'unknown field');
    if (typeof b.sql !== 'string' || !NON_BLANK.test(b.sql)) throw invalidField('sql', 'must be a non-empty string');
    const params = b.params ?? [];
    if (!Array.isArray(params) || params.length > MAX_PARAMS) throw invalidField('params', `must be an array of at most ${MAX_PARAMS} values`);
    let timeoutMs = this.timeoutMs;
    if (b.timeout_ms !== undefined) {
      if (typeof b.timeout_ms !== 'number' || !Number.isInteger(b.timeout_ms) || b.timeout_ms < 1 || b.timeout_ms > this.timeoutMs) {
        throw invalidField('timeout_ms', `must be an integer from 1 to ${this.timeoutMs}`);
      }
      timeoutMs = b.timeout_ms;
    }
    return { sql: b.sql, params, timeoutMs };
  }

  /** Runs a script within the request's budget; one statement answers its result, several `{results: […]}`. */
  async run(lease: ProjectLease, auth: AuthContext, sql: string, params: unknown[], at: Admission): Promise<QueryResult | { results: QueryResult[] }> {
    const results = await this.execute(lease, auth, sql, params, at);
    return results.length === 1 ? results[0]! : { results };
  }

  /**
   * The synchronous path: an already translated point lookup that SQLite's plan proves
   * cheap, answered on the main thread without awaiting (the pipeline then replies at
   * once). Null: use run().
   */
  fast(lease: ProjectLease, auth: AuthContext, sql: string, params: unknown[]): string | null {
    // note: the trusted version (project/schema-version.ts): every schema change in this process resets it.
    const version = schemaVersion(lease);
    const t = cachedTranslation(sql, translationKey(lease, version));
    const only = t && t.statements.length === 1 ? t.statements[0]! : null;
    if (!t || !only?.pointLookup || only.steps.length !== 1 || t.maxParam > params.length) return null;
    const source = auth.role === 'service_role' ? null : this.#rlsSource(lease, auth, t);
    this.#requirePrivileges(lease, auth, t);
    let r: WorkerResult | null;
    try {
      r = pointLookup(lease, version, only, params, source, auth);
    } catch {
      // note: e.g. a table another process dropped: run() reads the schema afresh and reports it.
      return null;
    }
    return r ? shapeText(only.command, only.columns, r) : null;
  }

  async execute(lease: ProjectLease, auth: AuthContext, sql: string, params: unknown[], at: Admission): Promise<QueryResult[]> {
    const version = schemaVersion(lease, true);
    const columns: SchemaLookup = Object.assign((p: string) => this.#columns(lease, version, p), { enums: (name: string) => readEnum(lease, name) });
    // note: a bad value found while translating or binding carries its SQLSTATE too (docs/sql.md "Errors").
    return this.#execute(lease, auth, sql, params, at, version, columns).catch((err: unknown) => {
      throw pgError(err) ?? err;
    });
  }

  async #execute(lease: ProjectLease, auth: AuthContext, sql: string, params: unknown[], at: Admission, version: number, columns: SchemaLookup): Promise<QueryResult[]> {
    const t = await translateAsync(sql, columns, translationKey(lease, version), (text) => this.pool.parse(text, at, PARSE_TIMEOUT_MS), () => [...readIntrospection(lease.db, columns), ...introspectedViews(readViews(lease, version))], () => readViews(lease, version), (name) => storedFunctions(lease, version).get(name) ?? null);
    if (t.maxParam > params.length) throw new EdgeError('invalid_request', `the SQL uses $${t.maxParam} but params has ${params.length} values`);
    const service = auth.role === 'service_role';
    const source = service ? null : this.#rlsSource(lease, auth, t);
    this.#requirePrivileges(lease, auth, t);
    for (const [i, s] of t.statements.entries()) {
      // note: the RLS switch belongs to the rows API's tables (listed, or created and adopted earlier in the script).
      if (!s.rls) continue;
      const name = s.rls.table;
      const madeHere = t.statements.slice(0, i).some((e) => e.adopted === true && e.effect?.table === name);
      if (!madeHere && !this.#db.tables(lease, true).has(name)) {
        throw new EdgeError('invalid_request', `row-level security applies to tables GET /db/tables lists; "${name}" is not one of them (docs/sql.md "Tables made by raw DDL")`);
      }
    }
    const only = t.statements.length === 1 ? t.statements[0]! : null;
    let fast: WorkerResult | null = null;
    try {
      fast = only ? pointLookup(lease, version, only, params, source, auth) : null;
    } catch (err) {
      // note: the same mapping as the worker's: a value the column's type cannot read (`id = 'abc'` on a
      // uuid key) is the 400 it is through $1 or in the pool, never a 500.
      throw mapError(err);
    }
    if (fast) {
      spend(at, fast);
      return [shape(only!.command, only!.columns, fast)];
    }
    const stored = (name: string) => storedFunctions(lease, version).get(name) ?? null;
    const policies = t.statements.some((s) => s.policy) ? policyWrites(this.#db.tables(lease, true), t, stored) : new Map<Statement, unknown[]>();
    const routines = routineSteps(lease.db, t.statements, columns, (name) => trackedOf(name, this.#db.tables(lease).get(name)), functionPolicies(this.#db.tables(lease, true)));
    const callerAuth = new CallerOf(auth);
    // note: RETURNING on a table whose BEFORE trigger assigns NEW fields reads the rows again after the triggers (Statement.reread).
    const assigning = t.statements.some((s) => s.reread) ? assigningTables(lease) : null;
    const statements = t.statements.map((s) =>
      routines.get(s)?.map((r) => ({ ...r, result: false })) ??
      (s.reread && assigning?.has(s.reread.table) ? s.reread.steps : s.steps).map((step) => {
        const values = policies.get(s);
        if (values) return { sql: step.sql, params: values, result: false };
        const b = source ? bind(step.sql, params, source, step.fixed, true, callerAuth) : bindPlain(step, params, true, callerAuth);
        return { sql: b.sql, params: b.params, result: step.into ? false : step.result === true, ...(step.rowids ? { rowids: step.rowids } : {}), ...(step.into ? { into: step.into } : {}), ...(step.alter ? { alter: step.alter } : {}) };
      }),
    );
    // note: RLS switches and policies change no schema, but the catalog caches them: counted as changes so it reloads.
    const schemaChange = t.statements.some((s) => s.effect !== undefined || s.rls !== undefined || s.grants === true || s.policy !== undefined || s.command.startsWith('CREATE') || s.command.startsWith('DROP') || s.command.startsWith('ALTER') || s.command === 'COMMENT');
    let raw: WorkerResult[];
    let captured: WorkerChange[] = [];
    const capture = t.readOnly ? undefined : this.#capture(lease, t);
    // note: publishing in seq order starts from what the log had before this process's first write (change-log.ts).
    if (capture) expectChanges(lease);
    try {
      const out = await this.pool.run({ file: this.#file(lease.projectId), restricted: !service, readOnly: t.readOnly, ...(t.readOnly ? {} : { caller: plainCaller(auth) }), schemaChange, ...(ddlOnly(t) ? { ddlOnly: true } : {}), capture, maxRows: MAX_ROWS, statements }, at);
      raw = out.results;
      captured = out.changes;
    } catch (err) {
      // note: a worker ended past its time limit may have committed before it could reply: what it logged is published now.
      if (capture) {
        try {
          catchUpChanges(this.#bus, lease);
        } catch {
          // note: e.g. the project was deleted meanwhile; the request's own error is the answer.
        }
      }
      throw inStatement(mapError(err, columns), err, t);
    }
    // note: DDL ran on a worker connection; the rows API's catalog must not trust its cache.
    if (schemaChange) catalogStore.invalidate(lease);
    if (captured.length) {
      publishChanges(
        this.#bus,
        lease,
        captured.map((c) => ({
          projectId: lease.projectId,
          at: c.at,
          seq: c.seq,
          op: c.op,
          table: c.table,
          id: c.id,
          data: c.data === null ? null : (JSON.parse(c.data) as Record<string, unknown>),
          old: c.old === null ? null : (JSON.parse(c.old) as Record<string, unknown>),
        })),
      );
    }
    // note: a statement's notices (e.g. a GRANT that changes nothing) go beside its result.
    return t.statements.map((s, i) => (s.notices?.length ? { ...shape(s.command, s.columns, raw[i]!), notices: s.notices } : shape(s.command, s.columns, raw[i]!)));
  }

  /** The table privileges the statements need, as recorded when the request starts (docs/sql.md "Privileges: GRANT and REVOKE"). */
  #requirePrivileges(lease: ProjectLease, auth: AuthContext, t: Translation): void {
    if (t.privileges.size !== 0) requirePrivileges(catalogStore.grants(this.#db.tables(lease)), auth, t.privileges);
  }

  /** Triggers for the db-catalog tables a writing script names, so its row changes become change events. */
  #capture(lease: ProjectLease, t: Translation): WorkerJob['capture'] {
    const tables = this.#db.tables(lease);
    const setups = [];
    // note: tables reached by ON DELETE CASCADE / SET NULL from a named one change too (SQLite fires
    // their triggers for foreign-key actions), so they are tracked as well.
    const fks = catalogStore.referencing(lease, tables);
    const names = new Set(t.tables);
    // note: and the tables the SQL triggers of a named table write (triggers.ts), down the chain.
    const writes = triggerWrites(lease.db);
    for (const name of names) {
      for (const fk of fks.get(name) ?? []) if (fk.onDelete === 'cascade' || fk.onDelete === 'set null') names.add(fk.child);
      for (const w of writes.get(name) ?? []) names.add(w);
    }
    // note: a table the script alters or drops is not tracked (a trigger naming a column would block the
    // change); its row changes in that script are not captured (docs/sql.md).
    for (const s of t.statements) if (s.effect) names.delete(s.effect.table);
    for (const name of names) {
      const tracked = trackedOf(name, tables.get(name));
      if (tracked) setups.push(trackSetup(tracked));
    }
    if (!setups.length) return undefined;
    return { setups, read: READ_CHANGES, clear: CLEAR_CHANGES, append: APPEND_CHANGE };
  }

  /** Publishable callers: read-only, catalog tables only, each one filtered by its select policy. */
  #rlsSource(lease: ProjectLease, auth: AuthContext, t: Translation): TableSource {
    if (!t.readOnly) throw new EdgeError('missing_scope', 'only read-only SELECT statements may run without the service role', { details: { scope: 'service_role' } });
    const tables = this.#db.tables(lease);
    for (const name of t.tables) {
      if (name === AUTH_USERS) {
        throw new EdgeError('missing_scope', 'permission denied for table auth.users: only the service role reads it (as in Supabase, where anon and authenticated have no access to auth.users)', {
          details: { scope: 'service_role' },
        });
      }
      if (isIntrospectionView(name)) throw new EdgeError('missing_scope', `permission denied for ${name}: only the service role reads it`, { details: { scope: 'service_role' } });
      if (!tables.has(name)) throw new EdgeError('missing_scope', `table "${name}" is not readable without the service role`, { details: { scope: 'service_role' } });
    }
    return (name) => {
      const info = tables.get(name)!;
      if (!info.rls.enabled) return { sql: quoteIdent(name), params: [] };
      const p = usePolicy(info.rls.compiled.select ?? { sql: '(0)', params: [] });
      return { sql: `(SELECT * FROM ${quoteIdent(name)} WHERE ${p.sql})`, params: p.params.length ? bindPolicy(p.params, auth) : [] };
    };
  }

  /** A table's columns with their Postgres types (declared type, overridden by the rows API's catalog). */
  #columns(lease: ProjectLease, version: number, physical: string): ColumnType[] | null {
    const c = lease.cache(SCHEMAS, newSchemas);
    if (c.version !== version) {
      c.version = version;
      c.tables = new Map();
    }
    if (c.tables.has(physical)) return c.tables.get(physical)!;
    const info = lease.db.pragma(`table_info(${quoteIdent(physical)})`) as Array<{ name: string; type: string; pk: number; dflt_value: string | null }>;
    let out: ColumnType[] | null = null;
    if (info.length) {
      const catalog: TableInfo | undefined = physical.includes('.') ? undefined : this.#db.tables(lease).get(physical);
      const single = info.filter((col) => col.pk > 0).length === 1;
      const fills = catalog ? rowsApiFills(lease, physical, catalog) : null;
      // note: the rows API declares only SQLite's storage types (TEXT, INTEGER, REAL, BLOB), so for those the
      // catalog knows better; a type the translator declared (BOOLEAN, TEXT_ARRAY, …) is already exact. In a
      // table made by raw DDL (not the rows API's: fills null), a column other than the key declared `INTEGER`
      // is the translator's int4 (`integer`, `smallint`; it declares int8 `BIGINT`), which the catalog widens.
      out = info.map((col) => {
        const int4 = fills === null && col.pk === 0 && col.type.toUpperCase() === 'INTEGER';
        const declared = int4 ? 'int4' : typeOfDecl(col.type);
        const type = GENERIC_DECL.test(col.type) && !int4 ? (catalogType(catalog, col.name) ?? declared) : (declared ?? catalogType(catalog, col.name));
        const auto = col.dflt_value === null ? fills?.[col.name] : undefined;
        const en = enumOfDecl(col.type);
        const base: ColumnType = en ? { name: col.name, type, pk: single && col.pk > 0, enum: en } : { name: col.name, type, pk: single && col.pk > 0 };
        return auto ? { ...base, auto } : base;
      });
    }
    c.tables.set(physical, out);
    return out;
  }
}

/**
 * A statement that is a single-step point lookup, run inline when SQLite's plan proves it
 * (see inline()); null otherwise. Bound untimed: such a plan reads at most one row, so the
 * time-limit check (pe_tick) is left out.
 */
function pointLookup(lease: ProjectLease, version: number, s: Statement, params: unknown[], source: TableSource | null, auth: AuthContext): WorkerResult | null {
  if (!s.pointLookup || s.steps.length !== 1) return null;
  const step = s.steps[0]!;
  const caller = new CallerOf(auth);
  const b = source ? bind(step.sql, params, source, step.fixed, false, caller) : bindPlain(step, params, false, caller);
  return inline(lease, version, b.sql, b.params, (b as { host?: object }).host ?? null);
}

/** The translation cache key of a project at a schema version (kept: built once per version, not per request). */
const KEYS = 'query.keys';
const newKey = (): { version: number; key: string } => ({ version: Number.NaN, key: '' });
function translationKey(lease: ProjectLease, version: number): string {
  const k = lease.cache(KEYS, newKey);
  if (k.version !== version) {
    k.version = version;
    k.key = `${lease.projectId}:${version}`;
  }
  return k.key;
}

const inlineColumns = new WeakMap<Database.Statement, WorkerResult['columns']>();
/** Per open connection (`lease.cache`): whether a (version, SQL) is a proven point lookup. */
const PLANS = 'query.plans';
const newPlans = (): Lru<string, boolean> => new Lru(500);
/** A point lookup's statement, kept per bound translation (false: not a point lookup). */
interface InlinePlan {
  db: Database.Database;
  st: Database.Statement;
  columns: WorkerResult['columns'];
}
const hostPlans = new WeakMap<object, InlinePlan | false>();
const UNIQUE_LOOKUP = /^SEARCH \S+ USING (?:INTEGER PRIMARY KEY \(rowid=\?\)|(?:COVERING )?INDEX (sqlite_autoindex_\S+) \(([^()]*)\))$/;

/**
 * Runs a point lookup on the main thread when SQLite's plan proves it reads at most one
 * row by a unique key (no scan, no temp b-tree, no subquery): the worker round trip costs
 * more than such a read. Anything else returns null and goes to the worker pool.
 */
function inline(lease: ProjectLease, version: number, sql: string, params: unknown[], host: object | null = null): WorkerResult | null {
  const db = lease.db;
  // note: `host` (the bound form of a cached translation) is per SQL text and schema version, so
  // the decision and the prepared statement are kept on it: a repeated lookup makes one WeakMap read.
  let plan = host ? hostPlans.get(host) : undefined;
  if (plan === false) return null;
  if (plan === undefined || plan.db !== db) {
    if (!decide(lease, version, sql, params)) {
      if (host) hostPlans.set(host, false);
      return null;
    }
    const st = lease.stmt(sql);
    let columns = inlineColumns.get(st);
    if (!columns) {
      st.safeIntegers(true);
      st.raw(true);
      columns = st.columns().map((c) => ({ name: c.name, decl: c.type }));
      inlineColumns.set(st, columns);
    }
    plan = { db, st, columns };
    if (host) hostPlans.set(host, plan);
  }
  // note: the plan proves at most one row: get() (no result array, no second step to find the end).
  const row = plan.st.get(...params) as unknown[] | undefined;
  const rows = row === undefined ? [] : [row];
  return { columns: plan.columns, rows, changes: rows.length, reader: true };
}

function decide(lease: ProjectLease, version: number, sql: string, params: unknown[]): boolean {
  const db = lease.db;
  const cache = lease.cache(PLANS, newPlans);
  const key = `${version}\0${sql}`;
  let ok = cache.get(key);
  if (ok === undefined) {
    ok = false;
    try {
      const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>;
      if (plan.length === 1) {
        const m = UNIQUE_LOOKUP.exec(plan[0]!.detail);
        if (m && (!m[1] || uniqueFully(db, m[1], m[2]!))) ok = true;
      }
    } catch {
      // note: the worker reports the error with its usual mapping.
    }
    cache.set(key, ok);
  }
  return ok;
}

/** Whether the lookup constrains every column of the (unique) automatic index with `=`. */
function uniqueFully(db: Database.Database, index: string, terms: string): boolean {
  const parts = terms.split(' AND ');
  if (!parts.every((p) => /^\S+=\?$/.test(p))) return false;
  return (db.pragma(`index_info(${quoteIdent(index)})`) as unknown[]).length === parts.length;
}

const GENERIC_DECL = /^(TEXT|INTEGER|REAL|BLOB|)$/i;

/**
 * The columns the translator fills for a table the rows API made (docs/sql.md "One table,
 * two doors"): its `id` (a UUIDv7), `created_at` and `updated_at` (now; updated_at kept
 * current on UPDATE), as the rows API does. Such a table is STRICT (store.ts), which a table
 * made by raw DDL never is: those keep Postgres' rules (their own defaults, nothing touched).
 */
function rowsApiFills(lease: ProjectLease, physical: string, t: TableInfo): Record<string, ColumnType['auto']> | null {
  const list = lease.db.pragma(`table_list(${quoteIdent(physical)})`) as Array<{ strict: number }>;
  if (list[0]?.strict !== 1) return null;
  return { ...(t.def.key === 'int8' ? {} : { id: 'uuid' as const }), ...(t.def.stamps === false ? {} : { created_at: 'now' as const, updated_at: 'touch' as const }) };
}

function catalogType(t: TableInfo | undefined, name: string): PgType | null {
  if (!t) return null;
  if (name === 'id') return t.def.key === 'int8' ? 'int8' : 'uuid';
  if (t.def.stamps !== false && (name === 'created_at' || name === 'updated_at')) return 'timestamptz';
  if (name === 'data' && t.def.kind === 'document') return 'jsonb';
  const c = t.cols.get(name);
  return c ? fromCatalogType(c.type) : null;
}

/** Charges an inline result (one row) to the request's result-size budget, as the worker charges its own. */
function spend(at: Admission, r: WorkerResult): void {
  for (const row of r.rows) for (const v of row) at.bytesLeft -= typeof v === 'string' ? v.length + 2 : v !== null && typeof v === 'object' ? (v as Uint8Array).length * 2 + 2 : 8;
  if (at.bytesLeft < 0) throw mapError({ code: 'pe_result_too_large' });
}

/** Worker errors → EdgeError: constraint and busy codes as everywhere, other SQL errors 400 naming SQLite's reason. */
/** An error while a script ran names the failing statement, as one the translator refuses does (docs/sql.md "Syntax errors"). */
function inStatement(mapped: unknown, raw: unknown, t: Translation): unknown {
  const at = (raw as { statement?: unknown } | null)?.statement;
  if (!(mapped instanceof EdgeError) || typeof at !== 'number' || !t.texts?.[at]) return mapped;
  const details = (mapped.details as Record<string, unknown> | undefined) ?? {};
  if (details.statement !== undefined) return mapped;
  return new EdgeError(mapped.code, mapped.message, { ...(mapped.headers ? { headers: mapped.headers } : {}), details: { ...details, statement: at, statement_text: t.texts[at] } });
}

function mapError(err: unknown, columns?: SchemaLookup): unknown {
  if (err instanceof EdgeError) return err;
  // note: constraint violations and bad values as Postgres words them (src/sql/pg/violations.ts).
  const pg = pgError(err, columns);
  if (pg) return pg;
  const e = err as { code?: string; message?: string };
  const msg = String(e.message ?? '');
  if (e.code === 'pe_too_many_rows') return new EdgeError('invalid_request', msg);
  if (e.code === 'pe_result_too_large') {
    return new EdgeError('invalid_request', `the results of this request are larger than ${MAX_RESULT_BYTES} bytes of JSON; select fewer rows or columns (LIMIT/OFFSET)`);
  }
  if (msg === 'Cannot add a column with non-constant default') {
    // note: SQLite fills the rows a table has with the new column's default, and only a constant one.
    return new EdgeError('unsupported_sql', 'ALTER TABLE … ADD COLUMN with a DEFAULT that is not a constant (now(), gen_random_uuid(), auth.uid(), …) on a table that has rows', { details: { construct: 'ADD COLUMN … DEFAULT <non-constant> on a table with rows' } });
  }
  if (e.code === 'pe_read_only') return new EdgeError('missing_scope', 'only read-only statements may run without the service role', { details: { scope: 'service_role' } });
  if (typeof e.code === 'string' && e.code.startsWith('SQLITE_')) {
    const mapped = normalize(Object.assign(new Error(msg), { name: 'SqliteError', code: e.code }));
    if (mapped.code !== 'internal') return mapped;
    if (e.code === 'SQLITE_ERROR' || e.code.startsWith('SQLITE_CONSTRAINT') || e.code === 'SQLITE_MISMATCH' || e.code === 'SQLITE_RANGE' || e.code === 'SQLITE_TOOBIG') {
      return new EdgeError('invalid_request', msg.slice(0, 300));
    }
  }
  return err;
}

/** A script of schema changes only (an ALTER COLUMN rebuild may then run with foreign keys off: src/sql/worker/alter-column.ts). */
const ddlOnly = (t: Translation): boolean => t.statements.every((s) => !['SELECT', 'INSERT', 'UPDATE', 'DELETE'].includes(s.command)) && t.statements.some((s) => s.steps.some((step) => step.alter));
