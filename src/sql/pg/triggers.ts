import type Database from 'better-sqlite3';
import { EdgeError } from '../../core/errors.js';
import { SCHEMA_BUMP_SQL } from './reserved.js';
import type { ProjectLease } from '../../project/registry.js';
import { schemaVersion } from '../../project/schema-version.js';
import { quoteIdent } from '../../project/schemas.js';
import { quoteLiteral } from '../quote.js';
import { imageJson, rowJson, type TrackedTable } from './changes.js';
import { unsupported, type Emitter, type Node } from './emit.js';
import { kind, only, rangeVar, str } from './lower.js';
import type { ParsedStatement } from './parse.js';
import { AUTH_USERS_PHYSICAL, checkPlpgsql, compileTrigger, type TriggerEvent, type TriggerSpec } from './plpgsql.js';
import { checkSqlFunction, parseFunction, type FunctionLookup } from './sql-functions.js';
import type { Statement } from './statements.js';
import { POLICY_WRITE } from './policy-stmt.js';
import { toCatalogType, type SchemaLookup } from './types.js';

/**
 * `CREATE FUNCTION`, `CREATE TRIGGER`, `DROP TRIGGER`, `DROP FUNCTION` (docs/sql.md "Functions
 * and triggers"). Functions are kept in `_svc_meta.sql_functions` (their CREATE text); a trigger is
 * compiled (plpgsql.ts) into SQLite triggers when its statement runs, against the function as
 * it is then (query.ts calls `routineSteps` with the script's earlier statements seen), and
 * recorded in `_svc_meta.sql_triggers`. `CREATE OR REPLACE FUNCTION` recompiles the triggers that
 * use it.
 */

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const NOW = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;

export interface RoutineOp {
  op: 'function' | 'trigger' | 'drop_trigger' | 'drop_function';
  name: string;
  /** CREATE FUNCTION */
  replace?: boolean;
  language?: string;
  returns?: string;
  definer?: boolean;
  text?: string;
  /** CREATE TRIGGER: its spec; the function's name. DROP TRIGGER: the table. */
  spec?: TriggerSpec;
  fn?: string;
  table?: string;
  missingOk?: boolean;
  /** DROP FUNCTION … CASCADE: the policies and triggers that use it go too. */
  cascade?: boolean;
  /** The translator's view of the tables (with the script's earlier DDL). */
  schema?: SchemaLookup;
}

const pgError = (sqlstate: string, message: string, detail?: string): EdgeError =>
  new EdgeError('invalid_request', message, { details: { sqlstate, ...(detail ? { detail } : {}) } });

/** The function's name without `public.` (other schemas are refused). */
function routineName(parts: string[]): string {
  if (parts.length > 2 || (parts.length === 2 && parts[0] !== 'public')) throw unsupported(`functions outside the public schema (${parts.join('.')})`);
  return parts[parts.length - 1]!.toLowerCase();
}

// ---------------------------------------------------------------- lowering (lower-stmt.ts)

export function lowerCreateFunction(f: Record<string, unknown>, s: ParsedStatement): Node {
  only('CREATE FUNCTION', f, 'replace,funcname,parameters,returnType,options,sql_body,is_procedure');
  if (f.is_procedure) throw unsupported('CREATE PROCEDURE');
  if (f.sql_body) throw unsupported('SQL-standard function bodies (BEGIN ATOMIC / RETURN …): write AS $$ … $$');
  const name = routineName(list(f.funcname).map(str));
  const rt = f.returnType as Record<string, unknown> | undefined;
  const returns = rt ? list(rt.names).map(str).filter((x) => x !== 'pg_catalog').join('.').toLowerCase() : 'void';
  let language = 'sql';
  let definer = false;
  for (const o of list(f.options)) {
    const [, d] = kind(o);
    const name = String(d.defname);
    if (name === 'language') language = str(d.arg).toLowerCase();
    else if (name === 'security') definer = Boolean(kind(d.arg)[1].boolval);
    else if (!['as', 'set', 'volatility', 'strict', 'leakproof', 'parallel', 'cost', 'rows'].includes(name)) throw unsupported(`CREATE FUNCTION … ${name.toUpperCase()}`);
  }
  if (language === 'plpgsql') {
    if (returns !== 'trigger') throw unsupported('PL/pgSQL functions other than trigger functions (RETURNS trigger); write LANGUAGE sql');
    if (list(f.parameters).length) throw pgError('42P13', 'trigger functions cannot have declared arguments');
    checkPlpgsql(s.text);
  } else if (language === 'sql') checkSqlFunction(f, s.text);
  else throw unsupported(`LANGUAGE ${language} (functions here are LANGUAGE plpgsql triggers and LANGUAGE sql)`);
  return { type: 'pe_routine', routine: { op: 'function', name, replace: Boolean(f.replace), language, returns, definer, text: s.text } satisfies RoutineOp };
}

