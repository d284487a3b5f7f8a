import type { PolicyParam } from './table-model.js';
import { EdgeError } from '../core/errors.js';
import { lowerSelect } from './pg/lower.js';
import { parseScript } from './pg/parse.js';
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
}

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
 * and `auth.uid()`, `auth.role()`, `auth.jwt() ->> 'claim'`. Every literal becomes a bound
 * parameter; nothing from the source is copied into the SQL text except quoted, validated
 * identifiers produced by the scope. Anything else throws 400 `unsupported_sql`.
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
  return t.refs.size ? { sql: `(${sql})`, params: t.params, refs: [...t.refs] } : { sql: `(${sql})`, params: t.params };
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
  #nodes = 0;
  #frames: Frame[] = [];
  #aliases = 0;
  constructor(readonly scope: ExprScope) {}

  #count(): void {
    if (++this.#nodes > MAX_NODES) throw unsupported('the expression is too large');
  }

  /** A boolean-valued node. */
  bool(n: Node): string {
    this.#count();
    if (n.type === 'binary_expr') {
      const op = String(n.operator).toUpperCase();
      if (op === 'AND' || op === 'OR') return `(${this.bool(n.left as Node)} ${op} ${this.bool(n.right as Node)})`;
      return this.predicate(op, n);
    }
    if (n.type === 'unary_expr' && String(n.operator).toUpperCase() === 'NOT') return `(NOT ${this.bool(n.expr as Node)})`;
    if (n.type === 'unary_expr' && String(n.operator).toUpperCase() === 'EXISTS') {
      const q = (n.expr as Node | undefined)?.ast as Node | undefined;
      if (!q) throw unsupported('EXISTS takes a subquery');
      return `(EXISTS (${this.subquery(q, false)}))`;
    }
    if (n.type === 'function' && fnName(n) === 'NOT') {
      const args = fnArgs(n);
      if (args.length !== 1) throw unsupported('NOT takes one operand');
      return `(NOT ${this.bool(args[0]!)})`;
    }
    if (n.type === 'bool') return n.value ? '1' : '0';
    // note: a boolean column on its own (`using (is_public)`, `not is_private`): true only when it is true, as in Postgres.
    if (n.type === 'column_ref' && this.#isBoolean(n)) return `(${this.value(n)} = 1)`;
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
        return this.authFn(n, null);
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
      case 'var':
        throw unsupported('placeholders are not allowed: write the value, or auth.uid(), auth.role(), auth.jwt()');
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
    for (let i = this.#frames.length - 1; i >= 0; i--) {
      const f = this.#frames[i]!;
      if (q !== null ? f.alias !== q : !f.columns.has(name)) continue;
      return this.scope.isBoolean?.(name, f.table) ?? false;
    }
    return (q === null || q === this.scope.name) && (this.scope.isBoolean?.(name) ?? false);
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
    for (let i = this.#frames.length - 1; i >= 0; i--) {
      const f = this.#frames[i]!;
      if (q !== null ? f.alias !== q : !f.columns.has(name)) continue;
      if (!f.columns.has(name)) throw new EdgeError('invalid_request', `column ${q}.${name} does not exist`, { details: { sqlstate: '42703' } });
      return json(`${f.sql}.${quoteIdent(name)}`, f.columns.get(name));
    }
    if (q !== null && q !== this.scope.name) {
      throw new EdgeError('invalid_request', `missing FROM-clause entry for table "${q}"`, { details: { sqlstate: '42P01' } });
    }
    const sql = this.scope.column(name);
    if (sql === null) throw new EdgeError('invalid_request', `unknown column "${name}"`);
    const own = this.#frames.length ? `${quoteIdent(this.scope.name ?? '')}.${sql}` : sql;
    if (path === null) return own;
    const direct = this.scope.jsonPath(name, path);
    if (direct === null) throw unsupported(`column "${name}" does not hold JSON, or the path is invalid`);
    return this.#frames.length ? json(own, true) : direct;
  }

  /**
   * `(SELECT … FROM u [AS a][, …] [WHERE …])` of EXISTS, IN or a scalar subquery, over tables
   * the rows API lists. Each table is a `\0R<table>\0` marker, replaced when the catalog loads by
   * the table's RLS-filtered form (policy-expand.ts): the subquery reads as the caller, as in Postgres.
   */
  subquery(q: Node, oneColumn: boolean): string {
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
      this.refs.add(table);
      parts.push(`\0R${table}\0 AS ${sql}`);
      frames.push({ alias: typeof item.as === 'string' ? item.as : table, sql, columns, table });
    }
    this.#frames.push(...frames);
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
        cols = this.value(list[0]!.expr as Node);
      }
      const where = q.where ? ` WHERE ${this.bool(q.where as Node)}` : '';
      return `SELECT ${cols} FROM ${parts.join(', ')}${where}`;
    } finally {
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
