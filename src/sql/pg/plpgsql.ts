import { EdgeError } from '../../core/errors.js';
import { quoteIdent } from '../../project/schemas.js';
import { CALLER_SQL } from '../caller.js';
import { quoteLiteral } from '../quote.js';
import { TRIGGER_STEP_SQL } from '../trigger-bound.js';
import { Emitter, unsupported, type Node } from './emit.js';
import { kind, lowerExpr, lowerSelect, rangeVar } from './lower.js';
import { lowerStatement } from './lower-stmt.js';
import { parseOne, parsePlpgsql, tokens, type PgNode } from './parse.js';
import { statement } from './statements.js';
import type { FunctionLookup } from './sql-functions.js';
import type { ColumnType, SchemaLookup } from './types.js';

/**
 * PL/pgSQL trigger functions of the everyday shape → SQLite triggers (docs/sql.md "Functions
 * and triggers"). The body is read by PL/pgSQL's own parser (libpg-query) and executed
 * symbolically, once per trigger event: assignments to NEW fields build each field's value
 * (a CASE under IF), IF/ELSIF/ELSE and RETURN become guards on the statements that follow,
 * and each INSERT/UPDATE/DELETE, RAISE EXCEPTION and `RETURN NULL` becomes one statement of a
 * SQLite trigger, guarded by a WHERE. A BEFORE trigger's NEW assignments are applied by a
 * second SQLite trigger, AFTER the row is written, that updates that row by its key. Anything
 * else (loops, dynamic SQL, cursors, PERFORM, exception blocks, local variables) is a 400
 * naming the construct.
 */

export type TriggerEvent = 'insert' | 'update' | 'delete';

export interface TriggerSpec {
  name: string;
  /** Physical table (`_svc_auth.users` for auth.users). */
  table: string;
  timing: 'before' | 'after';
  events: TriggerEvent[];
  /** UPDATE OF these columns (empty: any). */
  columns: string[];
  /** The WHEN condition's tree (Postgres'), or null. */
  when: PgNode | null;
}

export interface CompiledTrigger {
  /** SQLite statements that create it (its triggers are named `pe_trg_<table>_<name>_…`). */
  create: string[];
  /** Names of the SQLite triggers made. */
  names: string[];
  /** Tables its statements write. */
  writes: string[];
  /** The NEW fields a BEFORE trigger assigns (a NOT NULL one accepts NULL until then: src/sql/worker/relax-not-null.ts). */
  assigns: string[];
}

export const AUTH_USERS_PHYSICAL = '_svc_auth.users';

/** Rows whose BEFORE-trigger assignments are being applied (schema/project/0019_before_trigger_apply.sql). */
const APPLYING = '"_svc_meta.sql_applying"';

/** auth.users' columns as a trigger's NEW sees them, and where each is in the auth store's row. */
const AUTH_FIELDS: Record<string, { type: ColumnType['type']; sql: (r: string) => string }> = {
  id: { type: 'uuid', sql: (r) => `${r}."id"` },
  email: { type: 'text', sql: (r) => `${r}."email"` },
  phone: { type: 'text', sql: () => 'NULL' },
  created_at: { type: 'timestamptz', sql: (r) => `${r}."created_at"` },
  updated_at: { type: 'timestamptz', sql: (r) => `${r}."updated_at"` },
  last_sign_in_at: { type: 'timestamptz', sql: (r) => `${r}."last_sign_in_at"` },
  email_confirmed_at: { type: 'timestamptz', sql: (r) => `(CASE WHEN ${r}."email_verified" = 1 THEN ${r}."created_at" END)` },
  raw_user_meta_data: { type: 'jsonb', sql: (r) => `${r}."user_metadata"` },
  raw_app_meta_data: { type: 'jsonb', sql: (r) => `${r}."app_metadata"` },
  is_anonymous: { type: 'bool', sql: (r) => `${r}."is_anonymous"` },
};

const BUILTIN_VARS = new Set(['tg_name', 'tg_when', 'tg_level', 'tg_op', 'tg_relid', 'tg_relname', 'tg_table_name', 'tg_table_schema', 'tg_nargs', 'tg_argv', 'found']);