const TIMING: Record<number, 'before' | 'after'> = { 0: 'after', 2: 'before' };

export function lowerCreateTrigger(f: Record<string, unknown>): Node {
  only('CREATE TRIGGER', f, 'replace,isconstraint,trigname,relation,funcname,args,row,timing,events,columns,whenClause,transitionRels,deferrable,initdeferred,constrrel');
  if (f.isconstraint) throw unsupported('CREATE CONSTRAINT TRIGGER');
  if (f.replace) throw unsupported('CREATE OR REPLACE TRIGGER (DROP TRIGGER first)');
  if (!f.row) throw unsupported('FOR EACH STATEMENT triggers (write FOR EACH ROW)');
  if (list(f.args).length) throw unsupported('trigger arguments (TG_ARGV)');
  if (list(f.transitionRels).length) throw unsupported('REFERENCING (transition tables)');
  const timing = TIMING[Number(f.timing ?? 0)];
  if (!timing) throw unsupported('INSTEAD OF triggers');
  const ev = Number(f.events ?? 0);
  if (ev & 32) throw unsupported('TRUNCATE triggers');
  const events: TriggerEvent[] = [];
  if (ev & 4) events.push('insert');
  if (ev & 16) events.push('update');
  if (ev & 8) events.push('delete');
  const rel = rangeVar(f.relation as Record<string, unknown>);
  const db = rel.db === null ? null : String(rel.db).toLowerCase();
  const table = String(rel.table);
  const spec = { name: String(f.trigname), table, timing, events, columns: list(f.columns).map(str), when: (f.whenClause as Record<string, unknown> | undefined) ?? null };
  return { type: 'pe_routine', routine: { op: 'trigger', name: spec.name, spec, fn: routineName(list(f.funcname).map(str)), table: db ?? '' } };
}

/** DROP TRIGGER / DROP FUNCTION, or null for other DROPs. */
export function lowerDropRoutine(f: Record<string, unknown>): Node | null {
  if (f.removeType !== 'OBJECT_TRIGGER' && f.removeType !== 'OBJECT_FUNCTION') return null;
  if (f.behavior === 'DROP_CASCADE' && f.removeType === 'OBJECT_TRIGGER') throw unsupported('DROP TRIGGER … CASCADE');
  const objs = list(f.objects);
  if (objs.length !== 1) throw unsupported('dropping several triggers or functions in one statement');
  const [k, o] = kind(objs[0]);
  if (f.removeType === 'OBJECT_TRIGGER') {
    const parts = list(o.items).map(str);
    const name = parts.pop()!;
    return { type: 'pe_routine', routine: { op: 'drop_trigger', name, table: parts.join('.'), missingOk: Boolean(f.missing_ok) } };
  }
  if (k !== 'ObjectWithArgs') throw unsupported('this DROP FUNCTION');
  if (list(o.objargs).length) throw unsupported('DROP FUNCTION with argument types (write DROP FUNCTION name)');
  const routine: RoutineOp = { op: 'drop_function', name: routineName(list(o.objname).map(str)), missingOk: Boolean(f.missing_ok) };
  if (f.behavior === 'DROP_CASCADE') routine.cascade = true;
  return { type: 'pe_routine', routine };
}

// ---------------------------------------------------------------- statements (statements.ts)

