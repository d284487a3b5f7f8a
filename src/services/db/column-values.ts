import { invalidField } from '../../core/errors.js';
import type { ColumnDef } from '../../sql/table-model.js';

/**
 * Typed conversion between wire (JSON) values and stored SQLite values of typed columns,
 * shared by relational tables (db) and the extra `profiles` columns (auth user fields).
 */
export type TypedColumn = Pick<ColumnDef, 'name' | 'type' | 'nullable'>;

/** A UUID as the rows API and GraphQL take it (any case; stored lower case). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
// note: with the u flag a surrogate range matches only unpaired halves (String#isWellFormed is ES2024).
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
const wellFormed = (s: string): boolean => !LONE_SURROGATE.test(s);

/** A wire value → its stored form for the column; throws 400 `invalid_field` naming the column. */
export function toStored(c: TypedColumn, v: unknown): unknown {
  if (v === null) {
    if (!c.nullable) throw invalidField(c.name, 'must not be null');
    return null;
  }
  switch (c.type) {
    case 'text':
      if (typeof v !== 'string') throw invalidField(c.name, 'must be a string (text)');
      if (!wellFormed(v)) throw invalidField(c.name, 'is not valid Unicode');
      return v;
    case 'int8':
      if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw invalidField(c.name, 'must be an integer (int8)');
      return v;
    case 'float8':
      if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidField(c.name, 'must be a number (float8)');
      return v;
    case 'bool':
      if (typeof v !== 'boolean') throw invalidField(c.name, 'must be true or false (bool)');
      return v ? 1 : 0;
    case 'timestamptz': {
      // note: an ISO date first; Date alone would read "1" as 2001-01-01.
      if (typeof v !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(v)) throw invalidField(c.name, 'must be an ISO-8601 date string (timestamptz)');
      const d = new Date(v);
      if (Number.isNaN(d.getTime())) throw invalidField(c.name, 'must be an ISO-8601 date string (timestamptz)');
      return d.toISOString();
    }
    case 'jsonb':
      checkStrings(v, c.name);
      return JSON.stringify(v);
    case 'uuid':
      if (typeof v !== 'string' || !UUID.test(v)) throw invalidField(c.name, 'must be a UUID string');
      return v.toLowerCase();
    case 'bytea':
      if (typeof v !== 'string' || !BASE64.test(v)) throw invalidField(c.name, 'must be a base64 string (bytea)');
      return Buffer.from(v, 'base64');
  }
}

/** A stored value → wire. */
export function fromStored(c: Pick<ColumnDef, 'type'>, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  switch (c.type) {
    case 'bool':
      return v === 1 || v === 1n || v === true;
    case 'jsonb':
      return typeof v === 'string' ? (JSON.parse(v) as unknown) : v;
    case 'bytea':
      return Buffer.isBuffer(v) ? v.toString('base64') : v;
    case 'int8':
      return typeof v === 'bigint' ? Number(v) : v;
    default:
      return v;
  }
}

/** Rejects strings (and keys) that are not well-formed Unicode (lone surrogates) anywhere in a JSON value. */
export function checkStrings(v: unknown, field: string): void {
  const stack: unknown[] = [v];
  while (stack.length) {
    const x = stack.pop();
    if (typeof x === 'string') {
      if (!wellFormed(x)) throw invalidField(field, 'contains a string that is not valid Unicode');
    } else if (Array.isArray(x)) {
      for (const e of x) stack.push(e);
    } else if (x !== null && typeof x === 'object') {
      for (const [k, e] of Object.entries(x)) {
        if (!wellFormed(k)) throw invalidField(field, 'contains a key that is not valid Unicode');
        stack.push(e);
      }
    }
  }
}
