import { EdgeError } from '../../edge/errors.js';
import { sqlParser } from '../parser.js';
import { quoteIdent } from '../../project/schemas.js';
import { Emitter, unsupported, type Node } from './emit.js';
import { Lru } from './lru.js';
import { parseWithFallback } from './parse.js';
import { statement, type Statement } from './statements.js';
import type { ColumnType, SchemaLookup } from './types.js';


/** A translated script: its statements and the caller parameters it uses. */
export interface Translation {
  statements: Statement[];
  /** The highest `$n` used. */
  maxParam: number;
  readOnly: boolean;
  /** Physical tables referenced anywhere. */
  tables: ReadonlySet<string>;
}

export const MAX_SQL = 256 * 1024;
const MAX_STATEMENTS = 100;
const cache = new Lru<string, Translation>(1000);
/** Longer SQL is translated each time: the cache must not hold hundreds of megabytes of keys. */
const MAX_CACHED_SQL = 16 * 1024;

/**
 * Postgres SQL → SQLite (DESIGN.md §2: parse → rewrite → emit, never regex). Cached by
 * `cacheKey` + SQL text; the key must change whenever the schema does (the caller
 * passes project id and SQLite's schema_version).
 */
export function translate(sql: string, schema: SchemaLookup, cacheKey: string): Translation {
  const key = `${cacheKey}\0${sql}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const t = translateUncached(sql, schema);
  if (sql.length <= MAX_CACHED_SQL) cache.set(key, t);
  return t;
}

/** A cached translation, or undefined (no parsing: the synchronous fast path of query.ts). */
export const cachedTranslation = (sql: string, cacheKey: string): Translation | undefined => cache.get(`${cacheKey}\0${sql}`);

export function translateUncached(sql: string, schema: SchemaLookup): Translation {
  checkSql(sql);
  let ast: unknown;
  try {
    ast = parseWithFallback(sqlParser('postgresql'), sqlParser('mysql'), sql);
  } catch (err) {
    throw parseError(err);
  }
  return fromAst(ast, schema);
}

/**
 * The same with parsing elsewhere (`parse`: the SQL worker pool — node-sql-parser takes
 * about a second per 100 KB, which must not block the main thread). Cached like translate().
 */
export async function translateAsync(sql: string, schema: SchemaLookup, cacheKey: string, parse: (sql: string) => Promise<unknown>): Promise<Translation> {
  const key = `${cacheKey}\0${sql}`;
  const hit = cache.get(key);
  if (hit) return hit;
  checkSql(sql);
  let ast: unknown;
  try {
    ast = await parse(sql);
  } catch (err) {
    if (err instanceof EdgeError) throw err;
    throw parseError(err);
  }
  const t = fromAst(ast, schema);
  if (sql.length <= MAX_CACHED_SQL) cache.set(key, t);
  return t;
}

function checkSql(sql: string): void {
  if (typeof sql !== 'string' || sql.trim() === '') throw new EdgeError('invalid_field', 'sql: must be a non-empty string', { details: { field: 'sql' } });
  if (sql.length > MAX_SQL) throw new EdgeError('payload_too_large', `sql is longer than ${MAX_SQL} characters`);
  if (sql.includes('\0')) throw new EdgeError('invalid_field', 'sql: must not contain NUL characters', { details: { field: 'sql' } });
}

function parseError(err: unknown): EdgeError {
  const msg = err instanceof Error ? err.message.split('\n')[0]!.slice(0, 200) : '';
  return new EdgeError('unsupported_sql', `the SQL does not parse as the PostgreSQL the translator supports${msg ? ` (${msg})` : ''}`, {
    details: { construct: 'syntax' },
  });
}

function fromAst(ast: unknown, schema: SchemaLookup): Translation {
  const nodes = (Array.isArray(ast) ? ast : [ast]).filter((n): n is Node => n !== null && typeof n === 'object');
  if (nodes.length === 0) throw new EdgeError('invalid_field', 'sql: contains no statement', { details: { field: 'sql' } });
  if (nodes.length > MAX_STATEMENTS) throw unsupported(`more than ${MAX_STATEMENTS} statements in one request`);
  // note: later statements of a script see the tables earlier ones create, alter or drop.
  const overrides = new Map<string, ColumnType[] | null>();
  const view: SchemaLookup = (p) => (overrides.has(p) ? overrides.get(p)! : schema(p));
  const statements: Statement[] = [];
  const tables = new Set<string>();
  let maxParam = 0;
  for (const n of nodes) {
    const em = new Emitter({ schema: view });
    const s = statement(n, em);
    statements.push(s);
    for (const t of em.tables) tables.add(t);
    for (const p of em.params) maxParam = Math.max(maxParam, p);
    if (s.effect) {
      if (s.command === 'DROP TABLE') overrides.set(s.effect.table, null);
      else overrides.set(s.effect.table, s.effect.columns);
    }
  }
  return { statements, maxParam, readOnly: statements.every((s) => s.readOnly), tables };
}

/** How each table reference is emitted for one caller: the table, or its RLS-filtered form. */
export type TableSource = (physical: string) => { sql: string; params: unknown[] };

export const plainTable: TableSource = (p) => ({ sql: quoteIdent(p), params: [] });

/** Resolves the markers of one emitted statement for one caller: `?` placeholders and their values. */
export function bind(sql: string, params: readonly unknown[], source: TableSource, fixed: readonly unknown[] = []): { sql: string; params: unknown[] } {
  const out: unknown[] = [];
  const text = sql.replace(/\0([PT])([^\0]*)\0/g, (_, kind: string, v: string) => {
    if (kind === 'P') {
      out.push(bindValue(params[Number(v) - 1]));
      return '?';
    }
    const t = source(v);
    out.push(...t.params);
    return t.sql;
  });
  out.push(...fixed);
  return { sql: text, params: out };
}

/** The service role's form of a step, computed once per cached translation: plain tables, `?` in order. */
const plainSteps = new WeakMap<object, { sql: string; order: number[] }>();

export function bindPlain(step: { sql: string; fixed?: unknown[] }, params: readonly unknown[]): { sql: string; params: unknown[]; host: object } {
  let c = plainSteps.get(step);
  if (!c) {
    const order: number[] = [];
    const sql = step.sql.replace(/\0([PT])([^\0]*)\0/g, (_, kind: string, v: string) => {
      if (kind === 'P') {
        order.push(Number(v) - 1);
        return '?';
      }
      return quoteIdent(v);
    });
    c = { sql, order };
    plainSteps.set(step, c);
  }
  const out = new Array<unknown>(c.order.length);
  for (let i = 0; i < c.order.length; i++) out[i] = bindValue(params[c.order[i]!]);
  if (step.fixed) out.push(...step.fixed);
  // note: `host` is the same object for every call with this step: callers cache per-SQL decisions on it.
  return { sql: c.sql, params: out, host: c };
}

/** A JSON parameter value → what SQLite stores (booleans 1/0, objects and arrays as JSON text). */
export function bindValue(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number' || typeof v === 'string') return v;
  return JSON.stringify(v);
}
