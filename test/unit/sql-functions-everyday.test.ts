import { runInThisContext } from 'node:vm';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerEveryday } from '../../src/sql/functions-everyday.js';
import { registerFormats } from '../../src/sql/functions-formats.js';
import { registerFunctions } from '../../src/sql/functions.js';
import { EVERYDAY, operatorFor } from '../../src/sql/pg/catalog/everyday.js';
import { loadParser } from '../../src/sql/pg/parse.js';
import { bindPlain, translateUncached } from '../../src/sql/pg/translate.js';

beforeAll(loadParser);

// The SQLite functions behind the everyday catalog, registered as the worker registers them:
// from their source text (they must not reach outside themselves), on a plain connection.
const db = new Database(':memory:');
const fromText = <T>(f: T): T => runInThisContext(`(${String(f)})`) as T;
fromText(registerFunctions)(db, { at: Number.POSITIVE_INFINITY, n: 0 });
fromText(registerEveryday)(db);
fromText(registerFormats)(db);
afterAll(() => db.close());

const one = (sql: string, ...params: unknown[]): unknown => (db.prepare(`select ${sql} as v`).safeIntegers(true).get(...params) as { v: unknown }).v;
const err = (sql: string): string => {
  try {
    one(sql);
    return 'ok';
  } catch (e) {
    return (e as Error).message;
  }
};

describe('checked integer arithmetic', () => {
  it('answers within range and raises 22003 past it, never a float', () => {
    expect(one('pe_iadd(9223372036854775806, 1, 64)')).toBe(9223372036854775807n);
    expect(err('pe_iadd(9223372036854775807, 1, 64)')).toBe('pe_invalid_input: bigint out of range');
    expect(err('pe_isub(-9223372036854775808, 1, 64)')).toBe('pe_invalid_input: bigint out of range');
    expect(err('pe_imul(4611686018427387904, 2, 64)')).toBe('pe_invalid_input: bigint out of range');
    expect(err('pe_iadd(2147483647, 1, 32)')).toBe('pe_invalid_input: integer out of range');
    expect(one('pe_iadd(2147483647, 1, 64)')).toBe(2147483648n);
    expect(one('pe_iadd(NULL, 1, 64)')).toBeNull();
  });
  it('divides toward zero and refuses zero and the one overflowing quotient', () => {
    expect(one('pe_idiv(-7, 2, 64)')).toBe(-3n);
    expect(one('pe_idiv(7, -2, 64)')).toBe(-3n);
    expect(err('pe_idiv(1, 0, 64)')).toBe('pe_invalid_input: division by zero');
    expect(err('pe_idiv(-9223372036854775808, -1, 64)')).toBe('pe_invalid_input: bigint out of range');
    expect(one('pe_mod(-7, 3)')).toBe(-1n);
    expect(one('pe_mod(-9223372036854775808, -1)')).toBe(0n);
  });
});

describe('numeric rounding', () => {
  it('rounds numeric half away from zero on the decimal text, float8 half to even', () => {
    expect(one('pe_round(2.675, 2)')).toBe(2.68);
    expect(one('pe_round(-2.5, 0)')).toBe(-3);
    expect(one('pe_round(1234.5, -2)')).toBe(1200);
    expect(one('pe_round(0.5, -1)')).toBe(0);
    expect(one('pe_round_even(2.5)')).toBe(2);
    expect(one('pe_round_even(3.5)')).toBe(4);
    expect(one('pe_round_even(-0.5)')).toBe(-0);
    expect(one('pe_trunc(-2.789, 1)')).toBe(-2.7);
    expect(one('pe_round(1e21, 2)')).toBe(1e21);
  });
});

describe('to_char', () => {
  const num = (n: string, f: string): unknown => one(`pe_to_char_num(${n}, '${f}')`);
  it('formats numbers with 9, 0, FM, . and , as Postgres does', () => {
    expect(num('0', '999')).toBe('   0');
    expect(num('0.5', '9.99')).toBe('  .50');
    expect(num('-5', '999')).toBe('  -5');
    expect(num('1234', '999')).toBe(' ###');
    expect(num('12', 'FM999.99')).toBe('12.');
    expect(num('12.5', 'FM999.99')).toBe('12.5');
    expect(num('1234567.891', '9,999,999.99')).toBe(' 1,234,567.89');
    expect(num('12', '9,999')).toBe('    12');
    expect(num('5', '0000')).toBe(' 0005');
    expect(num('-5', '0000')).toBe('-0005');
    expect(num('-0.5', '90.99')).toBe(' -0.50');
    expect(num('-12.345', 'FM990.00')).toBe('-12.35');
  });
  it('formats timestamps with the common patterns', () => {
    const ts = (f: string): unknown => one(`pe_to_char_ts('2024-03-05T07:08:09.123Z', '${f}')`);
    expect(ts('YYYY-MM-DD HH24:MI:SS.MS')).toBe('2024-03-05 07:08:09.123');
    expect(ts('Mon Month Dy Day FMMonth FMDay')).toBe('Mar March     Tue Tuesday   March Tuesday');
    expect(ts('HH12 AM pm Q DDD D "Q"yy')).toBe('07 AM am 1 065 3 Q24');
  });
});