const REFUSED: Record<string, string> = {
  PLpgSQL_stmt_loop: 'LOOP',
  PLpgSQL_stmt_while: 'WHILE loops',
  PLpgSQL_stmt_fori: 'FOR loops',
  PLpgSQL_stmt_fors: 'FOR … IN query loops',
  PLpgSQL_stmt_forc: 'FOR … IN cursor loops',
  PLpgSQL_stmt_foreach_a: 'FOREACH loops',
  PLpgSQL_stmt_dynfors: 'FOR … IN EXECUTE loops',
  PLpgSQL_stmt_dynexecute: 'EXECUTE (dynamic SQL)',
  PLpgSQL_stmt_open: 'cursors (OPEN)',
  PLpgSQL_stmt_fetch: 'cursors (FETCH/MOVE)',
  PLpgSQL_stmt_close: 'cursors (CLOSE)',
  PLpgSQL_stmt_perform: 'PERFORM',
  PLpgSQL_stmt_call: 'CALL',
  PLpgSQL_stmt_case: 'CASE statements (write IF … ELSIF)',
  PLpgSQL_stmt_exit: 'EXIT/CONTINUE',
  PLpgSQL_stmt_return_next: 'RETURN NEXT',
  PLpgSQL_stmt_return_query: 'RETURN QUERY',
  PLpgSQL_stmt_getdiag: 'GET DIAGNOSTICS',
  PLpgSQL_stmt_assert: 'ASSERT',
  PLpgSQL_stmt_commit: 'COMMIT',
  PLpgSQL_stmt_rollback: 'ROLLBACK',
};

const refused = (what: string): EdgeError => unsupported(`${what} in a PL/pgSQL trigger function (supported: assignments to NEW fields, IF/ELSIF/ELSE, INSERT/UPDATE/DELETE, RAISE EXCEPTION, RETURN NEW|OLD|NULL)`);

/** Checks a PL/pgSQL function's body against the supported shape (at CREATE FUNCTION). */
export function checkPlpgsql(createText: string): void {
  body(createText);
}

interface Fn {
  action: unknown;
  datums: Array<[string, Record<string, unknown>]>;
}

function body(createText: string): Fn {
  const [, f] = kind(parsePlpgsql(createText));
  const datums = (Array.isArray(f.datums) ? f.datums : []).map((d) => kind(d));
  const fn = { action: f.action, datums };
  // note: statements first, so a loop or an exception block is named as such (both declare variables).
  walk(fn.action, fn);
  for (const [k, d] of datums) {
    if (k === 'PLpgSQL_var' && !BUILTIN_VARS.has(String(d.refname))) throw refused(`local variables (DECLARE ${String(d.refname)})`);
    if (k === 'PLpgSQL_row' || (k === 'PLpgSQL_rec' && !['new', 'old'].includes(String(d.refname)))) throw refused(`local variables (DECLARE ${String(d.refname ?? '')})`);
  }
  return fn;
}

function walk(stmts: unknown, fn: Fn): void {
  const list = Array.isArray(stmts) ? stmts : [stmts];
  for (const s of list) {
    const [k, f] = kind(s);
    if (REFUSED[k]) throw refused(REFUSED[k]);
    if (k === 'PLpgSQL_stmt_block') {
      if (f.exceptions) throw refused('EXCEPTION blocks');
      walk(f.body ?? [], fn);
    } else if (k === 'PLpgSQL_stmt_if') {
      walk(f.then_body ?? [], fn);
      for (const e of Array.isArray(f.elsif_list) ? f.elsif_list : []) walk(kind(e)[1].stmts ?? [], fn);
      walk(f.else_body ?? [], fn);
    } else if (!['PLpgSQL_stmt_assign', 'PLpgSQL_stmt_execsql', 'PLpgSQL_stmt_raise', 'PLpgSQL_stmt_return', 'PLpgSQL_stmt_null'].includes(k)) {
      throw refused(k.replace(/^PLpgSQL_stmt_/, '').toUpperCase());
    }
  }
}

// ---------------------------------------------------------------- PG tree helpers

const TRUE: PgNode = { A_Const: { boolval: { boolval: true } } };
const isTrue = (n: PgNode): boolean => n === TRUE;
const and = (a: PgNode, b: PgNode): PgNode => (isTrue(a) ? b : isTrue(b) ? a : { BoolExpr: { boolop: 'AND_EXPR', args: [a, b] } });
const not = (a: PgNode): PgNode => ({ BoolExpr: { boolop: 'NOT_EXPR', args: [a] } });
/** PL/pgSQL's IF reads NULL as false. */
const isTrueTest = (a: PgNode): PgNode => ({ BooleanTest: { arg: a, booltesttype: 'IS_TRUE' } });
const caseWhen = (cond: PgNode, then: PgNode, otherwise: PgNode): PgNode => ({ CaseExpr: { args: [{ CaseWhen: { expr: cond, result: then } }], defresult: otherwise } });
const NULL: PgNode = { A_Const: { isnull: true } };
const text = (s: string): PgNode => ({ A_Const: { sval: { sval: s } } });