export function routineStatement(n: Node, em: Emitter): Statement {
  const r = { ...(n.routine as RoutineOp) };
  if (r.op === 'trigger') {
    const spec = { ...r.spec! };
    const db = r.table;
    if (db === 'auth' && spec.table.toLowerCase() === 'users') spec.table = AUTH_USERS_PHYSICAL;
    else spec.table = em.physical(db || null, spec.table);
    r.spec = spec;
    // note: the table as this statement sees it (a later statement of the script may alter or drop it).
    const view = em.opts.schema;
    const own = spec.table === AUTH_USERS_PHYSICAL ? null : view(spec.table);
    r.schema = (t) => (t === spec.table ? own : view(t));
  }
  if (r.op === 'drop_trigger') {
    const parts = r.table ? r.table.split('.') : [];
    const t = parts.pop() ?? '';
    r.table = parts[0] === 'auth' && t.toLowerCase() === 'users' ? AUTH_USERS_PHYSICAL : em.physical(parts[0] ?? null, t);
  }
  const command = r.op === 'function' ? 'CREATE FUNCTION' : r.op === 'trigger' ? 'CREATE TRIGGER' : r.op === 'drop_trigger' ? 'DROP TRIGGER' : 'DROP FUNCTION';
  return { command, steps: [], columns: [], readOnly: false, routine: r };
}

// ---------------------------------------------------------------- run time (query.ts)

interface FnRow {
  name: string;
  language: string;
  returns: string;
  definer: number;
  source: string;
}
interface TrgRow {
  tbl: string;
  /** The table the catalog row names (before a rename). */
  stored?: string;
  name: string;
  fn: string;
  spec: string;
  names: string;
  writes: string;
}

export const FUNCTIONS_TABLE = '"_svc_meta.sql_functions"';
export const TRIGGERS_TABLE = '"_svc_meta.sql_triggers"';

/** A project's SQL functions (name → row); empty before the migration ran. */
export function readFunctions(db: Database.Database): Map<string, FnRow> {
  try {
    return new Map((db.prepare(`SELECT name, language, returns, definer, source FROM ${FUNCTIONS_TABLE}`).all() as FnRow[]).map((r) => [r.name, r]));
  } catch {
    return new Map();
  }
}

/**
 * The triggers that still exist, on the table SQLite now has them on: dropping a table drops
 * its SQLite triggers, renaming it moves them (a trigger that compiled to no SQLite trigger
 * lives while its table does).
 */
function readTriggers(db: Database.Database): Map<string, TrgRow> {
  let rows: TrgRow[];
  let live: Map<string, string>;
  let tables: Set<string>;
  try {
    rows = db.prepare(`SELECT tbl, name, fn, spec, names, writes FROM ${TRIGGERS_TABLE}`).all() as TrgRow[];
    const master = db.prepare(`SELECT type, name, tbl_name FROM sqlite_master WHERE type IN ('trigger', 'table')`).all() as Array<{ type: string; name: string; tbl_name: string }>;
    live = new Map(master.filter((m) => m.type === 'trigger').map((m) => [m.name, m.tbl_name]));
    tables = new Set(master.filter((m) => m.type === 'table').map((m) => m.name));
  } catch {
    return new Map();
  }
  const out = new Map<string, TrgRow>();
  for (const r of rows) {
    const names = JSON.parse(r.names) as string[];
    const on = names.map((n) => live.get(n)).find((t) => t !== undefined) ?? (names.length === 0 && tables.has(r.tbl) ? r.tbl : undefined);
    if (on === undefined) continue;
    const row = { ...r, tbl: on, stored: r.tbl };
    out.set(`${on}\0${r.name}`, row);
  }
  return out;
}

/** Tables written by the triggers on each table (the raw-SQL change capture follows them, query.ts). */
export function triggerWrites(db: Database.Database): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const r of readTriggers(db).values()) out.set(r.tbl, [...(out.get(r.tbl) ?? []), ...(JSON.parse(r.writes) as string[])]);
  return out;
}

export interface RoutineStep {
  sql: string;
  params: unknown[];
  /** Instead of `sql`: the worker lets this NOT NULL column take NULL until the assignment triggers ran (src/sql/worker/relax-not-null.ts). */
  relax?: { table: string; column: string };
}

/**
 * The SQLite steps of a script's routine statements, computed against the catalog as the
 * script's earlier statements leave it. `tracked` gives the rows API's view of a table, so a
 * row a trigger inserts is logged as a change event (see `logInsert`).
 */
