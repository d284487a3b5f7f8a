import { EdgeError } from '../../core/errors.js';
import { quoteIdent } from '../../project/schemas.js';
import { conversion, type Conversion } from './bind-conversion.js';
import { Emitter, unsupported, type Node } from './emit.js';
import { Lru } from './lru.js';
import { lowerStatement, NEVER_ALLOWED, neverAllowed } from './lower-stmt.js';
import { isRawSyntaxError, parseScript as parseStatements, statementsOf, syntaxError, unparsable, type ParsedStatement } from './parse.js';
import { statement, type Statement } from './statements.js';
import { statementPrivileges } from './privileges.js';
import type { ColumnType, SchemaLookup } from './types.js';
import type { Introspect } from './introspect.js';
import { applyViewEffect, type StoredView, type ViewCatalog } from './views.js';
import { scriptFunctions, type FunctionLookup } from './sql-functions.js';


/** A translated script: its statements and the caller parameters it uses. */
export interface Translation {
  statements: Statement[];
  /** The highest `$n` used. */
  maxParam: number;
  readOnly: boolean;
  /** Physical tables referenced anywhere. */
  tables: ReadonlySet<string>;
  /** The table privileges it needs (privileges.ts), checked per caller (src/sql/grants.ts). */
  privileges: ReadonlyMap<string, number>;
  /** A script's statements' first lines (for an error while it runs: details.statement_text). */
  texts?: string[];
}

export const MAX_SQL = 256 * 1024;
const MAX_STATEMENTS = 100;
/**
 * Translations by SQL text, then by cache key (project and schema version). Keyed by the text
 * as it came (no joined key to build, flatten and hash per lookup: the fast path of query.ts
 * looks up on every request); a text keeps its few newest keys (older schema versions are dead).
 */
class TranslationCache {
  readonly #bySql = new Lru<string, Map<string, Translation>>(500);

  get(sql: string, key: string): Translation | undefined {
    return this.#bySql.get(sql)?.get(key);
  }

  set(sql: string, key: string, t: Translation): void {
    if (sql.length > MAX_CACHED_SQL) return;
    let forSql = this.#bySql.get(sql);
    if (!forSql) this.#bySql.set(sql, (forSql = new Map()));
    forSql.delete(key);
    forSql.set(key, t);
    if (forSql.size > KEYS_PER_SQL) forSql.delete(forSql.keys().next().value as string);
  }
}
const KEYS_PER_SQL = 4;
const cache = new TranslationCache();
/** Longer SQL is translated each time: the cache must not hold hundreds of megabytes of keys. */
const MAX_CACHED_SQL = 16 * 1024;

/**
 * Postgres SQL → SQLite (docs/sql.md "How it works": parse → rewrite → emit, never regex). Cached by
 * `cacheKey` + SQL text; the key must change whenever the schema does (the caller
 * passes project id and SQLite's schema_version).
 */
export function translate(sql: string, schema: SchemaLookup, cacheKey: string, introspect?: Introspect, views?: ViewCatalog): Translation {
  const hit = cache.get(sql, cacheKey);
  if (hit) return hit;
  const t = translateUncached(sql, schema, introspect, views);
  cache.set(sql, cacheKey, t);
  return t;
}

/** A cached translation, or undefined (no parsing: the synchronous fast path of query.ts). */
export const cachedTranslation = (sql: string, cacheKey: string): Translation | undefined => cache.get(sql, cacheKey);

export function translateUncached(sql: string, schema: SchemaLookup, introspect?: Introspect, views?: ViewCatalog): Translation {
  checkSql(sql);
  return fromStatements(sql, parseScript(sql), schema, introspect, views);
}

/** SQL up to this length is parsed on the main thread (about 0.1 ms a line); longer in the worker pool. */
export const MAIN_THREAD_PARSE = 4 * 1024;