/** An expression's tree: `SELECT <expr>`'s first target. */
function exprOf(sql: string): PgNode {
  const [, f] = kind(parseOne(`SELECT ${sql}`));
  const targets = f.targetList as unknown[] | undefined;
  if (!targets || targets.length !== 1 || f.fromClause) throw refused(`the expression ${sql.slice(0, 60)}`);
  return kind(targets[0])[1].val as PgNode;
}

// ---------------------------------------------------------------- compiling

interface Action {
  kind: 'sql' | 'raise' | 'skip';
  guard: PgNode;
  stmt?: PgNode;
  message?: string;
  params?: PgNode[];
}

interface State {
  event: TriggerEvent;
  spec: TriggerSpec;
  fn: Fn;
  env: Map<string, PgNode>;
  /** The condition under which the body has not returned yet. */
  live: PgNode;
  actions: Action[];
  fields: Set<string>;
}

/** Compiles one trigger of a function (its CREATE FUNCTION text) for a table. */
/** How a trigger's writes to rows-API tables reach the change log (triggers.ts). */
export interface ChangeLogging {
  insert(table: string): string | null;
  change(table: string, op: 'update' | 'delete', ids: string): { before: string; after: string } | null;
}
const NO_LOGGING: ChangeLogging = { insert: () => null, change: () => null };

export function compileTrigger(spec: TriggerSpec, createText: string, schema: SchemaLookup, log: ChangeLogging = NO_LOGGING, functions?: FunctionLookup): CompiledTrigger {
  const fn = body(createText);
  const auth = spec.table === AUTH_USERS_PHYSICAL;
  const columns: ColumnType[] | null = auth ? Object.entries(AUTH_FIELDS).map(([name, f]) => ({ name, type: f.type, ...(name === 'id' ? { pk: true } : {}) })) : schema(spec.table);
  if (!columns) throw new EdgeError('invalid_request', `relation "${spec.table}" does not exist`, { details: { sqlstate: '42P01' } });
  const fields = new Set(columns.map((c) => c.name));
  const out: CompiledTrigger = { create: [], names: [], writes: [], assigns: [] };
  for (const event of spec.events) {
    const st: State = { event, spec, fn, env: new Map(), live: TRUE, actions: [], fields };
    run(fn.action, TRUE, st);
    const base = `pe_trg_${spec.table}_${spec.name}_${event}`;
    const em = emitter(schema, columns, event, functions);
    const mark = `${APPLYING} WHERE tbl = ${quoteLiteral(spec.table)} AND rid = "new".rowid`;
    const head = (name: string, timing: string) => {
      const of = event === 'update' && spec.columns.length ? ` OF ${spec.columns.map(quoteIdent).join(', ')}` : '';
      const conds = spec.when ? [rowSql(em.expr(lowerExpr(substitute(spec.when, st)), []).sql, auth)] : [];
      // note: the UPDATE that applies a BEFORE trigger's assignments (below) fires no UPDATE trigger of the project's.
      if (event === 'update' && !auth) conds.push(`NOT EXISTS (SELECT 1 FROM ${mark})`);
      const when = conds.length ? ` WHEN ${conds.map((c) => (conds.length > 1 ? `(${c})` : c)).join(' AND ')}` : '';
      return `CREATE TRIGGER ${quoteIdent(name)} ${timing} ${event.toUpperCase()}${of} ON ${quoteIdent(spec.table)} FOR EACH ROW${when} BEGIN `;
    };
    const stmts = st.actions.map((a) => actionSql(a, em, auth, out.writes, log));
    if (stmts.length) {
      // note: each firing first counts against the statement's bound on trigger work (src/sql/trigger-bound.ts).
      out.create.push(`${head(base, spec.timing.toUpperCase())}${TRIGGER_STEP_SQL}; ${stmts.join('; ')}; END`);
      out.names.push(base);
    }
    // note: a BEFORE trigger's assignments to NEW: SQLite's NEW is read-only, so the written row is updated by its key right after.
    if (spec.timing === 'before' && event !== 'delete' && st.env.size) {
      if (auth) throw refused('assignments to NEW on auth.users');
      const key = columns.find((c) => c.pk)?.name ?? 'rowid';
      const sets: string[] = [];
      const differs: string[] = [];
      for (const [f, v] of st.env) {
        if (!out.assigns.includes(f)) out.assigns.push(f);
        const col = columns.find((c) => c.name === f)!;
        const e = em.coerce(em.expr(lowerExpr(v), []), col.type);
        sets.push(`${quoteIdent(f)} = ${e.sql}`);
        differs.push(`${quoteIdent(f)} IS NOT (${e.sql})`);
      }
      const name = `${base}_set`;
      const k = key === 'rowid' ? 'rowid' : quoteIdent(key);
      // note: only a row whose values change is written again (no second update, no change event, when the assignment changes nothing).
      const apply = `UPDATE ${quoteIdent(spec.table)} SET ${sets.join(', ')} WHERE ${k} = "new".${k} AND (${differs.join(' OR ')})`;
      out.create.push(`${head(name, 'AFTER')}${TRIGGER_STEP_SQL}; INSERT INTO ${APPLYING} (tbl, rid) VALUES (${quoteLiteral(spec.table)}, "new".rowid); ${apply}; DELETE FROM ${mark}; END`);
      out.names.push(name);
    }
  }
  out.create = out.create.map(finish);
  return out;
}

