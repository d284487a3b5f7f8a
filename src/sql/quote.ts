/**
 * Quoting for the few places where SQL text cannot take a bound parameter
 * (identifiers, DDL defaults, JSON paths an expression index must match).
 * Every input is validated by its caller first; quoting is the second fence.
 */
export { quoteIdent } from '../project/schemas.js';

/** A SQL string literal: single quotes, doubled inside. NUL is refused (SQLite would truncate). */
export function quoteLiteral(value: string): string {
  if (value.includes('\0')) throw new Error('NUL in SQL literal');
  return `'${value.replaceAll("'", "''")}'`;
}

/** A JSON path segment we accept: letters, digits, underscore (no quoting games inside `$.a.b`). */
export const JSON_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** `'$.a.b'` for validated segments; the same text everywhere so expression indexes match. */
export function jsonPathLiteral(segments: readonly string[]): string {
  for (const s of segments) if (!JSON_KEY.test(s)) throw new Error(`invalid JSON path segment ${s}`);
  return quoteLiteral(`$.${segments.join('.')}`);
}

/** `json_extract("data", '$.a.b')`: the one spelling of a document field (filters, RLS, indexes). */
export const jsonField = (segments: readonly string[]): string => `json_extract("data", ${jsonPathLiteral(segments)})`;
