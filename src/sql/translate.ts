import type { PolicyParam } from './table-model.js';
import { EdgeError } from '../core/errors.js';
import { lowerSelect } from './pg/lower.js';
import { parseScript } from './pg/parse.js';
import { FUNCTIONS } from './pg/catalog/core.js';
import { parseFunction, type FunctionLookup, type Parsed, type SqlFunction } from './pg/sql-functions.js';
import { isReservedName, reservedRefusal } from './pg/reserved.js';
import { jsonPathLiteral, JSON_KEY, quoteIdent } from './quote.js';


/** How the translator names the row's columns. */
export interface ExprScope {
  /** SQL for a bare column name, or null when the table has no such column. */
  column(name: string): string | null;
  /** SQL for `col ->> 'a'` (or `col -> 'a' ->> 'b'`), or null when the column holds no JSON. */
  jsonPath(column: string, path: readonly string[]): string | null;
  /** Whether a column (of the row's table, or of `table`) is boolean (it may then stand alone as a condition). */
  isBoolean?(name: string, table?: string): boolean;
  /** The row's table name (qualifies its columns inside subqueries; `t.col` at the top level). */
  name?: string;
  /**
   * Another table a subquery reads (`exists (select … from u …)`): its columns (name → holds
   * JSON). Throws for a table that does not exist or may not be read. Absent: no subqueries.
   */
  relation?(table: string): ReadonlyMap<string, boolean>;
  /** The stored LANGUAGE sql functions a policy may call (inlined, docs/sql.md "Functions in policies"). */
  functions?: FunctionLookup;
  /** A column's Postgres type name (of the row's table, or of `table`), for messages. */
  typeName?(name: string, table?: string): string | null;
}

/** An inlined function call: its parameters stand for the arguments, read in the caller's scope. */
interface Call {
  fn: SqlFunction;
  parsed: Parsed;
  args: Node[];
  /** The caller's scope: the frames it sees and whether it reads as the definer. */
  lo: number;
  hi: number;
  definer: boolean;
}

/** How deep LANGUAGE sql functions may call each other inside a policy. */
const MAX_CALL_DEPTH = 16;

/** A table a subquery reads: the name it is known by, its generated SQL alias, its columns. */
interface Frame {
  alias: string;
  sql: string;
  columns: ReadonlyMap<string, boolean>;
  /** The table it reads (for isBoolean). */
  table: string;
}

export interface TranslatedExpr {
  sql: string;
  params: PolicyParam[];
  /** Tables read by subqueries (the SQL marks each with `\0R<table>\0`). */
  refs?: string[];
  /** Stored functions inlined into it (their change recompiles it; dropping one is refused). */
  fns?: string[];
}

type Node = { type?: string; [k: string]: unknown };

const COMPARE: Record<string, string> = { '=': '=', '<>': '<>', '!=': '<>', '<': '<', '<=': '<=', '>': '>', '>=': '>=' };
const MAX_SOURCE = 4000;
const MAX_NODES = 500;

export const unsupported = (why: string): EdgeError => new EdgeError('unsupported_sql', why);

/**
 * Parses a Postgres boolean expression (PostgreSQL's parser, src/sql/pg/parse.ts) and
 * re-emits it as SQLite from an allowlist of node types: column refs, JSON `->`/`->>`,
 * comparisons, AND/OR/NOT, IS [NOT] NULL/TRUE/FALSE, [NOT] IN (list), [I]LIKE, literals
 * and `auth.uid()`, `auth.role()`, `auth.jwt() ->> 'claim'`, subqueries over the scope's
 * tables, and calls of the project's LANGUAGE sql functions (inlined: `#call`). Every literal
 * becomes a bound parameter; nothing from the source is copied into the SQL text except
 * quoted, validated identifiers produced by the scope. Anything else throws 400 `unsupported_sql`.
 */
