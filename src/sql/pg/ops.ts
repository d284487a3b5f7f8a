import { EdgeError } from '../../core/errors.js';
import { enumCast, enumCompare, enumKeyOf } from './types-ddl.js';
import { CALLER_SQL } from '../caller.js';
import { elementOf, isArrayType, type PgType } from './types.js';
import { emitArrayConcat } from './arrays.js';
import { ARITH, COMPARE, type Emitter, type Expr, type Node, type Source, callName, unsupported } from './emit.js';
import { emitCatalogOperator } from './calls.js';
import { emitCastTo } from './cast.js';

/** Operators: comparisons, IN, BETWEEN, IS, LIKE, JSON operators, ANY/ALL, arithmetic, unary. Free functions over the Emitter (emit.ts), one room of the emitter. */

export function emitBinary(em: Emitter, n: Node, scope: Source[]): Expr {
  const op = String(n.operator).toUpperCase();
  const left = n.left as Node;
  const right = n.right as Node;
  if (op === 'AND' || op === 'OR') {
    return { sql: `(${em.bool(left, scope)} ${op} ${em.bool(right, scope)})`, type: 'bool', name: '?column?' };
  }
  if (op === 'IN' || op === 'NOT IN') {
    const l = em.expr(left, scope);
    const items = right.value as Node[] | undefined;
    if (right.type !== 'expr_list' || !Array.isArray(items) || items.length === 0) throw unsupported('this IN form');
    if (items.length === 1 && items[0]!.ast) {
      const sub = em.select(items[0]!.ast as Node, scope);
      return { sql: `(${l.sql} ${op} (${sub.sql}))`, type: 'bool', name: '?column?' };
    }
    const vals = items.map((v) => em.coerce(em.expr(v, scope), l.type === 'unknown' ? null : l.type).sql);
    return { sql: `(${l.sql} ${op} (${vals.join(', ')}))`, type: 'bool', name: '?column?' };
  }
  if (op === 'BETWEEN' || op === 'NOT BETWEEN') {
    const l = em.expr(left, scope);
    const [a, b] = (right.value as Node[]).map((v) => em.coerce(em.expr(v, scope), l.type === 'unknown' ? null : l.type));
    // note: BETWEEN an enum's labels compares their positions (a literal must be a label, 22P02).
    const en = l.enum;
    if (en) {
      const k = (x: Expr): string => enumKeyOf(em, x.enum ? x : (enumCast(em, en, x) ?? x)) ?? x.sql;
      return { sql: `(${k(l)} ${op} ${k(a!)} AND ${k(b!)})`, type: 'bool', name: '?column?' };
    }
    return { sql: `(${l.sql} ${op} ${a!.sql} AND ${b!.sql})`, type: 'bool', name: '?column?' };
  }
  if (op === 'IS' || op === 'IS NOT') {
    const l = em.expr(left, scope);
    const not = op === 'IS NOT' ? ' NOT' : '';
    if (right.type === 'null') return { sql: `(${l.sql} IS${not} NULL)`, type: 'bool', name: '?column?' };
    if (right.type === 'bool') return { sql: `(${l.sql} IS${not} ${right.value ? '1' : '0'})`, type: 'bool', name: '?column?' };
    throw unsupported(`IS${not} with this operand`);
  }
  if (op === 'IS DISTINCT FROM' || op === 'IS NOT DISTINCT FROM') {
    const [l, r] = emitPair(em, left, right, scope);
    return { sql: `(${l.sql} ${op === 'IS DISTINCT FROM' ? 'IS NOT' : 'IS'} ${r.sql})`, type: 'bool', name: '?column?' };
  }
  if (op === 'LIKE' || op === 'NOT LIKE' || op === 'ILIKE' || op === 'NOT ILIKE') {
    const l = em.expr(left, scope);
    const r = em.expr(right, scope);
    if (right.type === 'binary_expr' && String(right.operator).toUpperCase() === 'ESCAPE') throw unsupported('LIKE … ESCAPE');
    const like = em._fn('pe_like', l.sql, r.sql, op.includes('ILIKE') ? '1' : '0');
    return { sql: op.startsWith('NOT') ? `(NOT ${like})` : like, type: 'bool', name: '?column?' };
  }
  if (COMPARE.has(op) && right.type === 'function') {
    const q = callName(right).name;
    if (q === 'any' || q === 'some' || q === 'all') return emitQuantified(em, op === '!=' ? '<>' : op, left, right, q === 'all', scope);
  }
  // note: after the forms above (IN, BETWEEN, IS, LIKE, op ANY/ALL), whose right side is not an operand.
  const catalogued = emitCatalogOperator(em, op, left, right, scope);
  if (catalogued) return catalogued;
  if (COMPARE.has(op)) {
    const [l, r] = emitPair(em, left, right, scope);
    const byLabel = enumCompare(em, op, l, r);
    if (byLabel) return { sql: byLabel, type: 'bool', name: '?column?' };
    if ((l.type === 'jsonb' || r.type === 'jsonb') && op !== '=' && op !== '<>' && op !== '!=') throw unsupported('ordering comparisons of jsonb');
    return { sql: `(${l.sql} ${op === '!=' ? '<>' : op} ${r.sql})`, type: 'bool', name: '?column?' };
  }
  if (op === '||') {
    const l = em.expr(left, scope);
    const r = em.expr(right, scope);
    if (isArrayType(l.type) || isArrayType(r.type)) return emitArrayConcat(em, l, r);
    if (l.type === 'jsonb' || r.type === 'jsonb') throw unsupported('|| on jsonb');
    return { sql: `(${emitTextOf(em, l)} || ${emitTextOf(em, r)})`, type: 'text', name: '?column?' };
  }
  if (op === '->' || op === '->>') {
    const l = em.expr(left, scope);
    const r = em.expr(right, scope);
    emitJsonOperand(em, l, op);
    const key = r.type === 'int4' || r.type === 'int8' ? r.sql : r.sql;
    // note: `default auth.jwt() ->> 'email'`: the registered pe_jget(t), on every project connection as pe_caller_jwt is.
    if (em.native && em.callerDefault && l.sql.includes(CALLER_SQL.jwt)) return { sql: `${op === '->' ? 'pe_jget' : 'pe_jgett'}(${l.sql}, ${key})`, type: op === '->' ? 'jsonb' : 'text', name: '?column?' };
    return { sql: em._fn(op === '->' ? 'pe_jget' : 'pe_jgett', l.sql, key), type: op === '->' ? 'jsonb' : 'text', name: op === '->' ? '?column?' : '?column?' };
  }
  if (op === '#>' || op === '#>>') {
    const l = em.expr(left, scope);
    const r = em.expr(right, scope);
    emitJsonOperand(em, l, op);
    return { sql: em._fn(op === '#>' ? 'pe_jpath' : 'pe_jpatht', l.sql, r.sql), type: op === '#>' ? 'jsonb' : 'text', name: '?column?' };
  }
  if (op === '@>' || op === '<@') {
    const l = em.coerce(em.expr(left, scope), 'jsonb');
    const r = em.coerce(em.expr(right, scope), 'jsonb');
    if (l.type !== 'jsonb' || r.type !== 'jsonb') throw unsupported(`${op} on non-jsonb values`);
    const [a, b] = op === '@>' ? [l, r] : [r, l];
    return { sql: em._fn('pe_jcontains', a.sql, b.sql), type: 'bool', name: '?column?' };
  }
  if (op === '?' || op === '?|' || op === '?&') {
    const l = em.expr(left, scope);
    const r = em.expr(right, scope);
    emitJsonOperand(em, l, op);
    const f = op === '?' ? 'pe_jexists' : op === '?|' ? 'pe_jexists_any' : 'pe_jexists_all';
    return { sql: em._fn(f, l.sql, r.sql), type: 'bool', name: '?column?' };
  }
  if (ARITH.has(op)) return emitArith(em, op, left, right, scope);
  if (op === '^') {
    // note: Postgres' power operator: float8 (numeric when an operand is numeric), as power().
    const l = em.expr(left, scope);
    const r = em.expr(right, scope);
    const type = l.type === 'numeric' || r.type === 'numeric' ? 'numeric' : 'float8';
    return { sql: em._fn('pe_power', l.sql, r.sql), type, name: '?column?' };
  }
  throw unsupported(`operator ${op}`);
}

