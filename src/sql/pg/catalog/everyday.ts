/**
 * The everyday functions and operators of issue 17 item 4, as catalog entries: each emits
 * SQLite from its already-emitted (and coerced) arguments. The SQLite functions they call
 * are in src/sql/functions-everyday.ts and src/sql/functions-formats.ts (`registered`),
 * the rest are plain SQLite. docs/sql.md "Functions" lists them with their differences.
 */
import { EdgeError } from '../../../core/errors.js';
import { isArrayType, type PgType } from '../types.js';
import type { Arg, CatalogFunction, Emitted } from './types.js';

const call = (name: string, ...args: string[]): string => `${name}(${args.join(', ')})`;
const isInt = (t: PgType | null): boolean => t === 'int4' || t === 'int8';
const isTime = (t: PgType | null): boolean => t === 'timestamptz' || t === 'timestamp' || t === 'date';

/** The type of a numeric result from its arguments: float8 wins, then numeric; `ints` when all are integers. */
function numericOf(args: readonly Arg[], ints: PgType | 'float8' | 'numeric'): PgType {
  if (args.some((a) => a.type === 'float8')) return 'float8';
  if (args.some((a) => a.type === 'numeric' || a.type === 'unknown' || a.type === null)) return 'numeric';
  if (ints === 'int4' || ints === 'int8') return args.some((a) => a.type === 'int8') ? 'int8' : 'int4';
  return ints;
}

/** A value as text the way Postgres prints it inside text functions (booleans t/f, timestamps with +00). */
function textOf(a: Arg): string {
  switch (a.type) {
    case 'bool':
      return `(CASE WHEN ${a.sql} IS NULL THEN NULL WHEN ${a.sql} THEN 't' ELSE 'f' END)`;
    case 'timestamptz':
      return call('pe_ts_text', a.sql);
    case 'float8':
      return call('pe_float_text', a.sql);
    default:
      return a.sql;
  }
}

/** A value as jsonb text (to_jsonb). */
function jsonOf(a: Arg): string {
  switch (a.type) {
    case 'bool':
      return `(CASE WHEN ${a.sql} IS NULL THEN NULL WHEN ${a.sql} THEN 'true' ELSE 'false' END)`;
    case 'jsonb':
    case 'json':
    case 'text[]':
      return a.sql;
    case 'timestamptz':
      return call('json_quote', call('pe_ts_json', a.sql));
    case 'int4':
    case 'int8':
    case 'float8':
    case 'numeric':
      return `(CASE WHEN ${a.sql} IS NULL THEN NULL ELSE json_quote(${a.sql}) END)`;
    default:
      return `(CASE WHEN ${a.sql} IS NULL THEN NULL ELSE json_quote(CAST(${a.sql} AS TEXT)) END)`;
  }
}

const fixed = (type: PgType, name: string, arity: [number, number], args: readonly (PgType | null)[], registered = true): CatalogFunction => ({
  arity,
  args,
  registered,
  emit: (xs) => ({ sql: call(name, ...xs.map((x) => x.sql)), type }),
});

/** A floating function: float8 unless an argument is numeric (Postgres has both; an integer takes float8). */
const floating = (name: string): CatalogFunction => ({
  arity: [1, 1],
  registered: true,
  emit: ([x]) => ({ sql: call(name, x!.sql), type: x!.type === 'numeric' || x!.type === 'unknown' ? 'numeric' : 'float8' }),
});

/** date_part / extract: a field of a timestamp, date or interval. */
const part = (type: PgType): CatalogFunction => ({
  arity: [2, 2],
  args: ['text', null],
  registered: true,
  emit: ([f, x]): Emitted => {
    if (x!.type === 'interval') return { sql: call('pe_interval_part', call('lower', f!.sql), x!.sql), type };
    if (x!.type !== null && !isTime(x!.type) && x!.type !== 'unknown') throw new EdgeError('invalid_request', `function date_part(text, ${x!.type}) does not exist`);
    const ts = x!.type === 'timestamptz' ? x!.sql : call('pe_ts', x!.sql);
    return { sql: call('pe_extract', call('lower', f!.sql), ts), type };
  },
});

