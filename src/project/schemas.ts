/**
 * Postgres-style schemas inside one SQLite file (docs/sql.md): `public.x` is
 * table `x`; a reserved schema `s.x` is the table literally named `"s.x"`.
 */
export const RESERVED_SCHEMAS = ['_svc_meta', '_svc_auth', '_svc_storage', '_svc_realtime', '_svc_functions'] as const;
export type ReservedSchema = (typeof RESERVED_SCHEMAS)[number];

const IDENT = /^[a-z_][a-z0-9_]{0,62}$/;

/** The SQLite table name for a schema-qualified name, or null when the schema is unknown. */
export function physicalName(schema: string | null, table: string): string | null {
  if (!IDENT.test(table)) return null;
  if (schema === null || schema === 'public') return table;
  return (RESERVED_SCHEMAS as readonly string[]).includes(schema) ? `${schema}.${table}` : null;
}

export const isReservedSchema = (schema: string): boolean => (RESERVED_SCHEMAS as readonly string[]).includes(schema);

/** Quotes an identifier for SQLite (double quotes, doubled inside). */
export const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;