/**
 * The same with parsing of long SQL elsewhere (`parse`: the SQL worker pool, which answers
 * libpg-query's raw result as JSON text, or its raw syntax error), so a 256 KB script does not block the
 * main thread. Cached like translate().
 */
export async function translateAsync(sql: string, schema: SchemaLookup, cacheKey: string, parse: (sql: string) => Promise<unknown>, introspect?: Introspect, views?: ViewCatalog, functions?: FunctionLookup): Promise<Translation> {
  const hit = cache.get(sql, cacheKey);
  if (hit) return hit;
  checkSql(sql);
  let stmts: ParsedStatement[];
  if (sql.length <= MAIN_THREAD_PARSE) stmts = parseScript(sql);
  else {
    let raw: unknown;
    try {
      raw = await parse(sql);
    } catch (err) {
      if (isRawSyntaxError(err)) throw refusedOr(syntaxError(sql, err));
      if ((err as { code?: unknown } | null)?.code === 'pe_parse') throw unparsable();
      throw err;
    }
    let tree: Parameters<typeof statementsOf>[1];
    try {
      tree = JSON.parse(raw as string) as Parameters<typeof statementsOf>[1];
    } catch {
      throw unparsable();
    }
    stmts = statementsOf(sql, tree);
  }
  const t = fromStatements(sql, stmts, schema, introspect, views, functions);
  cache.set(sql, cacheKey, t);
  return t;
}

function checkSql(sql: string): void {
  if (typeof sql !== 'string' || sql.trim() === '') throw new EdgeError('invalid_field', 'sql: must be a non-empty string', { details: { field: 'sql' } });
  if (sql.length > MAX_SQL) throw new EdgeError('payload_too_large', `sql is longer than ${MAX_SQL} characters`);
  if (sql.includes('\0')) throw new EdgeError('invalid_field', 'sql: must not contain NUL characters', { details: { field: 'sql' } });
}

/** A syntax error in a statement that starts with one of SQLite's own statements says why it is refused. */
function refusedOr(err: EdgeError): EdgeError {
  const text = String((err.details as { statement_text?: unknown } | undefined)?.statement_text ?? '');
  const first = (/^[A-Za-z_]+/.exec(text)?.[0] ?? '').toUpperCase();
  return NEVER_ALLOWED.has(first) ? neverAllowed(first) : err;
}

function parseScript(sql: string): ParsedStatement[] {
  try {
    return parseStatements(sql);
  } catch (err) {
    if (err instanceof EdgeError && (err.details as { construct?: unknown } | undefined)?.construct === 'syntax') throw refusedOr(err);
    throw err;
  }
}

/** The first word of each statement (upper case), read from the parse. */
export function statementKeywords(sql: string): string[] {
  return parseScript(sql).map((s) => (/^[A-Za-z_]+/.exec(s.text)?.[0] ?? '').toUpperCase());
}

/**
 * The statements as the emitter's nodes. A statement the emitter refuses names itself when
 * the script has several (details.statement, its index, and its first line).
 */
function fromStatements(sql: string, stmts: ParsedStatement[], schema: SchemaLookup, introspect?: Introspect, views?: ViewCatalog, functions?: FunctionLookup): Translation {
  if (stmts.length > MAX_STATEMENTS) throw unsupported(`more than ${MAX_STATEMENTS} statements in one request`);
  const nodes: Node[] = [];
  for (const s of stmts) nodes.push(named(stmts.length, s, () => lowerStatement(s)));
  return fromAst(nodes, schema, introspect, stmts.length > 1 ? stmts : null, views, functions);
}

const firstLine = (text: string): string => text.split('\n')[0]!.trim().slice(0, 120);

/** Runs `fn`; an EdgeError it throws gets the statement's index and first line when the script has several. */
function named<T>(count: number, s: ParsedStatement, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (count > 1 && err instanceof EdgeError && (err.details as { statement?: unknown } | undefined)?.statement === undefined) {
      const first = firstLine(s.text);
      throw new EdgeError(err.code, err.message, {
        ...(err.headers ? { headers: err.headers } : {}),
        details: { ...((err.details as object | undefined) ?? {}), statement: s.index, statement_text: first },
      });
    }
    throw err;
  }
}

