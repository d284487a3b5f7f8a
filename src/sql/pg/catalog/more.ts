/**
 * More everyday functions as catalog entries (issue 17, the corpus' "not translated yet"
 * list): Unicode-aware lower/upper, starts_with, translate, ascii, chr, format, the text[]
 * functions and jsonb_pretty. Their SQLite functions are in src/sql/functions-more.ts.
 */
import type { PgType } from '../types.js';
import type { Arg, CatalogFunction } from './types.js';

const call = (name: string, ...args: readonly Arg[]): string => `${name}(${args.map((a) => a.sql).join(', ')})`;
const reg = (type: PgType, name: string, arity: [number, number], args: readonly (PgType | null)[]): CatalogFunction => ({
  arity,
  args,
  registered: true,
  emit: (xs) => ({ sql: call(name, ...xs), type }),
});

/** A value as format()'s %s prints it (booleans t/f). */
const text = (a: Arg): Arg => (a.type === 'bool' ? { sql: `(CASE WHEN ${a.sql} IS NULL THEN NULL WHEN ${a.sql} THEN 't' ELSE 'f' END)`, type: 'text' } : a);

export const MORE: Record<string, CatalogFunction> = {
  // note: SQLite's lower/upper map ASCII only; in DDL (an index on lower(email)) they stay SQLite's.
  lower: { ...reg('text', 'pe_lower', [1, 1], ['text']), native: ([a]) => ({ sql: `lower(${a!.sql})`, type: 'text' }) },
  upper: { ...reg('text', 'pe_upper', [1, 1], ['text']), native: ([a]) => ({ sql: `upper(${a!.sql})`, type: 'text' }) },
  starts_with: { arity: [2, 2], args: ['text', 'text'], emit: ([a, b]) => ({ sql: `(substr(${a!.sql}, 1, length(${b!.sql})) = ${b!.sql})`, type: 'bool' }) },
  translate: reg('text', 'pe_translate', [3, 3], ['text']),
  ascii: reg('int4', 'pe_ascii', [1, 1], ['text']),
  chr: reg('text', 'pe_chr', [1, 1], ['int4']),
  format: { arity: [1, Infinity], args: ['text', null], registered: true, emit: (xs) => ({ sql: call('pe_format', ...xs.map(text)), type: 'text' }) },
  array_to_string: reg('text', 'pe_array_to_string', [2, 3], ['text[]', 'text']),
  string_to_array: reg('text[]', 'pe_string_to_array', [2, 3], ['text']),
  array_append: reg('text[]', 'pe_array_append', [2, 2], ['text[]', 'text']),
  array_prepend: reg('text[]', 'pe_array_prepend', [2, 2], ['text', 'text[]']),
  array_cat: reg('text[]', 'pe_array_cat', [2, 2], ['text[]']),
  array_remove: reg('text[]', 'pe_array_remove', [2, 2], ['text[]', 'text']),
  array_position: reg('int4', 'pe_array_position', [2, 2], ['text[]', 'text']),
  jsonb_pretty: reg('text', 'pe_jsonb_pretty', [1, 1], ['jsonb']),
  // note: reporting helpers (docs/sql.md "Late differences"); their SQLite functions are in src/sql/functions-formats.ts.
  date_bin: reg('timestamptz', 'pe_date_bin', [3, 3], ['interval', 'timestamptz', 'timestamptz']),
  width_bucket: reg('int4', 'pe_width_bucket', [4, 4], ['float8', 'float8', 'float8', 'int4']),
  justify_days: { arity: [1, 1], args: ['interval'], registered: true, emit: ([a]) => ({ sql: `pe_justify(${a!.sql}, 'days')`, type: 'interval' }) },
  justify_hours: { arity: [1, 1], args: ['interval'], registered: true, emit: ([a]) => ({ sql: `pe_justify(${a!.sql}, 'hours')`, type: 'interval' }) },
};