const power: CatalogFunction = {
  arity: [2, 2],
  registered: true,
  emit: (xs) => ({ sql: call('pe_power', xs[0]!.sql, xs[1]!.sql), type: xs.some((x) => x.type === 'numeric') ? 'numeric' : 'float8' }),
};

export const EVERYDAY: Record<string, CatalogFunction> = {
  // ---- numbers
  mod: { arity: [2, 2], registered: true, emit: (xs) => ({ sql: call('pe_mod', xs[0]!.sql, xs[1]!.sql), type: numericOf(xs, 'int4') }) },
  div: fixed('numeric', 'pe_div', [2, 2], [null, null]),
  power,
  pow: power,
  sqrt: floating('pe_sqrt'),
  cbrt: { arity: [1, 1], registered: true, emit: ([x]) => ({ sql: call('pe_cbrt', x!.sql), type: 'float8' }) },
  exp: floating('pe_exp'),
  ln: floating('pe_ln'),
  log: {
    arity: [1, 2],
    registered: true,
    emit: (xs) =>
      xs.length === 1 ? { sql: call('pe_log10', xs[0]!.sql), type: xs[0]!.type === 'numeric' ? 'numeric' : 'float8' } : { sql: call('pe_logb', xs[0]!.sql, xs[1]!.sql), type: 'numeric' },
  },
  log10: floating('pe_log10'),
  sign: floating('pe_sign'),
  trunc: {
    arity: [1, 2],
    registered: true,
    emit: (xs) => ({ sql: call('pe_trunc', xs[0]!.sql, xs[1]?.sql ?? '0'), type: xs.length === 1 && xs[0]!.type === 'float8' ? 'float8' : 'numeric' }),
  },
  /** round: numeric half away from zero; float8 (and integers, which Postgres reads as float8) half to even. */
  round: {
    arity: [1, 2],
    args: [null, 'int4'],
    registered: true,
    emit: (xs) => {
      const x = xs[0]!;
      if (xs.length === 1 && (x.type === 'float8' || isInt(x.type))) return { sql: call('pe_round_even', x.sql), type: 'float8' };
      return { sql: call('pe_round', x.sql, xs[1]?.sql ?? '0'), type: 'numeric' };
    },
  },
  greatest: { arity: [1, Infinity], registered: true, emit: (xs) => ({ sql: call('pe_greatest', ...xs.map((x) => x.sql)), type: commonType(xs) }) },
  least: { arity: [1, Infinity], registered: true, emit: (xs) => ({ sql: call('pe_least', ...xs.map((x) => x.sql)), type: commonType(xs) }) },

  // ---- text
  /** position(substring IN string) arrives as position(string, substring), Postgres' own order. */
  position: fixed('int4', 'instr', [2, 2], ['text', 'text'], false),
  strpos: fixed('int4', 'instr', [2, 2], ['text', 'text'], false),
  left: fixed('text', 'pe_left', [2, 2], ['text', 'int4']),
  right: fixed('text', 'pe_right', [2, 2], ['text', 'int4']),
  lpad: fixed('text', 'pe_lpad', [2, 3], ['text', 'int4', 'text']),
  rpad: fixed('text', 'pe_rpad', [2, 3], ['text', 'int4', 'text']),
  repeat: fixed('text', 'pe_repeat', [2, 2], ['text', 'int4']),
  reverse: fixed('text', 'pe_reverse', [1, 1], ['text']),
  split_part: fixed('text', 'pe_split_part', [3, 3], ['text', 'text', 'int4']),
  initcap: fixed('text', 'pe_initcap', [1, 1], ['text']),
  md5: fixed('text', 'pe_md5', [1, 1], ['text']),
  concat_ws: {
    arity: [2, Infinity],
    args: ['text', null],
    registered: true,
    emit: (xs) => ({ sql: call('pe_concat_ws', ...xs.map(textOf)), type: 'text' }),
  },
  regexp_replace: fixed('text', 'pe_regexp_replace', [3, 4], ['text', 'text', 'text', 'text']),
  regexp_match: fixed('text[]', 'pe_regexp_match', [2, 3], ['text', 'text', 'text']),
  to_char: {
    arity: [2, 2],
    args: [null, 'text'],
    registered: true,
    emit: ([x, f]) => {
      if (x!.type === 'unknown') throw new EdgeError('invalid_request', 'function to_char(unknown, text) is not unique');
      if (isTime(x!.type)) return { sql: call('pe_to_char_ts', x!.sql, f!.sql), type: 'text' };
      if (x!.type === 'interval' || (x!.type !== null && !isInt(x!.type) && x!.type !== 'float8' && x!.type !== 'numeric')) {
        throw new EdgeError('invalid_request', `function to_char(${String(x!.type)}, text) does not exist`);
      }
      return { sql: call('pe_to_char_num', x!.sql, f!.sql), type: 'text' };
    },
  },

  // ---- jsonb
  jsonb_typeof: fixed('text', 'pe_jtypeof', [1, 1], ['jsonb']),
  jsonb_strip_nulls: fixed('jsonb', 'pe_jsonb_strip_nulls', [1, 1], ['jsonb']),
  jsonb_set: fixed('jsonb', 'pe_jsonb_set', [3, 4], ['jsonb', 'text[]', 'jsonb', 'bool']),
  jsonb_insert: fixed('jsonb', 'pe_jsonb_insert', [3, 4], ['jsonb', 'text[]', 'jsonb', 'bool']),
  to_jsonb: { arity: [1, 1], args: [null], registered: true, emit: ([x]) => ({ sql: jsonOf(x!.type === 'unknown' ? { ...x!, type: 'text' } : x!), type: 'jsonb' }) },

  // ---- arrays (text[], stored as a JSON array)
  /** Postgres: NULL for an empty array or a dimension other than 1 (arrays here have one). */
  array_length: {
    arity: [2, 2],
    args: ['text[]', 'int4'],
    emit: ([a, d]) => ({ sql: `(CASE WHEN ${d!.sql} = 1 THEN nullif(json_array_length(${a!.sql}), 0) END)`, type: 'int4' }),
  },
  cardinality: { arity: [1, 1], args: ['text[]'], emit: ([a]) => ({ sql: call('json_array_length', a!.sql), type: 'int4' }) },

  // ---- time
  age: {
    arity: [1, 2],
    args: ['timestamptz', 'timestamptz'],
    registered: true,
    emit: (xs) => ({ sql: xs.length === 1 ? call('pe_age', `date('now')`, xs[0]!.sql) : call('pe_age', xs[0]!.sql, xs[1]!.sql), type: 'interval' }),
  },
  date_part: part('float8'),
  extract: part('numeric'),
};