/** The policies that call stored functions (query.ts gives them from the catalog; src/sql/policy-functions.ts). */
export interface PolicyUsers {
  /** The policies calling `fn`, as Postgres names them in a 2BP01 detail. */
  users(fn: string, functions: FunctionLookup): Array<{ table: string; name: string }>;
  /** POLICY_WRITE values dropping those policies (DROP FUNCTION … CASCADE), the others compiled with `functions`. */
  drop(users: ReadonlyArray<{ table: string; name: string }>, functions: FunctionLookup): unknown[][];
  /** CREATE OR REPLACE: the POLICY_WRITE values of the policies calling it, compiled with the new body (throws when one does not compile). */
  replace(fn: FnRow, functions: FunctionLookup): unknown[][];
}

/** A function as Postgres' messages name it: `name(uuid, integer)`. */
function signature(fn: FnRow): string {
  let args: string[] = [];
  if (fn.language === 'sql') {
    try {
      args = parseFunction(fn.source).argNames;
    } catch {
      // note: a body that no longer parses still has a name.
    }
  }
  return `${fn.name}(${args.join(', ')})`;
}

export function routineSteps(
  db: Database.Database,
  statements: readonly Statement[],
  committed: SchemaLookup,
  tracked: (table: string) => TrackedTable | null,
  policies?: PolicyUsers,
): Map<Statement, RoutineStep[]> {
  const out = new Map<Statement, RoutineStep[]>();
  if (!statements.some((s) => s.routine)) return out;
  const fns = new Map<string, FnRow | null>(readFunctions(db));
  const trgs = new Map<string, TrgRow | null>(readTriggers(db));
  // note: the rows API's view of a table as the script's earlier statements leave it (a table the script
  // creates, alters or drops), so a trigger on a table made in the same script logs its rows too.
  const made = new Map<string, TrackedTable | null>();
  const trackedNow = (t: string): TrackedTable | null => (made.has(t) ? made.get(t)! : tracked(t));
  const compile = (spec: TriggerSpec, fn: FnRow, schema: SchemaLookup, steps: RoutineStep[]) => {
    const c = compileTrigger(spec, fn.source, schema, { insert: (t) => logInsert(trackedNow(t)), change: (t, op, ids) => logChange(trackedNow(t), op, ids) }, (name) => fns.get(name) ?? null);
    // note: before the trigger is made, so its assignment triggers fire before the NOT NULL checks (SQLite: newest first).
    for (const column of c.assigns) steps.push({ sql: '', params: [], relax: { table: spec.table, column } });
    for (const sql of c.create) steps.push({ sql, params: [] });
    const row: TrgRow = { tbl: spec.table, name: spec.name, fn: fn.name, spec: JSON.stringify(spec), names: JSON.stringify(c.names), writes: JSON.stringify(c.writes) };
    steps.push({
      sql: `INSERT INTO ${TRIGGERS_TABLE} (tbl, name, fn, spec, names, writes, created_at) VALUES (?, ?, ?, ?, ?, ?, ${NOW}) ON CONFLICT (tbl, name) DO UPDATE SET fn = excluded.fn, spec = excluded.spec, names = excluded.names, writes = excluded.writes`,
      params: [row.tbl, row.name, row.fn, row.spec, row.names, row.writes],
    });
    trgs.set(`${row.tbl}\0${row.name}`, row);
  };
  const dropSql = (r: TrgRow, steps: RoutineStep[]) => {
    for (const n of JSON.parse(r.names) as string[]) steps.push({ sql: `DROP TRIGGER IF EXISTS ${quoteIdent(n)}`, params: [] });
  };
  for (const s of statements) {
    const r = s.routine;
    if (!r) {
      // note: a table the script drops takes its triggers along (SQLite drops them).
      if (s.command === 'DROP TABLE' && s.effect) for (const [k, t] of trgs) if (t?.tbl === s.effect.table) trgs.set(k, null);
      if (s.effect) made.set(s.effect.table, trackedAfter(s, trackedNow(s.effect.table)));
      continue;
    }
    const steps: RoutineStep[] = [];
    if (r.op === 'function') {
      const old = fns.get(r.name);
      if (old && !r.replace) throw pgError('42723', `function "${r.name}" already exists with same argument types`);
      const row: FnRow = { name: r.name, language: r.language!, returns: r.returns!, definer: r.definer ? 1 : 0, source: r.text! };
      const users = [...trgs.values()].filter((t): t is TrgRow => t !== null && t.fn === r.name);
      if (users.length && (row.language !== 'plpgsql' || row.returns !== 'trigger')) throw pgError('42P13', `cannot change return type of existing function "${r.name}"`);
      if (old && old.returns !== row.returns) throw new EdgeError('invalid_request', 'cannot change return type of existing function', { details: { sqlstate: '42P13', hint: `Use DROP FUNCTION ${signature(old)} first.` } });
      // note: the policies that call it must compile with the new body; they are written again with it (and compiled
      // again whenever the catalog loads).
      const rewritten = old ? (policies?.replace(row, (n) => (n === row.name ? row : (fns.get(n) ?? null))) ?? []) : [];
      steps.push({
        sql: `INSERT INTO ${FUNCTIONS_TABLE} (name, language, returns, definer, source, created_at) VALUES (?, ?, ?, ?, ?, ${NOW}) ON CONFLICT (name) DO UPDATE SET language = excluded.language, returns = excluded.returns, definer = excluded.definer, source = excluded.source`,
        params: [row.name, row.language, row.returns, row.definer, row.source],
      });
      fns.set(r.name, row);
      for (const values of rewritten) steps.push({ sql: POLICY_WRITE, params: values });
      for (const sql of BUMP) steps.push({ sql, params: [] });
      // note: OR REPLACE recompiles the triggers that use the function, against the tables as they are now.
      for (const t of users) {
        dropSql(t, steps);
        if (t.stored !== undefined && t.stored !== t.tbl) steps.push({ sql: `DELETE FROM ${TRIGGERS_TABLE} WHERE tbl = ? AND name = ?`, params: [t.stored, t.name] });
        compile({ ...(JSON.parse(t.spec) as TriggerSpec), table: t.tbl }, row, committed, steps);
      }
    } else if (r.op === 'trigger') {
      const spec = r.spec!;
      const fn = fns.get(r.fn!);
      if (!fn) throw pgError('42883', `function ${r.fn}() does not exist`);
      if (fn.returns !== 'trigger') throw pgError('42P17', `function ${r.fn} must return type trigger`);
      if (trgs.get(`${spec.table}\0${spec.name}`)) throw pgError('42710', `trigger "${spec.name}" for relation "${shown(spec.table)}" already exists`);
      if (spec.table !== AUTH_USERS_PHYSICAL && r.schema!(spec.table) === null) throw pgError('42P01', `relation "${spec.table}" does not exist`);
      compile(spec, fn, r.schema!, steps);
    } else if (r.op === 'drop_trigger') {
      const key = `${r.table}\0${r.name}`;
      const t = trgs.get(key);
      if (!t) {
        if (!r.missingOk) throw pgError('42704', `trigger "${r.name}" for table "${shown(r.table!)}" does not exist`);
      } else {
        dropSql(t, steps);
        steps.push({ sql: `DELETE FROM ${TRIGGERS_TABLE} WHERE tbl = ? AND name = ?`, params: [t.stored ?? t.tbl, t.name] });
        trgs.set(key, null);
      }
    } else {
      const fn = fns.get(r.name);
      if (!fn) {
        if (!r.missingOk) throw pgError('42883', `function ${r.name}() does not exist`);
      } else {
        const sig = signature(fn);
        const lookup: FunctionLookup = (n) => fns.get(n) ?? null;
        const trgUsers = [...trgs.entries()].filter((e): e is [string, TrgRow] => e[1] !== null && e[1].fn === r.name);
        const polUsers = policies?.users(r.name, lookup) ?? [];
        const deps = [...trgUsers.map(([, t]) => `trigger ${t.name} on table ${shown(t.tbl)}`), ...polUsers.map((p) => `policy ${p.name} on table ${p.table}`)];
        if (deps.length && !r.cascade) {
          throw new EdgeError('invalid_request', `cannot drop function ${sig} because other objects depend on it`, {
            details: { sqlstate: '2BP01', detail: deps.map((d) => `${d} depends on function ${sig}`).join('\n'), hint: 'Use DROP ... CASCADE to drop the dependent objects too.' },
          });
        }
        // note: CASCADE drops the triggers and the policies that use it, as Postgres does.
        for (const [k, t] of trgUsers) {
          dropSql(t, steps);
          steps.push({ sql: `DELETE FROM ${TRIGGERS_TABLE} WHERE tbl = ? AND name = ?`, params: [t.stored ?? t.tbl, t.name] });
          trgs.set(k, null);
        }
        if (polUsers.length) {
          const without: FunctionLookup = (n) => (n === r.name ? null : lookup(n));
          for (const values of policies!.drop(polUsers, without)) steps.push({ sql: POLICY_WRITE, params: values });
        }
        steps.push({ sql: `DELETE FROM ${FUNCTIONS_TABLE} WHERE name = ?`, params: [r.name] });
        for (const sql of BUMP) steps.push({ sql, params: [] });
        fns.set(r.name, null);
      }
    }
    out.set(s, steps);
  }
  return out;
}