function fromAst(nodes: Node[], schema: SchemaLookup, introspect: Introspect | undefined, stmts: ParsedStatement[] | null, views?: ViewCatalog, functions?: FunctionLookup): Translation {
  if (nodes.length === 0) throw new EdgeError('invalid_field', 'sql: contains no statement', { details: { field: 'sql' } });
  // note: later statements of a script see the tables earlier ones create, alter or drop.
  const overrides = new Map<string, ColumnType[] | null>();
  const enumOverrides = new Map<string, string[] | null>();
  const view: SchemaLookup = Object.assign((p: string) => (overrides.has(p) ? overrides.get(p)! : schema(p)), {
    enums: (name: string) => (enumOverrides.has(name) ? enumOverrides.get(name)! : (schema.enums?.(name) ?? null)),
  });
  // note: the views later statements see, with the script's own CREATE/DROP VIEW applied (views.ts).
  let viewMap: Map<string, StoredView> | null = null;
  const viewsNow: ViewCatalog = () => (viewMap ??= new Map(views?.() ?? []));
  const statements: Statement[] = [];
  const tables = new Set<string>();
  const privileges = new Map<string, number>();
  let maxParam = 0;
  // note: and the LANGUAGE sql functions earlier statements create (sql-functions.ts).
  const fns = scriptFunctions(functions);
  for (const [i, n] of nodes.entries()) {
    const em = new Emitter({ schema: view, ...(introspect ? { introspect } : {}), views: viewsNow, functions: fns.lookup });
    const s = stmts ? named(stmts.length, stmts[i]!, () => statement(n, em)) : statement(n, em);
    statements.push(s);
    fns.note(s.routine);
    for (const t of em.tables) tables.add(t);
    statementPrivileges(n, s, em.refs, privileges);
    for (const [t, bits] of s.dmlPrivileges ?? []) privileges.set(t, (privileges.get(t) ?? 0) | bits);
    for (const p of em.params) maxParam = Math.max(maxParam, p);
    if (s.enumEffect) enumOverrides.set(s.enumEffect.name, s.enumEffect.labels);
    if (s.views) {
      applyViewEffect(viewsNow(), s.views);
      // note: SQLite's placeholder of a view takes its name; a later statement sees it made or gone.
      for (const v of s.views.drop ?? []) overrides.set(v, null);
      if (s.views.set) overrides.set(s.views.set.name, s.views.set.columns);
    }
    if (s.effect) {
      if (s.command === 'DROP TABLE') overrides.set(s.effect.table, null);
      else overrides.set(s.effect.table, s.effect.columns);
    }
  }
  const out: Translation = { statements, maxParam, readOnly: statements.every((s) => s.readOnly), tables, privileges };
  if (stmts) out.texts = stmts.map((s) => firstLine(s.text));
  return out;
}

/** How each table reference is emitted for one caller: the table, or its RLS-filtered form. */
export type TableSource = (physical: string) => { sql: string; params: unknown[] };

export const plainTable: TableSource = (p) => ({ sql: quoteIdent(p), params: [] });

/** The caller's values of `auth.uid()`, `auth.role()` and `auth.jwt()` (JSON text) in raw SQL. */
export interface AuthValues {
  uid: string | null;
  role: string;
  jwt: string | null;
}
const AUTH_KEYS = ['uid', 'role', 'jwt'] as const;
const NO_AUTH: AuthValues = { uid: null, role: 'service_role', jwt: null };