/** greatest/least: the arguments' common type (numbers widen to the widest). */
function commonType(xs: readonly Arg[]): PgType | null {
  const typed = xs.filter((x) => x.type !== null && x.type !== 'unknown');
  if (!typed.length) return xs.some((x) => x.type === null) ? null : 'text';
  if (typed.every((x) => isInt(x.type) || x.type === 'float8' || x.type === 'numeric')) return numericOf(typed, 'int4');
  return typed[0]!.type;
}

/** An operator of the catalog: the types its operands are coerced to, and its SQLite. */
export interface CatalogOperator {
  args: readonly [PgType | null, PgType | null];
  registered?: boolean;
  emit(l: Arg, r: Arg): Emitted;
}

/** The operators this catalog answers for (the emitter asks operatorFor only for these). */
export const OPERATORS: ReadonlySet<string> = new Set(['~', '~*', '!~', '!~*', '||', '-', '#-', '@>', '<@', '&&', '+', '*', '/', '%', '=', '<>', '!=', '<', '<=', '>', '>=']);

const textish = (t: PgType | null): boolean => t === null || t === 'text' || t === 'unknown' || t === 'uuid';

/**
 * The operator `op` for operands of these types (after literals are typed by the other
 * side), or null when this catalog does not define it (the emitter then goes on as before).
 */