/** A table's tracked view after a statement with an `effect` (CREATE, ALTER or DROP TABLE) ran. */
function trackedAfter(s: Statement, before: TrackedTable | null): TrackedTable | null {
  const table = s.effect!.table;
  if (s.command === 'DROP TABLE') return null;
  if (s.command === 'CREATE TABLE') {
    const def = s.adopted ? s.catalogDef : undefined;
    if (!def) return null;
    return { table, columns: (def.columns as Array<{ name: string; type: string }>).map((c) => ({ name: c.name, type: c.type })), stamps: def.stamps !== false };
  }
  // note: ALTER TABLE of a catalog table: its columns now (besides the key and the timestamps), in the catalog's types.
  if (!before || before.columns === null || !s.effect!.columns) return before;
  const skip = new Set(['id', ...(before.stamps ? ['created_at', 'updated_at'] : [])]);
  return { ...before, table, columns: s.effect!.columns.filter((c) => !skip.has(c.name)).map((c) => ({ name: c.name, type: toCatalogType(c.type) ?? c.type ?? 'text' })) };
}

const shown = (t: string): string => (t === AUTH_USERS_PHYSICAL ? 'users' : t);

/**
 * After a trigger's INSERT into a rows-API table: the inserted row as a change event, written
 * to the change log directly — on every connection but an SQL worker's, whose own capture
 * (TEMP triggers writing `temp.pe_changes`, changes.ts) records it instead.
 */
