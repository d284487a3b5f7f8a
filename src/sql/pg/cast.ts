import { EdgeError } from '../../core/errors.js';
import { quoteLiteral } from '../quote.js';
import { type ArrayType, elementOf, isArrayType, type PgType, pgTypeOf, typeNameOf } from './types.js';
import { toArray, type ArrayElement } from '../functions-arrays.js';
import { enumCast } from './types-ddl.js';
import { type Emitter, type Expr, type Node, type Source, literalText, typeLabel, unsupported } from './emit.js';

/** Casts (`x::t`, typed literals) and type modifiers. Free functions over the Emitter (emit.ts), one room of the emitter. */

/** `e::to`. */
export function emitCastTo(em: Emitter, e: Expr, to: PgType): Expr {
  const r = (sql: string): Expr => ({ sql, type: to, name: e.name === '?column?' ? typeLabel(to) : e.name });
  if (e.sql === 'NULL') return r('NULL');
  switch (to) {
    case 'int4':
    case 'int8':
      if (e.type === 'int4' || (e.type === 'int8' && to === 'int8')) return r(e.sql);
      if (e.type === 'bool') return r(e.sql);
      if (to === 'int4' && /^-?\d+$/.test(e.sql)) {
        // note: an integer literal is checked here, as Postgres does when it folds the cast (22003).
        const v = BigInt(e.sql);
        if (v > 2147483647n || v < -2147483648n) throw new EdgeError('invalid_request', 'integer out of range');
        return r(e.sql);
      }
      return r(em._fn(to === 'int4' ? 'pe_int4' : 'pe_int', e.sql));
    case 'float8':
    case 'numeric':
      if (e.type === 'int4' || e.type === 'int8' || e.type === 'float8' || e.type === 'numeric') return r(`CAST(${e.sql} AS REAL)`);
      return r(em._fn('pe_float', e.sql));
    case 'text':
      if (e.type === 'bool') return r(`CASE WHEN ${e.sql} IS NULL THEN NULL WHEN ${e.sql} THEN 'true' ELSE 'false' END`);
      if (e.type === 'timestamptz') return r(em._fn('pe_ts_text', e.sql));
      if (e.type === 'float8' || e.type === 'numeric') return r(em._fn('pe_float_text', e.sql));
      // note: an array as Postgres prints it ({1,2,NULL}, "quoted" where needed, t/f), not its JSON.
      if (isArrayType(e.type)) return r(em._fn('pe_array_text', e.sql));
      return r(`CAST(${e.sql} AS TEXT)`);
    case 'bool':
      if (e.type === 'bool') return r(e.sql);
      if (e.type === 'int4' || e.type === 'int8') return r(`(${e.sql} <> 0)`);
      if (em.native && /^'(t|true|f|false)'$/i.test(e.sql)) return r(/^'t/i.test(e.sql) ? '1' : '0');
      return r(em._fn('pe_bool', e.sql));
    case 'timestamptz':
    case 'timestamp':
      if (e.type === 'timestamptz' || e.type === 'timestamp') return r(e.sql);
      return r(em._fn('pe_ts', e.sql));
    case 'date':
      return r(em._fn('pe_date', e.sql));
    case 'jsonb':
    case 'json':
      if (e.type === 'jsonb' || e.type === 'json') return r(e.sql);
      if (em.native) {
        const lit = literalText(e.sql);
        if (lit === null) throw unsupported('non-literal JSON in DDL');
        try {
          return r(quoteLiteral(JSON.stringify(JSON.parse(lit))));
        } catch {
          throw new EdgeError('invalid_request', 'invalid input syntax for type json');
        }
      }
      if (e.type === 'unknown' || e.type === 'text') return r(em._fn('pe_jsonb', e.sql));
      throw unsupported(`cast from ${String(e.type)} to ${to}`);
    case 'uuid':
      if (e.type === 'uuid') return r(e.sql);
      return r(em._fn('pe_uuid', e.sql));
    case 'text[]':
      if (e.type === 'text[]') return r(e.sql);
      if (em.native) {
        const lit = literalText(e.sql);
        if (lit === '{}') return r(`'[]'`);
        throw unsupported('non-empty array literals in DDL');
      }
      return r(em._fn('pe_text_array', e.sql));
    case 'int4[]':
    case 'int8[]':
    case 'float8[]':
    case 'numeric[]':
    case 'bool[]':
    case 'uuid[]':
      return r(castToArray(em, e, to));
    case 'interval':
      if (e.type === 'unknown' && literalText(e.sql) !== null) return { sql: e.sql, type: 'interval', name: 'interval' };
      throw unsupported('interval values other than literals');
    case 'bytea':
      throw unsupported('casts to bytea');
  }
  throw unsupported(`cast to ${to}`);
}

export function emitCast(em: Emitter, n: Node, scope: Source[]): Expr {
  const tail = n.tail as { operator?: string; expr?: Node } | undefined;
  if (tail?.operator) {
    // note: `a::t + b` arrives as the cast with the rest of the expression in `tail`.
    return em.expr({ type: 'binary_expr', operator: tail.operator, left: { ...n, tail: undefined }, right: tail.expr }, scope);
  }
  const target = (n.target as Node[] | undefined)?.[0];
  if (!target || (n.target as Node[]).length !== 1) throw unsupported('this cast');
  const typeName = typeNameOf(target);
  const to = pgTypeOf(typeName);
  if (!to) {
    const en = enumCast(em, typeName, em.expr(n.expr as Node, scope));
    if (en) return en;
    throw unsupported(`type ${typeName.toLowerCase()}`);
  }
  const inner = n.expr as Node;
  const items = inner?.type === 'array' ? ((inner.expr_list as Node | undefined)?.value as Node[] | undefined) : undefined;
  // note: `array[]::text[]`: an empty array takes its type from the cast.
  if (inner?.type === 'array' && !items?.length && isArrayType(to)) return { sql: `'[]'`, type: to, name: 'array' };
  const e = em.expr(inner, scope);
  // note: an explicit cast to bigint names bigint in its errors (a comparison's coercion says integer).
  if (to === 'int8' && e.type !== 'int4' && e.type !== 'int8' && e.type !== 'bool' && e.sql !== 'NULL') {
    return { sql: em._fn('pe_int8', e.sql), type: 'int8', name: e.name === '?column?' ? typeLabel('int8') : e.name };
  }
  return emitTypmod(em, emitCastTo(em, e, to), target);
}

/**
 * What a cast's type modifier does in Postgres, which SQLite's types do not: `varchar(n)`
 * truncates to n characters, `char(n)` (n = 1 without one) truncates and pads with blanks,
 * `numeric(p, s)` rounds to s places and fails past p digits ("numeric field overflow").
 */
export function emitTypmod(em: Emitter, e: Expr, target: Node): Expr {
  const dt = String(target.dataType ?? '').toUpperCase().replace(/\s+/g, ' ');
  const len = typeof target.length === 'number' ? target.length : null;
  if (e.sql === 'NULL') return e;
  if ((dt === 'VARCHAR' || dt === 'CHARACTER VARYING') && len !== null) return { ...e, sql: `substr(${e.sql}, 1, ${len})` };
  if (dt === 'CHAR' || dt === 'CHARACTER') {
    const n = len ?? 1;
    return { ...e, sql: `(CASE WHEN ${e.sql} IS NULL THEN NULL ELSE printf('%-!${n}.${n}s', ${e.sql}) END)` };
  }
  if ((dt === 'NUMERIC' || dt === 'DECIMAL') && len !== null) {
    const scale = typeof target.scale === 'number' ? target.scale : 0;
    const rounded = `round(${e.sql}, ${scale})`;
    return { ...e, sql: em._fn('pe_numeric_fits', rounded, String(len - scale)) };
  }
  return e;
}

export function emitInterval(em: Emitter, n: Node): Expr {
  const e = n.expr as Node;
  if (e?.type !== 'single_quote_string') throw unsupported('interval values other than literals');
  const unit = typeof n.unit === 'string' && n.unit ? ` ${n.unit}` : '';
  return { sql: quoteLiteral(String(e.value).replaceAll("''", "'") + unit), type: 'interval', name: 'interval' };
}

/** The SQL of `e` as an array of numbers, booleans or uuids (docs/sql.md "Arrays"): elements checked as Postgres checks them. */
function castToArray(em: Emitter, e: Expr, to: ArrayType): string {
  const el = elementOf(to) as ArrayElement;
  if (e.type === to) return e.sql;
  // note: JSON numbers are already numbers of the wider types.
  if (e.type === 'int4[]' && (to === 'int8[]' || to === 'numeric[]' || to === 'float8[]')) return e.sql;
  if ((e.type === 'numeric[]' || e.type === 'float8[]') && (to === 'numeric[]' || to === 'float8[]')) return e.sql;
  if (e.type !== 'unknown' && e.type !== 'text' && !isArrayType(e.type)) {
    throw new EdgeError('invalid_request', `cannot cast type ${String(e.type)} to ${to}`, { details: { sqlstate: '42846' } });
  }
  if (em.native) {
    // note: in DDL (a default) the literal is converted now: the table stays writable from any connection.
    const lit = literalText(e.sql);
    if (lit === null) throw unsupported('non-literal arrays in DDL');
    try {
      return quoteLiteral(toArray(lit, el)!);
    } catch (err) {
      throw new EdgeError('invalid_request', String((err as Error).message).replace(/^pe_invalid_input: /, ''), { details: { sqlstate: '22P02' } });
    }
  }
  return em._fn(`pe_${el}_array`, e.sql);
}