describe('intervals', () => {
  it('age borrows by the calendar; timestamp − timestamp counts days', () => {
    expect(one(`pe_age('2024-03-05T00:00:00Z', '2023-01-31T10:00:00Z')`)).toBe('1 year 1 mon 4 days 14:00:00');
    expect(one(`pe_age('2023-01-31T10:00:00Z', '2024-03-05T00:00:00Z')`)).toBe('-1 years -1 mons -4 days -14:00:00');
    expect(one(`pe_ts_diff('2024-03-05T00:00:00Z', '2023-01-31T10:00:00Z')`)).toBe('398 days 14:00:00');
    expect(one(`pe_interval_text('2 hours 90 minutes')`)).toBe('03:30:00');
  });
  it('extracts fields and the epoch of an interval', () => {
    expect(one(`pe_interval_part('epoch', '1 day 02:00:00')`)).toBe(93600);
    expect(one(`pe_interval_part('epoch', '1 year')`)).toBe(31557600);
    expect(one(`pe_interval_part('month', '1 year 14 mons')`)).toBe(2);
    expect(err(`pe_interval_part('epoch', 'soon')`)).toMatch(/invalid input syntax for type interval/);
  });
});

describe('regular expressions and jsonb', () => {
  it('replaces with \\N and \\& references and refuses unknown flags', () => {
    expect(one(`pe_regexp_replace('John Smith', '(\\w+) (\\w+)', '\\2, \\1')`)).toBe('Smith, John');
    expect(one(`pe_regexp_replace('abc', 'b', '[\\&]$1')`)).toBe('a[b]$1c');
    expect(err(`pe_regexp_replace('abc', 'b', 'x', 'z')`)).toBe('pe_invalid_input: invalid regular expression option: "z"');
    expect(err(`pe_regex('abc', '(', 0)`)).toMatch(/^pe_invalid_input: invalid regular expression/);
  });
  it('edits jsonb by path and keeps jsonb key order', () => {
    expect(one(`pe_jsonb_set('{"b":1,"a":2}', '["c"]', '3')`)).toBe('{"a":2,"b":1,"c":3}');
    expect(one(`pe_jsonb_insert('[0,1]', '["-1"]', '9', 1)`)).toBe('[0,1,9]');
    expect(one(`pe_jdelete_path('{"a":{"b":1}}', '{a,b}')`)).toBe('{"a":{}}');
    expect(err(`pe_jdelete('"x"', 'x', 0)`)).toBe('pe_invalid_input: cannot delete from scalar');
  });
});

describe('the catalog entries', () => {
  it('takes position in Postgres order (string, substring) and types results', () => {
    const call = (name: string, ...args: Array<[string, string | null]>) => EVERYDAY[name]!.emit(args.map(([sql, type]) => ({ sql, type: type as never })));
    expect(call('position', ['s', 'text'], ['x', 'text'])).toEqual({ sql: 'instr(s, x)', type: 'int4' });
    expect(call('round', ['f', 'float8'])).toEqual({ sql: 'pe_round_even(f)', type: 'float8' });
    expect(call('round', ['n', 'numeric'], ['2', 'int4'])).toEqual({ sql: 'pe_round(n, 2)', type: 'numeric' });
    expect(call('extract', ["'epoch'", 'text'], ['iv', 'interval'])).toEqual({ sql: "pe_interval_part(lower('epoch'), iv)", type: 'numeric' });
    expect(call('date_part', ["'year'", 'text'], ['d', 'date'])).toEqual({ sql: "pe_extract(lower('year'), pe_ts(d))", type: 'float8' });
  });
  it('answers operators only for the operand types it defines', () => {
    expect(operatorFor('+', 'int8', 'int4')?.emit({ sql: 'a', type: 'int8' }, { sql: '1', type: 'int4' })).toEqual({ sql: 'pe_iadd(a, 1, 64)', type: 'int8' });
    expect(operatorFor('+', 'int4', 'int4')?.emit({ sql: 'a', type: 'int4' }, { sql: '1', type: 'int4' }).sql).toBe('pe_iadd(a, 1, 32)');
    expect(operatorFor('+', 'float8', 'int4')).toBeNull();
    expect(operatorFor('||', 'text', 'text')).toBeNull();
    expect(operatorFor('||', 'jsonb', 'unknown')?.args).toEqual(['jsonb', 'jsonb']);
    expect(operatorFor('-', 'jsonb', 'int4')?.emit({ sql: 'j', type: 'jsonb' }, { sql: '0', type: 'int4' }).sql).toBe('pe_jdelete(j, 0, 1)');
    expect(operatorFor('@>', 'jsonb', 'jsonb')).toBeNull();
    expect(operatorFor('&&', 'text[]', 'unknown')?.args).toEqual(['text[]', 'text[]']);
    expect(operatorFor('~*', 'text', 'unknown')?.emit({ sql: 's', type: 'text' }, { sql: "'x'", type: 'text' }).sql).toBe("pe_regex(s, 'x', 1)");
  });
});

describe('the catalog in the emitter', () => {
  const schema = (t: string) => (t === 't' ? [{ name: 'f', type: 'float8' as const }, { name: 's', type: 'text' as const }, { name: 'i', type: 'int8' as const }] : null);
  const sqlOf = (q: string): string => bindPlain(translateUncached(q, schema).statements[0]!.steps[0]!, [], false).sql;
  it('emits an operand once when the catalog passes an operator back (a chain of 40 stays linear)', () => {
    const q = `select ${Array.from({ length: 40 }, () => 'f').join(' + ')} as a, ${Array.from({ length: 40 }, () => 's').join(' || ')} as b from t`;
    expect(sqlOf(q).length).toBeLessThan(2000);
  });
  it('checks integer arithmetic and leaves floats to SQLite', () => {
    expect(sqlOf('select i + 1 as a, f + 1 as b from t')).toContain('pe_iadd("i", 1, 64)');
    expect(sqlOf('select f * 2 as b from t')).toContain('("f" * 2)');
  });
});
