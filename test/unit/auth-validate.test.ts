import { describe, expect, it } from 'vitest';
import { EdgeError } from '../../src/core/errors.js';
import { email, fieldDefinitions, fieldValue, password, signupFields } from '../../src/services/auth/validate.js';

const fieldOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    if (err instanceof EdgeError) return (err.details as { field?: string } | undefined)?.field ?? err.code;
    throw err;
  }
  return undefined;
};

describe('auth input validation', () => {
  it('trims and lower-cases e-mails, rejects non-addresses', () => {
    expect(email('  Ada@Example.COM ')).toBe('ada@example.com');
    for (const bad of ['', 'ada', 'ada@', '@x.io', 'a b@x.io', 'ada@localhost', 42]) expect(fieldOf(() => email(bad))).toBe('email');
  });

  it('passwords are 8 to 256 characters (code points)', () => {
    expect(password('12345678')).toBe('12345678');
    expect(fieldOf(() => password('1234567'))).toBe('password');
    expect(fieldOf(() => password('x'.repeat(257)))).toBe('password');
    expect(password('😀'.repeat(8))).toHaveLength(16);
  });

  it('types user field values', () => {
    const f = (type: 'text' | 'bool' | 'int8' | 'float8' | 'timestamptz') => ({ name: 'f', type, required: false, in_signup: true });
    expect(fieldValue(f('bool'), true)).toBe(1);
    expect(fieldValue(f('int8'), 3)).toBe(3);
    expect(fieldOf(() => fieldValue(f('int8'), 3.5))).toBe('f');
    expect(fieldValue(f('timestamptz'), '2024-01-02T03:04:05+01:00')).toBe('2024-01-02T02:04:05.000Z');
    expect(fieldOf(() => fieldValue(f('timestamptz'), 'tomorrow'))).toBe('f');
    expect(fieldOf(() => fieldValue(f('text'), 1))).toBe('f');
  });

  it('required applies to sign-up fields', () => {
    const fields = [
      { name: 'nick', type: 'text' as const, required: true, in_signup: true },
      { name: 'internal', type: 'text' as const, required: true, in_signup: false },
    ];
    expect(fieldOf(() => signupFields(fields, {}))).toBe('nick');
    expect(signupFields(fields, { nick: 'n', internal: 'ignored' })).toEqual({ nick: 'n' });
  });

  it('field definitions reject reserved, duplicate and malformed names', () => {
    expect(fieldOf(() => fieldDefinitions({ fields: [{ name: 'email', type: 'text' }] }))).toBe('fields[0].name');
    expect(fieldOf(() => fieldDefinitions({ fields: [{ name: 'a', type: 'text' }, { name: 'a', type: 'int8' }] }))).toBe('fields[1].name');
    expect(fieldOf(() => fieldDefinitions({ fields: [{ name: 'a', type: 'varchar' }] }))).toBe('fields[0].type');
    expect(fieldDefinitions({ fields: [{ name: 'a', type: 'int8', required: true }] })).toEqual([
      { name: 'a', type: 'int8', required: true, in_signup: false },
    ]);
  });
});
