import { describe, expect, it } from 'vitest';
import type { EdgeError } from '../../src/core/errors.js';
import { fromStored, toStored } from '../../src/services/db/column-values.js';

const fails = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    return `${(e as EdgeError).code}: ${(e as EdgeError).message}`;
  }
  return 'ok';
};

describe('typed column values (db columns and auth user fields)', () => {
  it('stores timestamps as ISO-8601 UTC and refuses what only Date would read', () => {
    expect(toStored({ name: 'at', type: 'timestamptz', nullable: true }, '2026-11-25T10:00:00+02:00')).toBe('2026-11-25T08:00:00.000Z');
    expect(fails(() => toStored({ name: 'at', type: 'timestamptz', nullable: true }, '1'))).toMatch(/^invalid_field: at/);
    expect(fails(() => toStored({ name: 'at', type: 'timestamptz', nullable: true }, 'Tue, 1 Dec 2026'))).toMatch(/^invalid_field/);
  });

  it('checks types and nullability, naming the column', () => {
    expect(fails(() => toStored({ name: 'n', type: 'int8', nullable: true }, 1.5))).toMatch(/^invalid_field: n/);
    expect(fails(() => toStored({ name: 'n', type: 'int8', nullable: false }, null))).toMatch(/must not be null/);
    expect(fails(() => toStored({ name: 's', type: 'text', nullable: true }, '\ud800'))).toMatch(/Unicode/);
    expect(toStored({ name: 'b', type: 'bool', nullable: true }, true)).toBe(1);
  });

  it('reads stored values back to wire form', () => {
    expect(fromStored({ type: 'bool' }, 1)).toBe(true);
    expect(fromStored({ type: 'jsonb' }, '{"a":1}')).toEqual({ a: 1 });
    expect(fromStored({ type: 'bytea' }, Buffer.from('hi'))).toBe('aGk=');
  });
});