/**
 * `x op ANY|SOME|ALL (array)`, with Postgres' three-valued result. An `ARRAY[…]` list becomes
 * the comparisons ORed (ANY) or ANDed (ALL), which is exactly that; an array known only when
 * the statement runs — a parameter (a JSON array, or a Postgres array literal '{a,b}') or a
 * `text[]` column — is read with json_each, its elements typed as x (as Postgres types an
 * untyped array by the comparison): ANY is true if some comparison is, else NULL if some
 * is NULL, else false (an empty array: false); ALL is false if some comparison is, else
 * NULL if some is NULL, else true.
 */
export function emitQuantified(em: Emitter, op: string, left: Node, right: Node, all: boolean, scope: Source[]): Expr {
  const kw = all ? 'ALL' : 'ANY';
  const args = em._args(right);
  if (args.length !== 1) throw new EdgeError('invalid_request', `${kw} takes one array`);
  const arg = args[0]!;
  if (arg.ast) throw unsupported(`${kw} (subquery): write IN (subquery) or EXISTS`);
  const r = (sql: string): Expr => ({ sql, type: 'bool', name: all ? 'all' : 'any' });
  if (arg.type === 'array') {
    const items = ((arg.expr_list as Node | undefined)?.value as Node[] | undefined) ?? [];
    if (!items.length) throw new EdgeError('invalid_request', 'cannot determine type of empty array');
    const cmps = items.map((item) => {
      const [l, e] = emitPair(em, left, item, scope);
      return `${l.sql} ${op} ${e.sql}`;
    });
    return r(`(${cmps.join(all ? ' AND ' : ' OR ')})`);
  }
  if (em.native) throw unsupported(`${kw} over a run-time array in DDL (write ARRAY[…] or IN (…))`);
  const l = em.expr(left, scope);
  let a = em.expr(arg, scope);
  if (a.type === 'unknown') a = em.coerce(a, 'text[]');
  if (!isArrayType(a.type)) throw unsupported(`${kw} over a ${String(a.type)} value (write an array column, a parameter or ARRAY[…])`);
  // note: a typed array's elements are of its type (x, if untyped, takes it); text[] elements take x's type.
  const typed = a.type !== 'text[]';
  const el = typed ? { sql: '"pe_el"."pe_v"', type: elementOf(a.type), name: 'value' } : em.coerce({ sql: '"pe_el"."pe_v"', type: 'unknown', name: 'value' }, l.type === 'unknown' ? null : l.type);
  const x = typed && l.type === 'unknown' ? em.coerce(l, el.type) : l;
  const cmp = `(${x.sql} ${op} ${el.sql})`;
  // note: json_each's own columns (id, key, value, …) are renamed away, so x's unqualified columns stay x's.
  const some = (cond: string) => `EXISTS (SELECT 1 FROM (SELECT "value" AS "pe_v" FROM json_each(${a.sql})) AS "pe_el" WHERE ${cond})`;
  return all
    ? r(`(CASE WHEN ${a.sql} IS NULL THEN NULL WHEN ${some(`NOT ${cmp}`)} THEN 0 WHEN ${some(`${cmp} IS NULL`)} THEN NULL ELSE 1 END)`)
    : r(`(CASE WHEN ${a.sql} IS NULL THEN NULL WHEN ${some(cmp)} THEN 1 WHEN ${some(`${cmp} IS NULL`)} THEN NULL ELSE 0 END)`);
}