export function translateExpr(source: string, scope: ExprScope): TranslatedExpr {
  if (typeof source !== 'string' || source.trim() === '') throw unsupported('the expression is empty');
  if (source.length > MAX_SOURCE) throw unsupported(`the expression is longer than ${MAX_SOURCE} characters`);
  let sel: Node | undefined;
  try {
    const stmts = parseScript(`SELECT 1 WHERE ${source}`);
    if (stmts.length !== 1) throw unsupported('the expression must be a single boolean expression');
    sel = lowerSelect(stmts[0]!.node);
  } catch (err) {
    if (err instanceof EdgeError && err.code === 'unsupported_sql' && (err.details as { construct?: unknown } | undefined)?.construct !== 'syntax') throw err;
    throw unsupported('the expression does not parse as a SQL boolean expression');
  }
  if (!sel || sel.type !== 'select' || sel._next !== undefined || sel.from != null || sel.groupby != null || sel.having != null || sel.orderby != null || sel.with != null || !sel.where) {
    throw unsupported('the expression must be a single boolean expression');
  }
  const t = new Translator(scope);
  const sql = t.bool(sel.where as Node);
  const out: TranslatedExpr = { sql: `(${sql})`, params: t.params };
  if (t.refs.size) out.refs = [...t.refs];
  if (t.fns.size) out.fns = [...t.fns];
  return out;
}

/** The `auth.x()` call of a subquery `(SELECT auth.x())` with nothing else in it, or null. */
function scalarAuthCall(n: Node): Node | null {
  const q = n.ast as Node | undefined;
  if (!q || q.type !== 'select' || q._next !== undefined || q.with != null || q.from != null || q.where != null || q.groupby != null || q.having != null || q.orderby != null) return null;
  const limit = q.limit as { value?: unknown[] } | null | undefined;
  if (limit?.value?.length) return null;
  const cols = q.columns as Node[] | undefined;
  if (!Array.isArray(cols) || cols.length !== 1) return null;
  const e = cols[0]!.expr as Node | undefined;
  // note: also `(select auth.jwt() ->> 'email')`, the same advice applied to a claim.
  let base = e;
  while (base?.type === 'binary_expr' && (base.operator === '->>' || base.operator === '->')) base = base.left as Node;
  const schema = ((base?.name as Node | undefined)?.schema as Node | undefined)?.value;
  return base?.type === 'function' && typeof schema === 'string' && schema.toLowerCase() === 'auth' ? e! : null;
}

class Translator {
  readonly params: PolicyParam[] = [];
  readonly refs = new Set<string>();
  readonly fns = new Set<string>();
  #nodes = 0;
  #frames: Frame[] = [];
  #aliases = 0;
  /** The inlined calls being translated, innermost last (names in a body are its parameters, never the row's). */
  #calls: Call[] = [];
  /** The first frame names resolve against (an inlined body's own, or 0). */
  #lo = 0;
  /** How deep in subqueries the SQL being written is (the row's columns are then qualified). */
  #depth = 0;
  /** Inside a SECURITY DEFINER body: tables are read as they are, without their RLS. */
  #definer = false;
  constructor(readonly scope: ExprScope) {}

  #count(): void {
    if (++this.#nodes > MAX_NODES) throw unsupported('the expression is too large');
  }

