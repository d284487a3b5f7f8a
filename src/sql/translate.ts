import type { PolicyParam } from './table-model.js';
import { EdgeError } from '../core/errors.js';
import { lowerSelect } from './pg/lower.js';
import { parseScript } from './pg/parse.js';


/** How the translator names the row's columns. */
export interface ExprScope {
  /** SQL for a bare column name, or null when the table has no such column. */
  column(name: string): string | null;
  /** SQL for `col ->> 'a'` (or `col -> 'a' ->> 'b'`), or null when the column holds no JSON. */
  jsonPath(column: string, path: readonly string[]): string | null;
  /** Whether a column is boolean (it may then stand alone as a condition). */
  isBoolean?(name: string): boolean;
}

export interface TranslatedExpr {
  sql: string;
  params: PolicyParam[];
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
  return { sql: `(${sql})`, params: t.params };
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
  #nodes = 0;
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
    if (n.type === 'function' && fnName(n) === 'NOT') {
      const args = fnArgs(n);
      if (args.length !== 1) throw unsupported('NOT takes one operand');
      return `(NOT ${this.bool(args[0]!)})`;
    }
    if (n.type === 'bool') return n.value ? '1' : '0';
    // note: a boolean column on its own (`using (is_public)`, `not is_private`): true only when it is true, as in Postgres.
    if (n.type === 'column_ref' && (n.table === null || n.table === undefined) && this.scope.isBoolean?.(columnName(n))) return `(${this.column(n)} = 1)`;
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
        if (n.ast !== undefined) throw unsupported('subqueries are not allowed');
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
    if (n.table !== null && n.table !== undefined) throw unsupported('qualified column names are not allowed');
    const name = columnName(n);
    const sql = this.scope.column(name);
    if (sql === null) throw new EdgeError('invalid_request', `unknown column "${name}"`);
    return sql;
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
    if (cur.type === 'function') return this.authFn(cur, path);
    // `(select auth.jwt()) ->> 'email'`
    const sub = cur.type === undefined ? scalarAuthCall(cur) : null;
    if (sub?.type === 'function') return this.authFn(sub, path);
    if (cur.type !== 'column_ref') throw unsupported('JSON operators apply to a column');
    if (cur.table !== null && cur.table !== undefined) throw unsupported('qualified column names are not allowed');
    const name = columnName(cur);
    if (this.scope.column(name) === null) throw new EdgeError('invalid_request', `unknown column "${name}"`);
    const sql = this.scope.jsonPath(name, path);
    if (sql === null) throw unsupported(`column "${name}" does not hold JSON, or the path is invalid`);
    return sql;
  }

  authFn(n: Node, path: string[] | null): string {
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
        if (!path || path.length !== 1) break;
        return this.param({ k: 'jwt', claim: path[0]! });
    }
    throw unsupported('allowed functions: auth.uid(), auth.role(), auth.jwt() ->> \'claim\'');
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