function emitter(schema: SchemaLookup, columns: ColumnType[], event: TriggerEvent, functions?: FunctionLookup): Emitter {
  const em = new Emitter({ schema, ...(functions ? { functions } : {}) });
  em.ambient = [
    ...(event === 'delete' ? [] : [{ alias: 'new', columns }]),
    ...(event === 'insert' ? [] : [{ alias: 'old', columns }]),
  ];
  return em;
}

/**
 * The markers of emitted SQL resolved for a trigger body: tables by name, no time limit, and the
 * caller as the writing request's (`new.user_id := auth.uid()`: pe_caller_*, src/sql/caller.ts).
 */
function finish(sql: string): string {
  return sql.replace(/\0([PTKA])([^\0]*)\0/g, (_, k: string, v: string) => {
    if (k === 'T') return quoteIdent(v);
    if (k === 'K') return '1';
    if (k === 'A') return CALLER_SQL[v as keyof typeof CALLER_SQL];
    throw refused('parameters');
  });
}

/** auth.users' NEW/OLD fields → the auth store's columns. */
function rowSql(sql: string, auth: boolean): string {
  if (!auth) return sql;
  return sql.replace(/"(new|old)"\."([a-z_]+)"/g, (m, r: string, f: string) => AUTH_FIELDS[f]?.sql(`"${r}"`) ?? m);
}