  /** A boolean-valued node. */
  bool(n: Node, ctx = 'POLICY'): string {
    this.#count();
    if (n.type === 'binary_expr') {
      const op = String(n.operator).toUpperCase();
      if (op === 'AND' || op === 'OR') return `(${this.bool(n.left as Node, op)} ${op} ${this.bool(n.right as Node, op)})`;
      return this.predicate(op, n);
    }
    if (n.type === 'unary_expr' && String(n.operator).toUpperCase() === 'NOT') return `(NOT ${this.bool(n.expr as Node, 'NOT')})`;
    if (n.type === 'unary_expr' && String(n.operator).toUpperCase() === 'EXISTS') {
      const q = (n.expr as Node | undefined)?.ast as Node | undefined;
      if (!q) throw unsupported('EXISTS takes a subquery');
      return `(EXISTS (${this.subquery(q, false)}))`;
    }
    if (n.type === 'function' && fnName(n) === 'NOT') {
      const args = fnArgs(n);
      if (args.length !== 1) throw unsupported('NOT takes one operand');
      return `(NOT ${this.bool(args[0]!, 'NOT')})`;
    }
    if (n.type === 'bool') return n.value ? '1' : '0';
    // note: a boolean column on its own (`using (is_public)`, `not is_private`): true only when it is true, as in Postgres.
    if (n.type === 'column_ref' && this.#isBoolean(n)) return `(${this.value(n)} = 1)`;
    // note: a boolean parameter of an inlined function (`$1`) on its own.
    if (n.type === 'var' && this.#param(n)?.type === 'bool') return `(${this.value(n)} = 1)`;
    if (n.type === 'function' && !isAuthCall(n)) return this.#call(n, ctx);
    throw unsupported(`unsupported boolean expression (${String(n.type)})`);
  }

  predicate(op: string, n: Node): string {
    const left = n.left as Node;
    const right = n.right as Node;
    const cmp = COMPARE[op];
    if (cmp) return `(${this.value(left)} ${cmp} ${this.value(right)})`;
    switch (op) {
      case 'IS':
      case 'IS NOT': {
        const not = op === 'IS NOT' ? ' NOT' : '';
        if (right.type === 'null') return `(${this.value(left)} IS${not} NULL)`;
        if (right.type === 'bool') return `(${this.value(left)} IS${not} ${right.value ? '1' : '0'})`;
        throw unsupported('IS takes NULL, TRUE or FALSE');
      }
      case 'IN':
      case 'NOT IN': {
        if (right.type !== 'expr_list' || !Array.isArray(right.value) || right.value.length === 0) {
          throw unsupported('IN takes a non-empty list of values');
        }
        const only = right.value.length === 1 ? ((right.value[0] as Node).ast as Node | undefined) : undefined;
        if (only) return `(${this.value(left)} ${op} (${this.subquery(only, true)}))`;
        // note: the left operand first: its parameters (`auth.role() IN (…)`) are bound before the list's.
        const l = this.value(left);
        const items = (right.value as Node[]).map((v) => this.value(v));
        return `(${l} ${op} (${items.join(', ')}))`;
      }
      case 'LIKE':
      case 'NOT LIKE':
      case 'ILIKE':
      case 'NOT ILIKE': {
        // note: SQLite's LIKE ignores ASCII case, so Postgres LIKE and ILIKE both become LIKE here (documented).
        const not = op.startsWith('NOT') ? 'NOT ' : '';
        return `(${this.value(left)} ${not}LIKE ${this.value(right)})`;
      }
    }
    throw unsupported(`unsupported operator ${op}`);
  }

  /** A scalar-valued node. */
  value(n: Node): string {
    this.#count();
    switch (n.type) {
      case 'column_ref':
        return this.column(n);
      case 'number': {
        const v = Number(n.value);
        if (!Number.isFinite(v)) throw unsupported('invalid number');
        return this.param({ k: 'lit', v });
      }
      case 'bigint': {
        const v = Number(n.value);
        if (!Number.isFinite(v)) throw unsupported('invalid number');
        return this.param({ k: 'lit', v });
      }
      case 'single_quote_string':
        return this.param({ k: 'lit', v: String(n.value).replaceAll("''", "'") });
      case 'null':
        return 'NULL';
      case 'bool':
        return n.value ? '1' : '0';
      case 'function':
        return isAuthCall(n) ? this.authFn(n, null) : this.#call(n, null);
      case undefined: {
        // note: `(select auth.uid())`, Supabase's advice for policies (Postgres then reads it once per
        // statement); here it is the same value as `auth.uid()`. Any other subquery stays refused.
        const inner = scalarAuthCall(n);
        if (inner) return inner.type === 'binary_expr' ? this.arrow(inner) : this.authFn(inner, null);
        if (n.ast !== undefined) return `(${this.subquery(n.ast as Node, true)})`;
        break;
      }
      case 'binary_expr': {
        const op = String(n.operator);
        if (op === '->>' || op === '->') return this.arrow(n);
        throw unsupported(`operator ${op} is not allowed here`);
      }
      case 'cast':
        throw unsupported('casts are not allowed');
      case 'var': {
        const call = this.#calls[this.#calls.length - 1];
        if (call && n.prefix === '$' && typeof n.name === 'number') {
          if (n.name < 1 || n.name > call.args.length) throw new EdgeError('invalid_request', `there is no parameter $${n.name}`, { details: { sqlstate: '42P02' } });
          return this.#arg(n.name - 1);
        }
        throw unsupported('placeholders are not allowed: write the value, or auth.uid(), auth.role(), auth.jwt()');
      }
    }
    throw unsupported(`unsupported value (${String(n.type)})`);
  }

  column(n: Node): string {
    return this.#resolve(n, columnName(n), null);
  }

  /** Whether a column reference (as #resolve finds it) names a bool column. */
  #isBoolean(n: Node): boolean {
    const q = n.table === null || n.table === undefined ? null : String(n.table);
    const name = columnName(n);
    for (let i = this.#frames.length - 1; i >= this.#lo; i--) {
      const f = this.#frames[i]!;
      if (q !== null ? f.alias !== q : !f.columns.has(name)) continue;
      return this.scope.isBoolean?.(name, f.table) ?? false;
    }
    const call = this.#calls[this.#calls.length - 1];
    if (call) return this.#paramAt(call, q, name)?.type === 'bool';
    return (q === null || q === this.scope.name) && (this.scope.isBoolean?.(name) ?? false);
  }

  /** The parameter of the innermost inlined call a name (or `fn.name`) stands for. */
  #paramAt(call: Call, q: string | null, name: string): { at: number; type: string | null } | null {
    if (q !== null && q !== call.fn.name) return null;
    const at = call.parsed.params.findIndex((p) => p.name === name.toLowerCase());
    return at < 0 ? null : { at, type: call.parsed.params[at]!.type };
  }

