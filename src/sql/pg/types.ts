/**
 * The Postgres types the translator knows, how each is declared in SQLite and how its
 * stored values are typed back on the wire (docs/sql.md "Types").
 */
import { jsonValue } from '../../json-text.js';

export type PgType =
  | 'int4'
  | 'int8'
  | 'float8'
  | 'numeric'
  | 'text'
  | 'bool'
  | 'timestamptz'
  | 'timestamp'
  | 'date'
  | 'jsonb'
  | 'json'
  | 'uuid'
  | 'bytea'
  | 'text[]'
  | 'int4[]'
  | 'int8[]'
  | 'float8[]'
  | 'numeric[]'
  | 'bool[]'
  | 'uuid[]'
  | 'interval'
  /** A string literal or a bound parameter whose type comes from its context. */
  | 'unknown';

/** The array types (one dimension, stored as a JSON array: docs/sql.md "Arrays"). */
export type ArrayType = 'text[]' | 'int4[]' | 'int8[]' | 'float8[]' | 'numeric[]' | 'bool[]' | 'uuid[]';
const ARRAY_TYPES: ReadonlySet<string> = new Set(['text[]', 'int4[]', 'int8[]', 'float8[]', 'numeric[]', 'bool[]', 'uuid[]']);
export const isArrayType = (t: PgType | null | undefined): t is ArrayType => typeof t === 'string' && ARRAY_TYPES.has(t);
/** An array type's element type. */
export const elementOf = (t: ArrayType): PgType => t.slice(0, -2) as PgType;
/** The array type of an element type, or null (arrays of other types are not translated). */
export const arrayOf = (t: PgType | null): ArrayType | null => (t && ARRAY_TYPES.has(`${t}[]`) ? (`${t}[]` as ArrayType) : null);

/** A column of a source as the translator sees it. */
export interface ColumnType {
  name: string;
  type: PgType | null;
  /** The table's single-column primary key. */
  pk?: boolean;
  /**
   * What the translator fills in where SQLite's table has no default (the rows API's `id`,
   * `created_at` and `updated_at`, docs/sql.md "One table, two doors"): `uuid` a new
   * UUIDv7 when an INSERT leaves the column out; `now` the statement's time when an INSERT
   * leaves it out; `touch` the same, and also on every UPDATE that does not set it.
   */
  auto?: 'uuid' | 'now' | 'touch';
  /** The enum type of a text column declared with one (types-ddl.ts). */
  enum?: string;
}

/** Reads a physical table's columns (in physical order); null when the table does not exist. */
export type SchemaLookup = ((physical: string) => ColumnType[] | null) & {
  /** An enum type's labels in declaration order, or null when there is none (types-ddl.ts). */
  enums?: (name: string) => string[] | null;
};

/** A Postgres type name as written in SQL (upper-cased by the parser) → our type, or null when unsupported. */
/**
 * The type name of a parsed type node: the parser keeps `with time zone` apart, in `suffix`
 * (`timestamp with time zone` is timestamptz; `time with time zone` has no translation).
 */
export function typeNameOf(t: object): string {
  const { dataType, suffix: sfx } = t as { dataType?: unknown; suffix?: unknown };
  const base = String(dataType ?? '');
  const suffix = Array.isArray(sfx) ? sfx.map((x) => String(x).toUpperCase()).join(' ') : '';
  if (suffix === 'WITH TIME ZONE') return base.toUpperCase() === 'TIMESTAMP' ? 'TIMESTAMPTZ' : `${base} WITH TIME ZONE`;
  return base;
}