export function operatorFor(op: string, l: PgType | null, r: PgType | null): CatalogOperator | null {
  const bin = (name: string, type: PgType, args: readonly [PgType | null, PgType | null], ...extra: string[]): CatalogOperator => ({
    args,
    registered: true,
    emit: (a, b) => ({ sql: call(name, a.sql, b.sql, ...extra), type }),
  });
  switch (op) {
    case '=':
    case '<>':
    case '!=':
    case '<':
    case '<=':
    case '>':
    case '>=': {
      // note: intervals compare as Postgres compares them (a month is 30 days, a day 24 hours), never as text.
      if (!((l === 'interval' && (r === 'interval' || r === 'unknown')) || (r === 'interval' && l === 'unknown'))) return null;
      const cmp = op === '!=' ? '<>' : op;
      return { args: ['interval', 'interval'], registered: true, emit: (a, b) => ({ sql: `(${call('pe_interval_key', a.sql)} ${cmp} ${call('pe_interval_key', b.sql)})`, type: 'bool' }) };
    }
    case '~':
    case '~*':
    case '!~':
    case '!~*': {
      if (!textish(l) || !textish(r)) return null;
      const ci = op.endsWith('*') ? '1' : '0';
      const not = op.startsWith('!');
      // note: pe_regex is also registered on the project's own connection (src/project/registry.ts), so it may appear in DDL.
      return { args: ['text', 'text'], emit: (a, b) => ({ sql: not ? `(NOT ${call('pe_regex', a.sql, b.sql, ci)})` : call('pe_regex', a.sql, b.sql, ci), type: 'bool' }) };
    }
    case '||':
      if ((l === 'jsonb' && (r === 'jsonb' || r === 'json' || r === 'unknown')) || (r === 'jsonb' && (l === 'json' || l === 'unknown'))) return bin('pe_jconcat', 'jsonb', ['jsonb', 'jsonb']);
      return null;
    case '#-':
      return l === 'jsonb' ? bin('pe_jdelete_path', 'jsonb', ['jsonb', 'text[]']) : null;
    case '@>':
    case '<@':
    case '&&': {
      // note: arrays of any element type (stored as JSON arrays: elements compare as JSON values); an untyped side takes the other's type.
      if (!isArrayType(l) && !isArrayType(r)) return null;
      if ((!isArrayType(l) && l !== 'unknown') || (!isArrayType(r) && r !== 'unknown')) return null;
      const t = isArrayType(l) ? l : (r as PgType);
      if (op === '&&') return bin('pe_arr_overlap', 'bool', [t, t]);
      return { args: [t, t], registered: true, emit: (a, b) => ({ sql: op === '@>' ? call('pe_arr_contains', a.sql, b.sql) : call('pe_arr_contains', b.sql, a.sql), type: 'bool' }) };
    }
    case '-':
      if (l === 'jsonb') {
        if (isInt(r)) return bin('pe_jdelete', 'jsonb', ['jsonb', null], '1');
        if (r === 'text' || r === 'unknown') return bin('pe_jdelete', 'jsonb', ['jsonb', 'text'], '0');
        if (r === 'text[]') return bin('pe_jdelete', 'jsonb', ['jsonb', 'text[]'], '0');
        return null;
      }
      if ((l === 'timestamptz' || l === 'timestamp') && (r === 'timestamptz' || r === 'timestamp')) return bin('pe_ts_diff', 'interval', [l, l]);
      if (l === 'date' && r === 'date') {
        return { args: ['date', 'date'], emit: (a, b) => ({ sql: `CAST(julianday(${a.sql}) - julianday(${b.sql}) AS INTEGER)`, type: 'int4' }) };
      }
      return integer(op, l, r);
    case '+':
    case '*':
    case '/':
    case '%':
      return integer(op, l, r);
  }
  return null;
}

const INT_FUNCTION: Record<string, string> = { '+': 'pe_iadd', '-': 'pe_isub', '*': 'pe_imul', '/': 'pe_idiv', '%': 'pe_mod' };

/** Checked integer arithmetic: int4 and int8 overflow are errors (22003), division truncates toward zero. */
function integer(op: string, l: PgType | null, r: PgType | null): CatalogOperator | null {
  const li = isInt(l);
  const ri = isInt(r);
  if (!(li && (ri || r === 'unknown')) && !(ri && l === 'unknown')) return null;
  const lt = li ? l : r;
  const rt = ri ? r : l;
  const type: PgType = lt === 'int8' || rt === 'int8' ? 'int8' : 'int4';
  const bits = type === 'int8' ? '64' : '32';
  const f = INT_FUNCTION[op]!;
  return { args: [lt, rt], registered: true, emit: (a, b) => ({ sql: op === '%' ? call(f, a.sql, b.sql) : call(f, a.sql, b.sql, bits), type }) };
}
