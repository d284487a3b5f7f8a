import { GraphQLError, GraphQLScalarType, Kind, print, type ValueNode } from 'graphql';
import { UUID } from './column-values.js';

/**
 * The custom scalars of the GraphQL schema (docs/api.md "GraphQL types"): `UUID` (uuid),
 * `DateTime` (timestamptz), `BigInt` (int8) and `JSON` (jsonb, documents' `data`, filter
 * values). Each checks what it reads (a variable, a literal) and what it writes: a bad
 * variable is a 400 before anything runs, a bad literal a validation error (400), a stored
 * value that is not of the type a field error.
 */
/** A date, or a date and time (`T` or a space between) with an optional zone (`Z`, `±hh`, `±hh:mm`). */
const DATE_TIME_RE = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;
const INT_RE = /^-?\d{1,19}$/;

const clip = (s: string): string => (s.length > 40 ? `${s.slice(0, 40)}…` : s);
const show = (v: unknown): string => clip(typeof v === 'string' ? JSON.stringify(v) : String(JSON.stringify(v) ?? v));

function uuid(v: unknown): string {
  if (typeof v !== 'string' || !UUID.test(v)) throw new GraphQLError(`UUID cannot represent ${show(v)}: expected 8-4-4-4-12 hex digits`);
  return v.toLowerCase();
}

/** An ISO 8601 date-time → its UTC form (`toISOString`), as timestamptz columns store it. */
function dateTime(v: unknown): string {
  const m = typeof v === 'string' ? DATE_TIME_RE.exec(v) : null;
  if (!m) throw new GraphQLError(`DateTime cannot represent ${show(v)}: expected ISO 8601, e.g. 2024-05-01T12:00:00Z`);
  // note: without a zone the time is UTC (as Postgres reads timestamptz with TimeZone UTC); a date alone is midnight UTC.
  let zone = m[3] ?? 'Z';
  if (/^[+-]\d{2}$/.test(zone)) zone += ':00';
  else if (/^[+-]\d{4}$/.test(zone)) zone = `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const [y, mo, da] = m[1]!.split('-').map(Number) as [number, number, number];
  const day = new Date(Date.UTC(y, mo - 1, da));
  if (mo < 1 || mo > 12 || day.getUTCDate() !== da) throw new GraphQLError(`DateTime cannot represent ${show(v)}: not a valid date`);
  const d = new Date(m[2] === undefined ? `${m[1]}T00:00:00Z` : `${m[1]}T${m[2]}${zone.toUpperCase()}`);
  if (Number.isNaN(d.getTime())) throw new GraphQLError(`DateTime cannot represent ${show(v)}: not a valid date`);
  return d.toISOString();
}

/**
 * An int8 value: a JSON number, or a string of decimal digits, within ±(2^53 − 1) (the range
 * the rows API's int8 accepts and answers exactly); outside it a GraphQL error, never a
 * rounded value.
 */
function bigInt(v: unknown): number {
  let n: number;
  if (typeof v === 'number') n = v;
  else if (typeof v === 'bigint') n = Number(v);
  else if (typeof v === 'string' && INT_RE.test(v.trim())) n = Number(v.trim());
  else throw new GraphQLError(`BigInt cannot represent ${show(typeof v === 'bigint' ? v.toString() : v)}: expected an integer`);
  if (!Number.isSafeInteger(n) || (typeof v === 'bigint' && BigInt(n) !== v)) {
    throw new GraphQLError(`BigInt cannot represent ${show(typeof v === 'bigint' ? v.toString() : v)}: integers are exact only within ±9007199254740991`);
  }
  return n;
}

export const UUIDScalar = new GraphQLScalarType({
  name: 'UUID',
  description: 'A UUID (8-4-4-4-12 hex digits), answered in lower case.',
  serialize: uuid,
  parseValue: uuid,
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.STRING) throw new GraphQLError(`UUID cannot represent ${clip(print(ast))}: expected a string`, { nodes: ast });
    return uuid(ast.value);
  },
});

export const DateTimeScalar = new GraphQLScalarType({
  name: 'DateTime',
  description: 'An instant (timestamptz) as ISO 8601: a date-time (without a zone: UTC) or a date (midnight UTC); answered in UTC, e.g. 2024-05-01T12:00:00.000Z.',
  serialize: dateTime,
  parseValue: dateTime,
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.STRING) throw new GraphQLError(`DateTime cannot represent ${clip(print(ast))}: expected a string`, { nodes: ast });
    return dateTime(ast.value);
  },
});

export const BigIntScalar = new GraphQLScalarType({
  name: 'BigInt',
  description: 'An int8 integer, answered as a JSON number; written as a number or a string of digits, within ±9007199254740991.',
  serialize: bigInt,
  parseValue: bigInt,
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.INT && ast.kind !== Kind.STRING) throw new GraphQLError(`BigInt cannot represent ${clip(print(ast))}: expected an integer`, { nodes: ast });
    return bigInt(ast.value);
  },
});

export const JSONScalar = new GraphQLScalarType({
  name: 'JSON',
  description: 'Any JSON value.',
  serialize: (v) => v,
  parseValue: (v) => v,
  parseLiteral: (ast, variables) => literal(ast, variables),
});

/** A JSON literal's value; a `$variable` inside it (`{name: $n}`) is the variable's value. */
function literal(ast: ValueNode, variables: Readonly<Record<string, unknown>> | null | undefined): unknown {
  switch (ast.kind) {
    case Kind.VARIABLE:
      return variables?.[ast.name.value];
    case Kind.STRING:
    case Kind.ENUM:
      return ast.value;
    case Kind.BOOLEAN:
      return ast.value;
    case Kind.INT:
    case Kind.FLOAT:
      return Number(ast.value);
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return ast.values.map((v) => literal(v, variables));
    case Kind.OBJECT:
      return Object.fromEntries(ast.fields.map((f) => [f.name.value, literal(f.value, variables)]));
    default:
      return undefined;
  }
}