export function pgTypeOf(name: string): PgType | null {
  const n = name.toUpperCase().replace(/\s+/g, ' ').trim();
  switch (n) {
    case 'INT':
    case 'INT2':
    case 'INT4':
    case 'INTEGER':
    case 'SMALLINT':
    case 'SERIAL':
    case 'SERIAL4':
    case 'SMALLSERIAL':
      return 'int4';
    case 'BIGINT':
    case 'INT8':
    case 'BIGSERIAL':
    case 'SERIAL8':
      return 'int8';
    case 'REAL':
    case 'FLOAT':
    case 'FLOAT4':
    case 'FLOAT8':
    case 'DOUBLE':
    case 'DOUBLE PRECISION':
      return 'float8';
    case 'NUMERIC':
    case 'DECIMAL':
      return 'numeric';
    case 'TEXT':
    case 'VARCHAR':
    case 'CHARACTER VARYING':
    case 'CHAR':
    case 'CHARACTER':
    case 'CITEXT':
      return 'text';
    case 'BOOL':
    case 'BOOLEAN':
      return 'bool';
    case 'TIMESTAMPTZ':
    case 'TIMESTAMP WITH TIME ZONE':
      return 'timestamptz';
    case 'TIMESTAMP':
    case 'TIMESTAMP WITHOUT TIME ZONE':
      return 'timestamp';
    case 'DATE':
      return 'date';
    case 'JSONB':
      return 'jsonb';
    case 'JSON':
      return 'json';
    case 'UUID':
      return 'uuid';
    case 'BYTEA':
      return 'bytea';
    case 'INTERVAL':
      return 'interval';
  }
  if (n.endsWith('[]')) {
    const el = pgTypeOf(n.slice(0, -2));
    // note: serial is a column default, not a type of elements.
    return n.includes('SERIAL') ? null : arrayOf(el);
  }
  return null;
}

/** The SQLite declared type of a column of that type; its affinity keeps stored values as the translator expects. */
export const DECLTYPE: Record<Exclude<PgType, 'interval' | 'unknown'>, string> = {
  int4: 'INTEGER',
  int8: 'BIGINT',
  float8: 'FLOAT8',
  numeric: 'NUMERIC',
  text: 'TEXT',
  bool: 'BOOLEAN',
  timestamptz: 'TIMESTAMPTZ',
  timestamp: 'TIMESTAMP',
  date: 'DATE',
  jsonb: 'JSONB',
  json: 'JSON',
  uuid: 'UUID',
  bytea: 'BYTEA',
  'text[]': 'TEXT_ARRAY',
  'int4[]': 'INT4_ARRAY',
  'int8[]': 'INT8_ARRAY',
  'float8[]': 'FLOAT8_ARRAY',
  'numeric[]': 'NUMERIC_ARRAY',
  'bool[]': 'BOOL_ARRAY',
  'uuid[]': 'UUID_ARRAY',
};

/** A SQLite declared type (ours, or a table made by the rows API) → our type. */
export function typeOfDecl(decl: string | null | undefined): PgType | null {
  if (!decl) return null;
  const u = decl.toUpperCase();
  if (u.startsWith('TEXT_ENUM_')) return 'text';
  switch (u) {
    case 'BOOLEAN':
      return 'bool';
    case 'TIMESTAMPTZ':
      return 'timestamptz';
    case 'TIMESTAMP':
      return 'timestamp';
    case 'DATE':
      return 'date';
    case 'JSONB':
      return 'jsonb';
    case 'JSON':
      return 'json';
    case 'UUID':
      return 'uuid';
    case 'BYTEA':
    case 'BLOB':
      return 'bytea';
    case 'TEXT_ARRAY':
      return 'text[]';
    case 'INT4_ARRAY':
      return 'int4[]';
    case 'INT8_ARRAY':
      return 'int8[]';
    case 'FLOAT8_ARRAY':
      return 'float8[]';
    case 'NUMERIC_ARRAY':
      return 'numeric[]';
    case 'BOOL_ARRAY':
      return 'bool[]';
    case 'UUID_ARRAY':
      return 'uuid[]';
    case 'NUMERIC':
      return 'numeric';
    case 'BIGINT':
      return 'int8';
  }
  if (u.includes('INT')) return 'int8';
  if (u.includes('REAL') || u.includes('FLOA') || u.includes('DOUB')) return 'float8';
  if (u.includes('TEXT') || u.includes('CHAR') || u.includes('CLOB')) return 'text';
  return null;
}