export function logInsert(t: TrackedTable | null): string | null {
  if (!t) return null;
  const q = quoteIdent(t.table);
  return (
    `INSERT INTO "_svc_meta.change_log" (at, op, tbl, row_id, data, old, new_row, old_row) ` +
    `SELECT ${NOW}, 'insert', ${quoteLiteral(t.table)}, ${q}."id", ${rowJson(t, q)}, NULL, ${imageJson(t, q)}, NULL FROM ${q} ` +
    `WHERE ${q}.rowid = last_insert_rowid() AND changes() > 0 AND NOT EXISTS (SELECT 1 FROM pragma_table_list WHERE schema = 'temp' AND name = 'pe_changes')`
  );
}

interface Assigning {
  version: number;
  tables: Set<string>;
  /** table → the NOT NULL columns enforced after the assignment triggers (src/sql/worker/relax-not-null.ts). */
  filled: Map<string, Set<string>>;
}

const EMPTY: ReadonlySet<string> = new Set();

/** The NOT NULL columns of a table that a BEFORE trigger may fill: NULL is taken until the triggers ran, then refused (23502). */
export function triggerFilledColumns(lease: ProjectLease, table: string): ReadonlySet<string> {
  const c = assigning(lease);
  return c.filled.get(table) ?? EMPTY;
}

/** The tables that have a BEFORE trigger assigning NEW fields (a `pe_trg_…_set` SQLite trigger), per schema version. */
export function assigningTables(lease: ProjectLease): Set<string> {
  return assigning(lease).tables;
}

