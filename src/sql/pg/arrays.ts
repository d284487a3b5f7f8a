import { EdgeError } from '../../core/errors.js';
import { emitCastTo } from './cast.js';
import { emitJsonValue } from './calls.js';
import { unsupported, type Emitter, type Expr, type Node, type Source } from './emit.js';
import { arrayOf, elementOf, isArrayType, type ArrayType, type PgType } from './types.js';

/**
 * Array values (docs/sql.md "Arrays"): one dimension, stored as a JSON array — text[] of
 * strings, int4[]/int8[]/float8[]/numeric[] of numbers, bool[] of true/false, uuid[] of
 * strings, null for a NULL element. `ARRAY[…]`, its element type and the polymorphic array
 * functions' typing.
 */

const NUMERIC_RANK: Partial<Record<PgType, number>> = { int4: 0, int8: 1, float8: 2, numeric: 3 };

/**
 * The element type Postgres resolves for values of these types (nulls and untyped literals
 * aside), or null when they have none in common here. As before, text and uuid values together
 * (or uuid alone) make text[].
 */
export function commonElement(types: ReadonlyArray<PgType | null>): PgType | null {
  const known = [...new Set(types.filter((t): t is PgType => t !== null && t !== 'unknown'))];
  if (!known.length) return 'text';
  if (known.every((t) => t === 'text' || t === 'uuid')) return 'text';
  if (known.every((t) => NUMERIC_RANK[t] !== undefined)) {
    const top = Math.max(...known.map((t) => NUMERIC_RANK[t]!));
    // note: Postgres: integers with a float8 make float8[], with a numeric numeric[].
    return (['int4', 'int8', 'float8', 'numeric'] as const)[top]!;
  }
  if (known.length === 1 && known[0] === 'bool') return 'bool';
  return null;
}

/** `ARRAY[a, b, …]`. */
export function emitArray(em: Emitter, n: Node, scope: Source[]): Expr {
  const items = ((n.expr_list as Node | undefined)?.value as Node[] | undefined) ?? [];
  if (!items.length) throw new EdgeError('invalid_request', 'cannot determine type of empty array', { details: { sqlstate: '42P18' } });
  const xs = items.map((x) => em.expr(x, scope));
  if (xs.some((x) => isArrayType(x.type))) throw unsupported('multidimensional arrays');
  const el = commonElement(xs.map((x) => x.type));
  const type = el ? arrayOf(el) : null;
  if (!el || !type) {
    const other = xs.find((x) => x.type !== null && x.type !== 'unknown')!;
    throw unsupported(`ARRAY[…] of ${String(other.type)} values (arrays here are of text, integers, numbers, booleans and uuids)`);
  }
  const parts = xs.map((x) => {
    const e = x.type === 'unknown' || (x.type !== el && el !== 'text') ? emitCastTo(em, x, el) : x;
    return el === 'bool' && e.sql !== 'NULL' ? emitJsonValue(em, e) : e.sql;
  });
  return { sql: `json_array(${parts.join(', ')})`, type, name: 'array' };
}

/** The array type an untyped argument (a literal `'{1,2}'`, a parameter) takes beside a typed one; text[] when neither says. */
export function arrayTypeOf(...types: ReadonlyArray<PgType | null>): ArrayType {
  for (const t of types) if (isArrayType(t)) return t;
  return 'text[]';
}


/** A value as the element type's name for the pe_jarr_* functions (text, or an ArrayElement). */
const elName = (t: ArrayType): string => elementOf(t);