/** The catalog's column types (rows API tables) → ours. */
export const fromCatalogType = (t: string): PgType =>
  (({ text: 'text', int8: 'int8', float8: 'float8', bool: 'bool', timestamptz: 'timestamptz', jsonb: 'jsonb', uuid: 'uuid', bytea: 'bytea' }) as Record<string, PgType>)[t] ?? 'text';

/** Ours → the catalog's column types, for tables made by raw DDL (null: the table cannot be presented). */
export function toCatalogType(t: PgType | null): string | null {
  switch (t) {
    case 'int4':
    case 'int8':
      return 'int8';
    case 'float8':
    case 'numeric':
      return 'float8';
    case 'text':
    case 'date':
    case 'timestamp':
      return 'text';
    case 'bool':
    case 'timestamptz':
    case 'jsonb':
    case 'uuid':
    case 'bytea':
      return t;
    case 'json':
      return 'jsonb';
  }
  return isArrayType(t) ? 'jsonb' : null;
}

/** A stored value → its wire form for the column's type (docs/sql.md "Types": ISO dates, JSON as JSON, int8 as numbers). */
export function toWire(v: unknown, t: PgType | null): unknown {
  if (v === null || v === undefined) return null;
  switch (t) {
    case 'bool':
      return typeof v === 'bigint' ? v !== 0n : typeof v === 'number' ? v !== 0 : v === 'true' || v === 't';
    case 'jsonb':
    case 'json':
    case 'text[]':
    case 'int4[]':
    case 'int8[]':
    case 'float8[]':
    case 'numeric[]':
    case 'bool[]':
    case 'uuid[]':
      if (typeof v === 'string') {
        try {
          return JSON.parse(v) as unknown;
        } catch {
          return v;
        }
      }
      return typeof v === 'bigint' ? bigToWire(v) : v;
    case 'timestamptz': {
      if (typeof v !== 'string') return v;
      // note: the stored form is already the wire form; only other spellings are re-parsed.
      if (v.length === 24 && ISO_MS.test(v)) return v;
      const d = new Date(/[zZ]|[+-]\d\d(:?\d\d)?$/.test(v) ? v : `${v.replace(' ', 'T')}Z`);
      return Number.isNaN(d.getTime()) ? v : d.toISOString();
    }
    case 'text':
    case 'uuid':
    case 'date':
    case 'timestamp':
      if (typeof v === 'bigint') return v.toString();
      if (typeof v === 'number') return String(v);
      if (v instanceof Uint8Array) return Buffer.from(v).toString('utf8');
      return v;
    case 'float8':
    case 'numeric':
      return typeof v === 'bigint' ? Number(v) : v;
  }
  if (typeof v === 'bigint') return bigToWire(v);
  if (v instanceof Uint8Array) return `\\x${Buffer.from(v).toString('hex')}`;
  return v;
}

/** `jsonValue(toWire(v, t))`; a timestamptz already in its stored wire form is written directly (it needs no escaping). */
export function wireJson(v: unknown, t: PgType | null): string {
  if (t === 'timestamptz' && typeof v === 'string' && v.length === 24 && ISO_MS.test(v)) return `"${v}"`;
  return jsonValue(toWire(v, t));
}

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** int8: a number while exact, a decimal string past 2^53. */
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
export const bigToWire = (v: bigint): number | string => (v <= MAX_SAFE && v >= MIN_SAFE ? Number(v) : v.toString());

/** The wire name of a result column's type. */
export const typeName = (t: PgType | null, v?: unknown): string => {
  if (t && t !== 'unknown') return t;
  if (typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v))) return 'int8';
  if (typeof v === 'number') return 'float8';
  if (v instanceof Uint8Array) return 'bytea';
  return 'text';
};
