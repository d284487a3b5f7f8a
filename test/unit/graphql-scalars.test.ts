import { GraphQLError, parseValue as parseAst } from 'graphql';
import { describe, expect, it } from 'vitest';
import { BigIntScalar, DateTimeScalar, JSONScalar, UUIDScalar } from '../../src/services/db/graphql-scalars.js';

const refuses = (fn: () => unknown, message: RegExp): void => {
  expect(fn).toThrow(GraphQLError);
  expect(fn).toThrow(message);
};

describe('UUID', () => {
  it('reads and writes 8-4-4-4-12 hex digits, lower case', () => {
    expect(UUIDScalar.parseValue('0190F8A0-1234-7ABC-8DEF-0123456789AB')).toBe('0190f8a0-1234-7abc-8def-0123456789ab');
    expect(UUIDScalar.serialize('0190f8a0-1234-7abc-8def-0123456789ab')).toBe('0190f8a0-1234-7abc-8def-0123456789ab');
    expect(UUIDScalar.parseLiteral(parseAst('"0190f8a0-1234-7abc-8def-0123456789ab"'))).toBe('0190f8a0-1234-7abc-8def-0123456789ab');
  });
  it('refuses anything else', () => {
    for (const v of ['', 'abc', '0190f8a0-1234-7abc-8def-0123456789abc', 42, null, {}]) refuses(() => UUIDScalar.parseValue(v), /UUID cannot represent/);
    refuses(() => UUIDScalar.serialize(12), /UUID cannot represent 12/);
    refuses(() => UUIDScalar.parseLiteral(parseAst('42')), /expected a string/);
  });
});

describe('DateTime', () => {
  it('reads ISO 8601 (a zone, no zone as UTC, a date alone) and answers UTC', () => {
    expect(DateTimeScalar.parseValue('2024-05-01T12:00:00Z')).toBe('2024-05-01T12:00:00.000Z');
    expect(DateTimeScalar.parseValue('2024-05-01T12:00:00.5+02:00')).toBe('2024-05-01T10:00:00.500Z');
    expect(DateTimeScalar.parseValue('2024-05-01 12:00:00+0530')).toBe('2024-05-01T06:30:00.000Z');
    expect(DateTimeScalar.parseValue('2024-05-01T12:00:00-03')).toBe('2024-05-01T15:00:00.000Z');
    expect(DateTimeScalar.parseValue('2024-05-01T12:00')).toBe('2024-05-01T12:00:00.000Z');
    expect(DateTimeScalar.parseValue('2024-02-29')).toBe('2024-02-29T00:00:00.000Z');
    expect(DateTimeScalar.serialize('2024-05-01T12:00:00.000Z')).toBe('2024-05-01T12:00:00.000Z');
  });
  it('refuses other formats and dates that do not exist', () => {
    for (const v of ['2023-02-29', '2024-13-01', '2024-04-31T00:00:00Z', '2024-05-01T25:00:00Z', '01/05/2024', 'yesterday', '1', 1714564800000, null]) {
      refuses(() => DateTimeScalar.parseValue(v), /DateTime cannot represent/);
    }
    refuses(() => DateTimeScalar.parseLiteral(parseAst('20240501')), /expected a string/);
  });
});

describe('BigInt', () => {
  it('reads a number or a string of digits within ±(2^53 − 1), and answers a number', () => {
    expect(BigIntScalar.parseValue(42)).toBe(42);
    expect(BigIntScalar.parseValue('-9007199254740991')).toBe(-9007199254740991);
    expect(BigIntScalar.parseLiteral(parseAst('123'))).toBe(123);
    expect(BigIntScalar.parseLiteral(parseAst('"123"'))).toBe(123);
    expect(BigIntScalar.serialize(7)).toBe(7);
    expect(BigIntScalar.serialize(7n)).toBe(7);
  });
  it('refuses fractions, non-numbers and integers it cannot answer exactly', () => {
    for (const v of [1.5, '1.5', '9007199254740992', 9007199254740992, '1e3', '', true, null, Number.NaN]) refuses(() => BigIntScalar.parseValue(v), /BigInt cannot represent/);
    refuses(() => BigIntScalar.serialize(2n ** 60n), /exact only within/);
    refuses(() => BigIntScalar.parseLiteral(parseAst('1.5')), /expected an integer/);
  });
});

describe('JSON', () => {
  it('reads any value, with variables inside literals', () => {
    expect(JSONScalar.parseValue({ a: [1, 'x', null] })).toEqual({ a: [1, 'x', null] });
    expect(JSONScalar.parseLiteral(parseAst('{a: [1, "x", null, true], b: $v}'), { v: 'var' })).toEqual({ a: [1, 'x', null, true], b: 'var' });
    expect(JSONScalar.serialize([1, 2])).toEqual([1, 2]);
  });
});