/** Resolves the markers of one emitted statement for one caller: `?` placeholders and their values. */
export function bind(sql: string, params: readonly unknown[], source: TableSource, fixed: readonly unknown[] = [], timed = true, auth: AuthValues = NO_AUTH): { sql: string; params: unknown[] } {
  const out: unknown[] = [];
  const text = sql.replace(MARKER, (_, kind: string, v: string) => {
    if (kind === 'P') {
      out.push(paramValue(v, params));
      return '?';
    }
    if (kind === 'A') {
      out.push(auth[v as keyof AuthValues]);
      return '?';
    }
    if (kind === 'K') return tick(v, timed);
    const t = source(v);
    out.push(...t.params);
    return t.sql;
  });
  out.push(...fixed);
  return { sql: text, params: out };
}

const MARKER = /\0([PTKA])([^\0]*)\0/g;

/** `pe_tick(…)` where a time limit applies (the worker pool), else the constant true. */
const tick = (columns: string, timed: boolean): string => (timed ? `pe_tick(${columns})` : '1');

interface PlainStep {
  sql: string;
  /** Per placeholder: the caller's parameter index (or -1 - AUTH_KEYS index: an auth value) and its bind-time conversion. */
  order: number[];
  convert: Array<Conversion | null>;
}

/** The service role's form of a step, computed once per cached translation and timing: plain tables, `?` in order. */
const plainSteps = new WeakMap<object, { timed?: PlainStep; untimed?: PlainStep }>();

/**
 * The service role's binding of a step. `timed: false` leaves out the time-limit checks:
 * only for statements that cannot run long (query.ts runs such point lookups inline).
 */
export function bindPlain(step: { sql: string; fixed?: unknown[] }, params: readonly unknown[], timed = true, auth: AuthValues = NO_AUTH): { sql: string; params: unknown[]; host: object } {
  let forStep = plainSteps.get(step);
  if (!forStep) plainSteps.set(step, (forStep = {}));
  let c = timed ? forStep.timed : forStep.untimed;
  if (!c) {
    const order: number[] = [];
    const convert: Array<Conversion | null> = [];
    const sql = step.sql.replace(MARKER, (_, kind: string, v: string) => {
      if (kind === 'P') {
        const p = paramMarker(v);
        order.push(p.index);
        convert.push(p.convert === null ? null : conversion(p.convert));
        return '?';
      }
      if (kind === 'A') {
        order.push(-1 - AUTH_KEYS.indexOf(v as keyof AuthValues));
        convert.push(null);
        return '?';
      }
      if (kind === 'K') return tick(v, timed);
      return quoteIdent(v);
    });
    c = { sql, order, convert };
    if (timed) forStep.timed = c;
    else forStep.untimed = c;
  }
  const out = new Array<unknown>(c.order.length);
  for (let i = 0; i < c.order.length; i++) {
    const at = c.order[i]!;
    const v = at >= 0 ? bindValue(params[at]) : auth[AUTH_KEYS[-1 - at]!];
    const fn = c.convert[i];
    out[i] = fn ? fn(v) : v;
  }
  if (step.fixed) out.push(...step.fixed);
  // note: `host` is the same object for every call with this step: callers cache per-SQL decisions on it.
  return { sql: c.sql, params: out, host: c };
}

/** A `P` marker's text, `n` or `n:fn`: the parameter's index and its bind-time conversion. */
function paramMarker(marker: string): { index: number; convert: string | null } {
  const colon = marker.indexOf(':');
  return colon === -1 ? { index: Number(marker) - 1, convert: null } : { index: Number(marker.slice(0, colon)) - 1, convert: marker.slice(colon + 1) };
}

/** One `P` marker's bound value. */
function paramValue(marker: string, params: readonly unknown[]): unknown {
  const p = paramMarker(marker);
  const v = bindValue(params[p.index]);
  return p.convert === null ? v : conversion(p.convert)(v);
}

/** A JSON parameter value → what SQLite stores (booleans 1/0, objects and arrays as JSON text). */
export function bindValue(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number' || typeof v === 'string') return v;
  return JSON.stringify(v);
}