  /** The parameter `$n` of the innermost inlined call. */
  #param(n: Node): { type: string | null } | null {
    const call = this.#calls[this.#calls.length - 1];
    if (!call || n.prefix !== '$' || typeof n.name !== 'number') return null;
    return call.parsed.params[n.name - 1] ?? null;
  }

  /** An argument of the innermost inlined call, translated where the call was written (its frames, its definer-ness). */
  #arg(at: number): string {
    const call = this.#calls.pop()!;
    const saved = { lo: this.#lo, definer: this.#definer };
    // note: the body's frames are hidden while its argument is read (the SQL stays nested: #depth).
    const hidden = this.#frames.splice(call.hi);
    this.#lo = call.lo;
    this.#definer = call.definer;
    try {
      return this.value(call.args[at]!);
    } finally {
      this.#frames.push(...hidden);
      this.#lo = saved.lo;
      this.#definer = saved.definer;
      this.#calls.push(call);
    }
  }

  /**
   * A call of a stored LANGUAGE sql function, inlined: its body (`select <expr>`, or a
   * `select <col> from … where …` read as a scalar subquery) with each parameter standing for
   * its argument. A SECURITY DEFINER body reads its tables without their RLS; an invoker one
   * reads them as the caller, under their select policies (policy-expand.ts). `asBool`: the
   * construct the value is the argument of (`POLICY`, `AND` …), as Postgres names it when the
   * function is not boolean; null for a value.
   */
  #call(n: Node, asBool: string | null): string {
    this.#count();
    const schema = (n.name as { schema?: { value?: string } | null } | undefined)?.schema?.value;
    const name = fnName(n).toLowerCase();
    const args = fnArgs(n);
    if (schema !== undefined && schema.toLowerCase() !== 'public') throw unsupported(`function ${schema}.${name} is not allowed`);
    const fn = this.scope.functions?.(name) ?? null;
    const p = fn?.language === 'sql' ? parseFunction(fn.source) : null;
    if (!fn || (p && p.params.length !== args.length)) {
      if (!fn && (BUILTIN.test(name) || Object.hasOwn(FUNCTIONS, name))) throw unsupported(`function ${name} is not allowed`);
      const types = args.map((a) => this.#typeName(a)).join(', ');
      throw new EdgeError('invalid_request', `function ${schema ? `${schema}.` : ''}${name}(${types}) does not exist`, {
        details: { sqlstate: '42883', hint: 'No function matches the given name and argument types. You might need to add explicit type casts.' },
      });
    }
    if (!p) throw unsupported(`calling the ${fn.language} function ${fn.name}() in a policy (trigger functions run only as triggers)`);
    if (asBool !== null && p.returns !== 'bool') throw new EdgeError('invalid_request', `argument of ${asBool} must be type boolean, not type ${p.returnsName}`, { details: { sqlstate: '42804' } });
    if (this.#calls.length >= MAX_CALL_DEPTH) throw unsupported(`LANGUAGE sql functions calling each other more than ${MAX_CALL_DEPTH} deep in a policy (${name})`);
    const body = p.body;
    const cols = body.columns as Node[] | undefined;
    if (!Array.isArray(cols) || cols.length !== 1 || (cols[0]!.expr as Node | undefined)?.column === '*') throw unsupported(`the body of ${name}() in a policy selects one value`);
    this.fns.add(name);
    const saved = { lo: this.#lo, definer: this.#definer };
    this.#calls.push({ fn, parsed: p, args, lo: this.#lo, hi: this.#frames.length, definer: this.#definer });
    // note: the body sees its own FROM items and its parameters, never the policy's row; it reads as the definer when
    // it is SECURITY DEFINER or is called from a body that is (Postgres: the current user is then the owner).
    this.#lo = this.#frames.length;
    this.#definer = this.#definer || fn.definer === 1;
    const bool = asBool !== null || p.returns === 'bool';
    try {
      if (body.from == null) {
        if (body.where != null || body.groupby != null || body.having != null || body._next !== undefined || body.with != null) throw unsupported(`the body of ${name}() in a policy: a WHERE without FROM, GROUP BY, UNION or WITH`);
        const e = cols[0]!.expr as Node;
        return bool ? this.bool(e) : this.value(e);
      }
      const sub = this.subquery(body, true, bool);
      return bool ? `((${sub}) = 1)` : `(${sub})`;
    } finally {
      this.#calls.pop();
      this.#lo = saved.lo;
      this.#definer = saved.definer;
    }
  }

  /** An argument's Postgres type name, for a 42883 message as Postgres writes it. */
  #typeName(n: Node): string {
    switch (n.type) {
      case 'number':
        return Number.isInteger(Number(n.value)) ? 'integer' : 'numeric';
      case 'bigint':
        return 'bigint';
      case 'bool':
        return 'boolean';
      case 'column_ref': {
        const q = n.table === null || n.table === undefined ? null : String(n.table);
        const name = columnName(n);
        for (let i = this.#frames.length - 1; i >= this.#lo; i--) {
          const f = this.#frames[i]!;
          if (q !== null ? f.alias === q : f.columns.has(name)) return this.scope.typeName?.(name, f.table) ?? 'unknown';
        }
        return this.#calls.length === 0 ? (this.scope.typeName?.(name) ?? 'unknown') : 'unknown';
      }
      case 'function':
        return isAuthCall(n) && fnName(n).toLowerCase() === 'uid' ? 'uuid' : 'unknown';
      case 'binary_expr':
        return n.operator === '->>' ? 'text' : n.operator === '->' ? 'jsonb' : 'unknown';
    }
    return 'unknown';
  }

  /**
   * A column (or a JSON path into one), innermost subquery table first, then the row's own
   * table: `alias.col`, a bare `col`, or `t.col` naming the policy's table. Inside a subquery
   * the row's columns are qualified by its table name (a bare name would read the inner table).
   */
  #resolve(n: Node, name: string, path: string[] | null): string {
    const q = n.table === null || n.table === undefined ? null : String(n.table);
    const json = (col: string, holds: boolean | undefined): string => {
      if (path === null) return col;
      if (!holds || path.length === 0 || !path.every((p) => JSON_KEY.test(p))) throw unsupported(`column "${name}" does not hold JSON, or the path is invalid`);
      return `json_extract(${col}, ${jsonPathLiteral(path)})`;
    };
    for (let i = this.#frames.length - 1; i >= this.#lo; i--) {
      const f = this.#frames[i]!;
      if (q !== null ? f.alias !== q : !f.columns.has(name)) continue;
      if (!f.columns.has(name)) throw new EdgeError('invalid_request', `column ${q}.${name} does not exist`, { details: { sqlstate: '42703' } });
      return json(`${f.sql}.${quoteIdent(name)}`, f.columns.get(name));
    }
    const call = this.#calls[this.#calls.length - 1];
    if (call) {
      // note: in an inlined body a name that is not a column of its FROM items is one of its parameters (Postgres: columns win).
      const param = this.#paramAt(call, q, name);
      if (param && path === null) return this.#arg(param.at);
      if (param) throw unsupported(`JSON operators on the parameter ${name} of ${call.fn.name}() in a policy`);
      throw new EdgeError('invalid_request', `column ${q === null ? `"${name}"` : `${q}.${name}`} does not exist`, { details: { sqlstate: '42703' } });
    }
    if (q !== null && q !== this.scope.name) {
      throw new EdgeError('invalid_request', `missing FROM-clause entry for table "${q}"`, { details: { sqlstate: '42P01' } });
    }
    const sql = this.scope.column(name);
    if (sql === null) throw new EdgeError('invalid_request', `unknown column "${name}"`);
    const own = this.#depth ? `${quoteIdent(this.scope.name ?? '')}.${sql}` : sql;
    if (path === null) return own;
    const direct = this.scope.jsonPath(name, path);
    if (direct === null) throw unsupported(`column "${name}" does not hold JSON, or the path is invalid`);
    return this.#depth ? json(own, true) : direct;
  }

  /**
   * `(SELECT … FROM u [AS a][, …] [WHERE …])` of EXISTS, IN or a scalar subquery, over tables
   * the rows API lists. Each table is a `\0R<table>\0` marker, replaced when the catalog loads by
   * the table's RLS-filtered form (policy-expand.ts): the subquery reads as the caller, as in Postgres.
   */
  subquery(q: Node, oneColumn: boolean, boolColumn = false): string {
    this.#count();
    if (!this.scope.relation || !this.scope.name) throw unsupported('subqueries are not allowed here');
    if (q.type !== 'select' || q._next !== undefined || q.with != null) throw unsupported('a subquery in a policy is one SELECT (no UNION or WITH)');
    if (q.groupby != null || q.having != null || q.distinct != null || (q.limit as { value?: unknown[] } | null | undefined)?.value?.length) {
      throw unsupported('a subquery in a policy takes no GROUP BY, HAVING, DISTINCT or LIMIT');
    }
    const from = q.from as Node[] | null | undefined;
    if (!Array.isArray(from) || from.length === 0) throw unsupported('a subquery in a policy reads a table (FROM …)');
    const frames: Frame[] = [];
    const parts: string[] = [];
    for (const item of from) {
      if (item.join !== undefined || item.expr !== undefined || item.type !== undefined || typeof item.table !== 'string') {
        throw unsupported('a subquery in a policy reads tables listed in FROM (no JOIN, subquery or function there: write the condition in WHERE)');
      }
      const db = item.db === null || item.db === undefined ? null : String(item.db);
      const table = item.table;
      if ((db !== null && isReservedName(db)) || isReservedName(table)) throw reservedRefusal(db ? `${db}.${table}` : table);
      if (db !== null && db !== 'public') throw unsupported(`tables outside the public schema in policies ("${db}.${table}")`);
      const columns = this.scope.relation(table);
      const sql = quoteIdent(`pe_s${++this.#aliases}`);
      // note: a SECURITY DEFINER function's body reads the table as it is (Supabase's way out of a policy that would recurse).
      if (this.#definer) parts.push(`${quoteIdent(table)} AS ${sql}`);
      else {
        this.refs.add(table);
        parts.push(`\0R${table}\0 AS ${sql}`);
      }
      frames.push({ alias: typeof item.as === 'string' ? item.as : table, sql, columns, table });
    }
    this.#frames.push(...frames);
    this.#depth++;
    try {
      let cols = '1';
      if (!oneColumn) {
        // note: EXISTS ignores what its subquery selects, but Postgres still checks the names in it.
        const mark = this.params.length;
        for (const c of (q.columns as Node[] | undefined) ?? []) if ((c.expr as Node | undefined)?.column !== '*') this.value(c.expr as Node);
        this.params.length = mark;
      } else {
        const list = q.columns as Node[] | undefined;
        if (!Array.isArray(list) || list.length !== 1 || (list[0]!.expr as Node | undefined)?.column === '*') throw unsupported('a subquery used as a value returns one column');
        cols = boolColumn ? this.bool(list[0]!.expr as Node) : this.value(list[0]!.expr as Node);
      }
      const where = q.where ? ` WHERE ${this.bool(q.where as Node, 'WHERE')}` : '';
      return `SELECT ${cols} FROM ${parts.join(', ')}${where}`;
    } finally {
      this.#depth--;
      this.#frames.length -= frames.length;
    }
  }

  /** `col -> 'a' ->> 'b'` or `auth.jwt() ->> 'claim'`. */
  arrow(n: Node): string {
    const path: string[] = [];
    let cur: Node = n;
    while (cur.type === 'binary_expr' && (cur.operator === '->>' || cur.operator === '->')) {
      const key = cur.right as Node;
      if (key.type !== 'single_quote_string') throw unsupported('JSON operators take a quoted key');
      path.unshift(String(key.value).replaceAll("''", "'"));
      cur = cur.left as Node;
    }
    if (cur.type === 'function') return this.authFn(cur, path, n.operator === '->');
    // `(select auth.jwt()) ->> 'email'`
    const sub = cur.type === undefined ? scalarAuthCall(cur) : null;
    if (sub?.type === 'function') return this.authFn(sub, path, n.operator === '->');
    if (cur.type !== 'column_ref') throw unsupported('JSON operators apply to a column');
    return this.#resolve(cur, columnName(cur), path);
  }

  authFn(n: Node, path: string[] | null, json = false): string {
    const schema = (n.name as { schema?: { value?: string } } | undefined)?.schema?.value;
    const name = fnName(n);
    if (schema?.toLowerCase() !== 'auth' || fnArgs(n).length !== 0) throw unsupported(`function ${name} is not allowed`);
    switch (name.toLowerCase()) {
      case 'uid':
        if (path) break;
        return this.param({ k: 'uid' });
      case 'role':
        if (path) break;
        return this.param({ k: 'role' });
      case 'jwt':
        if (!path || path.length === 0 || path.length > 8) break;
        // note: one `->>` step keeps the stored form of main's policies ({k, claim}).
        if (path.length === 1 && !json) return this.param({ k: 'jwt', claim: path[0]! });
        return this.param(json ? { k: 'jwt', claim: path[0]!, path: path.slice(1), json } : { k: 'jwt', claim: path[0]!, path: path.slice(1) });
    }
    throw unsupported('allowed functions: auth.uid(), auth.role(), auth.jwt() ->> \'claim\' (or -> \'a\' ->> \'b\')');
  }

  param(p: PolicyParam): string {
    this.params.push(p);
    return '?';
  }
}

/** Names a built-in function rather than one of the project's (a clearer refusal than "does not exist"). */
const BUILTIN = /^(lower|upper|coalesce|now|length|char_length|trim|concat|abs|round|nullif|greatest|least|current_setting|current_user|session_user|array_length|cardinality|jsonb_array_length|to_char|date_trunc|extract|any|all)$/;

function isAuthCall(n: Node): boolean {
  const schema = (n.name as { schema?: { value?: string } | null } | undefined)?.schema?.value;
  return typeof schema === 'string' && schema.toLowerCase() === 'auth';
}

function fnName(n: Node): string {
  const parts = (n.name as { name?: Array<{ value?: string }> } | undefined)?.name;
  return parts?.map((p) => p.value ?? '').join('.') ?? '';
}

function fnArgs(n: Node): Node[] {
  const args = n.args as { value?: Node[] } | undefined;
  return args?.value ?? [];
}

function columnName(n: Node): string {
  const col = n.column as { expr?: { value?: unknown } } | string;
  const name = typeof col === 'string' ? col : col?.expr?.value;
  if (typeof name !== 'string') throw unsupported('invalid column reference');
  return name;
}