/** `a || b` with an array on either side: concatenation, or an element appended or prepended. */
export function emitArrayConcat(em: Emitter, l: Expr, r: Expr): Expr {
  if (isArrayType(l.type) && (isArrayType(r.type) || r.type === 'unknown')) {
    const b = isArrayType(r.type) ? r : em.coerce(r, l.type);
    return { sql: em._fn('pe_jarr_cat', l.sql, b.sql), type: wider(l.type, b.type), name: '?column?' };
  }
  if (isArrayType(r.type) && l.type === 'unknown') {
    const a = em.coerce(l, r.type);
    return { sql: em._fn('pe_jarr_cat', a.sql, r.sql), type: r.type, name: '?column?' };
  }
  if (isArrayType(l.type)) return { sql: em._fn('pe_jarr_append', l.sql, r.sql, `'${elName(l.type)}'`), type: l.type, name: '?column?' };
  const a = r.type as ArrayType;
  return { sql: em._fn('pe_jarr_prepend', l.sql, r.sql, `'${elName(a)}'`), type: a, name: '?column?' };
}

/** The array type of two arrays' concatenation. */
function wider(a: ArrayType, b: PgType | null): ArrayType {
  if (!isArrayType(b) || a === b) return a;
  const el = commonElement([elementOf(a), elementOf(b)]);
  const t = el ? arrayOf(el) : null;
  if (!t) throw new EdgeError('invalid_request', `operator does not exist: ${a} || ${b}`, { details: { sqlstate: '42883' } });
  return t;
}

const ARRAY_FUNCTIONS = new Set(['array_append', 'array_prepend', 'array_cat', 'array_remove', 'array_position', 'array_length', 'cardinality', 'array_to_string']);

/**
 * The array functions over arrays other than text[] (whose entries are in catalog/more.ts and
 * everyday.ts): null when no argument is such an array, and the catalog takes the call.
 */
export function emitArrayFunction(em: Emitter, name: string, n: Node, scope: Source[]): Expr | null {
  if (!ARRAY_FUNCTIONS.has(name)) return null;
  const args = em._args(n);
  const xs = args.map((a) => em.expr(a, scope));
  const typed = xs.find((x) => isArrayType(x.type) && x.type !== 'text[]');
  if (!typed) {
    // note: the catalog emits the same arguments again: handed over, not emitted twice.
    args.forEach((a, i) => em.emitted.set(a, xs[i]!));
    return null;
  }
  const t = typed.type as ArrayType;
  const arity = (min: number, max = min): void => {
    if (xs.length < min || xs.length > max) throw new EdgeError('invalid_request', `function ${name} takes ${min === max ? min : `${min} to ${max}`} arguments`);
  };
  const arr = (i: number): string => (xs[i]!.type === 'unknown' ? em.coerce(xs[i]!, t).sql : xs[i]!.sql);
  const el = `'${elName(t)}'`;
  const r = (sql: string, type: PgType): Expr => ({ sql, type, name });
  switch (name) {
    case 'array_length':
      arity(2);
      return r(`(CASE WHEN ${em.coerce(xs[1]!, 'int4').sql} = 1 THEN nullif(json_array_length(${arr(0)}), 0) END)`, 'int4');
    case 'cardinality':
      arity(1);
      return r(`json_array_length(${arr(0)})`, 'int4');
    case 'array_append':
      arity(2);
      return r(em._fn('pe_jarr_append', arr(0), xs[1]!.sql, el), t);
    case 'array_prepend':
      arity(2);
      return r(em._fn('pe_jarr_prepend', xs[0]!.sql, arr(1), el), t);
    case 'array_cat':
      arity(2);
      return r(em._fn('pe_jarr_cat', arr(0), arr(1)), isArrayType(xs[0]!.type) && isArrayType(xs[1]!.type) ? wider(xs[0]!.type, xs[1]!.type) : t);
    case 'array_remove':
      arity(2);
      return r(em._fn('pe_jarr_remove', arr(0), xs[1]!.sql, el), t);
    case 'array_position':
      arity(2);
      return r(em._fn('pe_jarr_position', arr(0), xs[1]!.sql, el), 'int4');
    default:
      arity(2, 3);
      return r(em._fn('pe_jarr_to_string', arr(0), em.coerce(xs[1]!, 'text').sql, xs[2] ? em.coerce(xs[2], 'text').sql : 'NULL'), 'text');
  }
}