function run(stmts: unknown, guard: PgNode, st: State): void {
  const list = Array.isArray(stmts) ? stmts : [stmts];
  for (const s of list) {
    const [k, f] = kind(s);
    const g = and(guard, st.live);
    switch (k) {
      case 'PLpgSQL_stmt_block':
        run(f.body ?? [], guard, st);
        break;
      case 'PLpgSQL_stmt_null':
        break;
      case 'PLpgSQL_stmt_assign': {
        const [dk, d] = st.fn.datums[Number(f.varno ?? 0)] ?? ['', {}];
        const parent = st.fn.datums[Number(d.recparentno ?? 0)];
        if (dk !== 'PLpgSQL_recfield' || parent?.[1].refname !== 'new') throw refused('assignments other than to a NEW field');
        const field = String(d.fieldname);
        if (!st.fields.has(field)) throw noField('new', field);
        const q = String(kind(f.expr)[1].query ?? '');
        const value = substitute(exprOf(assignedValue(q)), st);
        const prev = st.env.get(field) ?? { ColumnRef: { fields: [{ String: { sval: 'new' } }, { String: { sval: field } }] } };
        st.env.set(field, isTrue(g) ? value : caseWhen(g, value, prev));
        break;
      }
      case 'PLpgSQL_stmt_if': {
        let rest: PgNode = TRUE;
        const branches: Array<[PgNode, unknown]> = [[isTrueTest(substitute(exprOf(String(kind(f.cond)[1].query)), st)), f.then_body ?? []]];
        for (const e of Array.isArray(f.elsif_list) ? f.elsif_list : []) {
          const [, ef] = kind(e);
          branches.push([isTrueTest(substitute(exprOf(String(kind(ef.cond)[1].query)), st)), ef.stmts ?? []]);
        }
        // note: every condition is read with NEW as it is before the IF (a branch's assignments do not change a later test).
        for (const [cond, body] of branches) {
          run(body, and(guard, and(rest, cond)), st);
          rest = and(rest, not(cond));
        }
        if (f.else_body) run(f.else_body, and(guard, rest), st);
        break;
      }
      case 'PLpgSQL_stmt_execsql': {
        const stmt = parseOne(String(kind(f.sqlstmt)[1].query));
        const [sk] = kind(stmt);
        if (!['InsertStmt', 'UpdateStmt', 'DeleteStmt'].includes(sk)) throw refused(sk === 'SelectStmt' ? 'SELECT (… INTO)' : sk);
        st.actions.push({ kind: 'sql', guard: g, stmt: substitute(stmt, st) });
        break;
      }
      case 'PLpgSQL_stmt_raise': {
        if (Number(f.elog_level) < 21) break; // note: NOTICE/WARNING/INFO/LOG/DEBUG reach no client here.
        if (f.options || f.condname) throw refused('RAISE … USING / RAISE with a condition name');
        const params = (Array.isArray(f.params) ? f.params : []).map((p) => substitute(exprOf(String(kind(p)[1].query)), st));
        st.actions.push({ kind: 'raise', guard: g, message: String(f.message ?? ''), params });
        break;
      }
      case 'PLpgSQL_stmt_return': {
        if (!f.expr && f.retvarno === undefined) {
          if (s === list[list.length - 1]) break; // note: the implicit RETURN PL/pgSQL appends.
        }
        const q = f.expr ? String(kind(f.expr)[1].query).trim().toLowerCase() : f.retvarno === 1 ? 'old' : 'new';
        if (!['null', 'new', 'old'].includes(q)) throw refused(`RETURN ${q}`);
        const skip = st.event === 'delete' ? q !== 'old' : q === 'null';
        if (q === 'old' && st.event === 'update' && st.spec.timing === 'before') throw refused('RETURN OLD in a BEFORE UPDATE trigger');
        if (skip && st.spec.timing === 'before') st.actions.push({ kind: 'skip', guard: g });
        st.live = and(st.live, isTrue(g) ? { A_Const: { boolval: { boolval: false } } } : not(g));
        break;
      }
      default:
        throw refused(k);
    }
  }
}

/** `new.f := expr` / `new.f = expr` → `expr`. */
function assignedValue(q: string): string {
  const ts = tokens(q);
  const at = ts.findIndex((t) => t.text === ':=' || t.text === '=');
  if (at < 0) throw refused('this assignment');
  return q.slice(ts[at]!.end);
}

const noField = (rec: string, field: string): EdgeError =>
  new EdgeError('invalid_request', `record "${rec}" has no field "${field}"`, { details: { sqlstate: '42703' } });

/**
 * A copy of a tree with NEW's assigned fields replaced by their current value, TG_OP and the
 * other TG_ variables by constants, and NEW (OLD) by NULL where the event has none.
 */
function substitute(n: PgNode, st: State): PgNode {
  const visit = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(visit);
    if (!v || typeof v !== 'object') return v;
    const o = v as Record<string, unknown>;
    if (o.ColumnRef) {
      const fields = ((o.ColumnRef as Record<string, unknown>).fields as unknown[]).map((x) => (kind(x)[0] === 'String' ? String(kind(x)[1].sval) : '*'));
      if (fields.length === 1) {
        const name = fields[0]!.toLowerCase();
        if (name === 'tg_op') return text(st.event.toUpperCase());
        if (name === 'tg_when') return text(st.spec.timing.toUpperCase());
        if (name === 'tg_table_name' || name === 'tg_relname') return text(st.spec.table === AUTH_USERS_PHYSICAL ? 'users' : st.spec.table);
        if (name === 'tg_name') return text(st.spec.name);
        if (name === 'tg_level') return text('ROW');
        if (name === 'tg_table_schema') return text(st.spec.table === AUTH_USERS_PHYSICAL ? 'auth' : 'public');
        if (name === 'new' || name === 'old') throw refused(`the whole record ${name.toUpperCase()} as a value`);
      }
      if (fields.length === 2 && (fields[0] === 'new' || fields[0] === 'old')) {
        const [rec, field] = fields as [string, string];
        if (field === '*') throw refused(`${rec}.*`);
        if (!st.fields.has(field)) throw noField(rec, field);
        if ((rec === 'new' && st.event === 'delete') || (rec === 'old' && st.event === 'insert')) return NULL;
        if (rec === 'new' && st.env.has(field)) return st.env.get(field);
      }
      return o;
    }
    const out: Record<string, unknown> = {};
    for (const k in o) out[k] = visit(o[k]);
    return out;
  };
  return visit(n) as PgNode;
}