function assigning(lease: ProjectLease): Assigning {
  const c = lease.cache<Assigning>('sql.triggers.assigning', () => ({ version: -1, tables: new Set(), filled: new Map() }));
  const v = schemaVersion(lease);
  if (c.version !== v) {
    c.tables = new Set(lease.stmt(`SELECT tbl_name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'pe\\_trg\\_%\\_set' ESCAPE '\\'`).pluck().all() as string[]);
    c.filled = new Map();
    const nn = lease.stmt(`SELECT tbl_name AS tbl, name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'pe\\_nn\\_%\\_insert' ESCAPE '\\'`).all() as Array<{ tbl: string; name: string }>;
    for (const r of nn) {
      const prefix = `pe_nn_${r.tbl}_`;
      if (!r.name.startsWith(prefix)) continue;
      const set = c.filled.get(r.tbl) ?? new Set<string>();
      set.add(r.name.slice(prefix.length, -'_insert'.length));
      c.filled.set(r.tbl, set);
    }
    c.version = v;
  }
  return c;
}

/**
 * The row as stored after a write through the rows API, whose `RETURNING *` shows the values
 * before the SQLite AFTER triggers that apply a BEFORE trigger's assignments to NEW ran
 * (plpgsql.ts): read again only for tables that have such a trigger (known per schema version).
 */
export function rowAfterTriggers<T extends { id?: unknown }>(lease: ProjectLease, table: string, raw: T): T {
  if (!assigningTables(lease).has(table)) return raw;
  return (lease.stmt(`SELECT * FROM ${quoteIdent(table)} WHERE "id" = ?`).get(raw.id) as T | undefined) ?? raw;
}

/**
 * The stored LANGUAGE sql (and plpgsql) functions, read once per schema version: creating,
 * replacing or dropping a function changes the schema version (routineSteps), so cached
 * translations that inlined the old body are not used again.
 */
export function storedFunctions(lease: ProjectLease, version: number): Map<string, FnRow> {
  const c = lease.cache<{ version: number; fns: Map<string, FnRow> }>('sql.functions.stored', () => ({ version: -1, fns: new Map() }));
  if (c.version !== version) {
    c.fns = readFunctions(lease.db);
    c.version = version;
  }
  return c.fns;
}

/** A new or dropped function body invalidates cached translations: these steps change the schema version. */
const BUMP = SCHEMA_BUMP_SQL;

const NOT_CAPTURED = `NOT EXISTS (SELECT 1 FROM pragma_table_list WHERE schema = 'temp' AND name = 'pe_changes')`;
const HELD = '"_svc_meta.sql_trigger_rows"';

/**
 * Around a trigger's UPDATE or DELETE of a rows-API table (`ids`: a SELECT of the ids it
 * changes): the rows before (held in `_svc_meta.sql_trigger_rows`) and after, appended to the
 * change log as update or delete events — on every connection but an SQL worker's, whose
 * capture records them instead.
 */
export function logChange(t: TrackedTable | null, op: 'update' | 'delete', ids: string): { before: string; after: string } | null {
  if (!t) return null;
  const q = quoteIdent(t.table);
  const lit = quoteLiteral(t.table);
  const before = `INSERT INTO ${HELD} (tbl, row_id, data, image) SELECT ${lit}, ${q}."id", ${rowJson(t, q)}, ${imageJson(t, q)} FROM ${q} WHERE ${q}."id" IN (${ids}) AND ${NOT_CAPTURED}`;
  const log = `INSERT INTO "_svc_meta.change_log" (at, op, tbl, row_id, data, old, new_row, old_row) `;
  const after =
    op === 'update'
      ? `${log}SELECT ${NOW}, 'update', ${lit}, ${q}."id", ${rowJson(t, q)}, "held"."data", ${imageJson(t, q)}, "held"."image" FROM ${HELD} AS "held" JOIN ${q} ON ${q}."id" = "held"."row_id" WHERE "held"."tbl" = ${lit}`
      : `${log}SELECT ${NOW}, 'delete', ${lit}, "held"."row_id", NULL, "held"."data", NULL, "held"."image" FROM ${HELD} AS "held" WHERE "held"."tbl" = ${lit} AND NOT EXISTS (SELECT 1 FROM ${q} WHERE ${q}."id" = "held"."row_id")`;
  return { before, after: `${after}; DELETE FROM ${HELD} WHERE tbl = ${lit}` };
}