export function emitJsonOperand(em: Emitter, e: Expr, op: string): void {
  if (e.type !== 'jsonb' && e.type !== 'json' && e.type !== null) throw unsupported(`${op} on a ${String(e.type)} value`);
}

export function emitTextOf(em: Emitter, e: Expr): string {
  if (e.type === 'bool' || e.type === 'timestamptz' || e.type === 'float8' || e.type === 'numeric') return emitCastTo(em, e, 'text').sql;
  return e.sql;
}

/** Two operands of a comparison, a literal side typed from the other side. */
export function emitPair(em: Emitter, left: Node, right: Node, scope: Source[]): [Expr, Expr] {
  let l = em.expr(left, scope);
  let r = em.expr(right, scope);
  if (l.type === 'unknown' && r.type && r.type !== 'unknown') l = em.coerce(l, r.type);
  else if (r.type === 'unknown' && l.type && l.type !== 'unknown') r = em.coerce(r, l.type);
  else if (l.type === 'timestamptz' && (r.type === 'date' || r.type === 'timestamp')) r = em.coerce(r, 'timestamptz');
  else if (r.type === 'timestamptz' && (l.type === 'date' || l.type === 'timestamp')) l = em.coerce(l, 'timestamptz');
  return [l, r];
}

export function emitArith(em: Emitter, op: string, left: Node, right: Node, scope: Source[]): Expr {
  let l = em.expr(left, scope);
  let r = em.expr(right, scope);
  const isTs = (t: PgType | null) => t === 'timestamptz' || t === 'timestamp' || t === 'date';
  const isInt = (t: PgType | null) => t === 'int4' || t === 'int8';
  // note: date ± integer is a date that many days away (Postgres' date arithmetic).
  if ((op === '+' || op === '-') && l.type === 'date' && isInt(r.type)) return { sql: `date(${l.sql}, (${op === '-' ? `-(${r.sql})` : r.sql}) || ' days')`, type: 'date', name: '?column?' };
  if (op === '+' && isInt(l.type) && r.type === 'date') return { sql: `date(${r.sql}, (${l.sql}) || ' days')`, type: 'date', name: '?column?' };
  if (r.type === 'unknown' && isTs(l.type) && (op === '+' || op === '-')) r = emitCastTo(em, r, 'interval');
  if ((op === '+' || op === '-') && isTs(l.type) && r.type === 'interval') {
    const base = l.type === 'date' ? em._fn('pe_ts', l.sql) : l.sql;
    return { sql: em._fn('pe_ts_add', base, r.sql, op === '+' ? '1' : '-1'), type: 'timestamptz', name: '?column?' };
  }
  if (op === '+' && l.type === 'interval' && isTs(r.type)) {
    return { sql: em._fn('pe_ts_add', r.sql, l.sql, '1'), type: 'timestamptz', name: '?column?' };
  }
  // note: interval * number and number * interval (`qty * interval '1 day'`), as Postgres' interval_mul.
  const isNumber = (t: PgType | null) => isInt(t) || t === 'float8' || t === 'numeric';
  if (op === '*' && !em.native && ((l.type === 'interval' && isNumber(r.type)) || (r.type === 'interval' && isNumber(l.type)))) {
    const [iv, k] = l.type === 'interval' ? [l, r] : [r, l];
    return { sql: em._fn('pe_interval_mul', iv.sql, k.sql), type: 'interval', name: '?column?' };
  }
  if (l.type === 'interval' || r.type === 'interval' || isTs(l.type) || isTs(r.type)) throw unsupported(`${op} on dates and intervals other than timestamptz ± interval and interval * number`);
  if (l.type === 'unknown') l = emitCastTo(em, l, r.type === 'float8' || r.type === 'numeric' ? 'float8' : 'int8');
  if (r.type === 'unknown') r = emitCastTo(em, r, l.type === 'float8' || l.type === 'numeric' ? 'float8' : 'int8');
  const isNum = (t: PgType | null) => t === null || t === 'int4' || t === 'int8' || t === 'float8' || t === 'numeric';
  if (!isNum(l.type) || !isNum(r.type)) throw unsupported(`${op} on ${String(l.type)} and ${String(r.type)}`);
  const type: PgType | null =
    l.type === null || r.type === null
      ? null
      : l.type === 'float8' || r.type === 'float8'
        ? 'float8'
        : l.type === 'numeric' || r.type === 'numeric'
          ? 'numeric'
          : l.type === 'int8' || r.type === 'int8'
            ? 'int8'
            : 'int4';
  if (op === '/' || op === '%') {
    // note: Postgres raises on division by zero; SQLite returns NULL. Made to raise.
    const div = `(CASE WHEN ${r.sql} = 0 THEN ${em.native ? 'NULL' : em._fn('pe_error', "'division by zero'")} ELSE ${r.sql} END)`;
    // note: Postgres has % for integers and numeric (the remainder takes the dividend's sign), none for double precision.
    if (op === '%' && type === 'float8') throw new EdgeError('invalid_request', 'operator does not exist: double precision % double precision', { details: { sqlstate: '42883' } });
    if (op === '%' && type === 'numeric') {
      if (em.native) throw unsupported('% on numeric in DDL');
      return { sql: em._fn('pe_mod', l.sql, r.sql), type, name: '?column?' };
    }
    // note: a numeric column holds a whole number as an INTEGER (SQLite's NUMERIC affinity), and
    // SQLite divides two integers as integers: 10 in a numeric column / 3 answered 3. A numeric or
    // double precision quotient divides as reals.
    const dividend = op === '/' && (type === 'numeric' || type === 'float8') ? `CAST(${l.sql} AS REAL)` : l.sql;
    return { sql: `(${dividend} ${op} ${div})`, type, name: '?column?' };
  }
  // note: numeric is exact in Postgres (0.1 + 0.2 = 0.3); here a double, so a sum, difference or product is rounded to 15 significant digits.
  if (type === 'numeric' && !em.native && (op === '+' || op === '-' || op === '*')) return { sql: em._fn('pe_num15', `(${l.sql} ${op} ${r.sql})`), type, name: '?column?' };
  return { sql: `(${l.sql} ${op} ${r.sql})`, type, name: '?column?' };
}

export function emitUnary(em: Emitter, n: Node, scope: Source[]): Expr {
  const op = String(n.operator).toUpperCase();
  if (op === 'NOT') return { sql: `(NOT ${em.bool(n.expr as Node, scope)})`, type: 'bool', name: '?column?' };
  if (op === '-') {
    const e = em.expr(n.expr as Node, scope);
    return { sql: `(- ${e.sql})`, type: e.type, name: '?column?' };
  }
  if (op === '+') return em.expr(n.expr as Node, scope);
  if (op === 'NOT EXISTS' || op === 'EXISTS') {
    const sub = n.expr as Node;
    if (!sub?.ast) throw unsupported(`${op} without a subquery`);
    const sql = `EXISTS (${em.select(sub.ast as Node, scope).sql})`;
    return { sql: op === 'NOT EXISTS' ? `(NOT ${sql})` : sql, type: 'bool', name: 'exists' };
  }
  throw unsupported(`unary operator ${op}`);
}