/** One action as a statement of the SQLite trigger's body. */
function actionSql(a: Action, em: Emitter, auth: boolean, writes: string[], log: ChangeLogging): string {
  const guard = isTrue(a.guard) ? '1' : em.expr(lowerExpr(a.guard), []).sql;
  if (a.kind === 'skip') return rowSql(`SELECT RAISE(IGNORE) WHERE ${guard}`, auth);
  if (a.kind === 'raise') {
    const parts = a.message!.split('%');
    if (parts.length - 1 !== a.params!.length) throw new EdgeError('invalid_request', 'too few or too many parameters specified for RAISE', { details: { sqlstate: '42601' } });
    let msg = quoteLiteral(`pe_raise: ${parts[0]}`);
    a.params!.forEach((p, i) => {
      const e = em.expr(lowerExpr(p), []);
      msg += ` || coalesce(CAST(${e.sql} AS TEXT), '<NULL>') || ${quoteLiteral(parts[i + 1]!)}`;
    });
    return rowSql(`SELECT RAISE(ABORT, ${msg}) WHERE ${guard}`, auth);
  }
  const stmt = guarded(a.stmt!, a.guard);
  const node: Node = lowerStatement({ node: stmt, text: '', start: 0, index: 0 });
  const s = statement(node, em);
  if (s.steps.length !== 1) throw refused('this statement');
  if (s.effect) throw refused('DDL');
  const [k, f] = kind(stmt);
  const rel = rangeVar(f.relation as Record<string, unknown>);
  const target = em.physical(rel.db, rel.table);
  if (!writes.includes(target)) writes.push(target);
  const sql = rowSql(s.steps[0]!.sql, auth);
  if (k === 'InsertStmt') {
    const logged = log.insert(target);
    return logged ? `${sql}; ${logged}` : sql;
  }
  // note: the ids the statement changes, read before it runs (UPDATE … FROM / DELETE … USING: not logged on the rows API's paths).
  if (f.fromClause || f.usingClause) return sql;
  const name = rel.as ?? rel.table;
  const ids = em.select(lowerSelect({ SelectStmt: { targetList: [{ ResTarget: { val: { ColumnRef: { fields: [{ String: { sval: String(name) } }, { String: { sval: 'id' } }] } } } }], fromClause: [{ RangeVar: f.relation }], whereClause: f.whereClause, limitOption: 'LIMIT_OPTION_DEFAULT', op: 'SETOP_NONE' } }), []).sql;
  const around = log.change(target, k === 'UpdateStmt' ? 'update' : 'delete', rowSql(ids, auth));
  return around ? `${around.before}; ${sql}; ${around.after}` : sql;
}

/** A statement that runs only under `guard`: its WHERE (an INSERT's VALUES row becomes a SELECT … WHERE). */
function guarded(stmt: PgNode, guard: PgNode): PgNode {
  const [k, f] = kind(stmt);
  if (k === 'UpdateStmt' || k === 'DeleteStmt') {
    return { [k]: { ...f, whereClause: f.whereClause ? and(guard, f.whereClause as PgNode) : isTrue(guard) ? undefined : guard } };
  }
  const [, sf] = kind(f.selectStmt);
  const rows = Array.isArray(sf.valuesLists) ? sf.valuesLists : [];
  let select: PgNode;
  if (rows.length === 1) {
    const items = kind(rows[0])[1].items as unknown[];
    select = { SelectStmt: { targetList: items.map((val) => ({ ResTarget: { val } })), whereClause: guard, limitOption: 'LIMIT_OPTION_DEFAULT', op: 'SETOP_NONE' } };
  } else if (rows.length > 1) throw refused('INSERT of several VALUES rows');
  else if (!sf.op || sf.op === 'SETOP_NONE') {
    select = { SelectStmt: { ...sf, whereClause: sf.whereClause ? and(guard, sf.whereClause as PgNode) : guard } };
  } else throw refused('INSERT … of a set operation');
  return { InsertStmt: { ...f, selectStmt: select } };
}
