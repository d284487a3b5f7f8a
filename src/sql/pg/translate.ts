import { EdgeError } from '../../core/errors.js';
import { sqlParser } from '../parser.js';
import { quoteIdent } from '../../project/schemas.js';
import type Database from 'better-sqlite3';
import { registerFunctions } from '../functions.js';
import { BIND_CONVERSIONS, Emitter, PRIMARY_KEY_MARK, unsupported, type Node } from './emit.js';
import { Lru } from './lru.js';
import { parseWithFallback } from './parse.js';
import { statement, type Statement } from './statements.js';
import type { ColumnType, SchemaLookup } from './types.js';
import type { Introspect } from './introspect.js';


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
export function translate(sql: string, schema: SchemaLookup, cacheKey: string, introspect?: Introspect): Translation {
  const hit = cache.get(sql, cacheKey);
  if (hit) return hit;
  const t = translateUncached(sql, schema, introspect);
  cache.set(sql, cacheKey, t);
  return t;
}

/** A cached translation, or undefined (no parsing: the synchronous fast path of query.ts). */
export const cachedTranslation = (sql: string, cacheKey: string): Translation | undefined => cache.get(sql, cacheKey);

export function translateUncached(sql: string, schema: SchemaLookup, introspect?: Introspect): Translation {
  checkSql(sql);
  const nodes: unknown[] = [];
  // note: as parseScript, synchronously.
  for (const part of scriptPieces(sql)) {
    const text = pieceText(part);
    if (text === null) {
      nodes.push(part);
      continue;
    }
    let ast: unknown;
    try {
      ast = parseWithFallback(sqlParser('postgresql'), sqlParser('mysql'), text);
    } catch (err) {
      throw parseError(err, text);
    }
    nodes.push(...marked(part, ast));
  }
  return fromAst(nodes, schema, introspect);
}

/**
 * The same with parsing elsewhere (`parse`: the SQL worker pool — node-sql-parser takes
 * about a second per 100 KB, which must not block the main thread). Cached like translate().
 */
export async function translateAsync(sql: string, schema: SchemaLookup, cacheKey: string, parse: (sql: string) => Promise<unknown>, introspect?: Introspect): Promise<Translation> {
  const hit = cache.get(sql, cacheKey);
  if (hit) return hit;
  checkSql(sql);
  let ast: unknown;
  try {
    ast = await parseScript(sql, parse);
  } catch (err) {
    if (err instanceof EdgeError) throw err;
    throw parseError(err, sql);
  }
  const t = fromAst(ast, schema, introspect);
  cache.set(sql, cacheKey, t);
  return t;
}

/** NATURAL JOIN, which node-sql-parser reads exactly as a CROSS JOIN (the same tree): refused before parsing. */
const NATURAL_JOIN = /\bnatural\s+(?:(?:left|right|full)\s+(?:outer\s+)?|inner\s+)?join\b/i;

function refuseUnreadable(sql: string): void {
  if (!/natural/i.test(sql)) return;
  mapCode(sql, (code) => {
    if (NATURAL_JOIN.test(code)) throw unsupported('NATURAL JOIN (write JOIN … USING (columns))');
    return code;
  });
}

function checkSql(sql: string): void {
  if (typeof sql !== 'string' || sql.trim() === '') throw new EdgeError('invalid_field', 'sql: must be a non-empty string', { details: { field: 'sql' } });
  if (sql.length > MAX_SQL) throw new EdgeError('payload_too_large', `sql is longer than ${MAX_SQL} characters`);
  if (sql.includes('\0')) throw new EdgeError('invalid_field', 'sql: must not contain NUL characters', { details: { field: 'sql' } });
  refuseUnreadable(sql);
}

/** SQLite's own statements: never run for any caller (they reach files, settings or extensions). */
const REFUSED = new Set(['ATTACH', 'DETACH', 'PRAGMA', 'VACUUM', 'REINDEX', 'ANALYZE']);

/**
 * The statements of a script: the text between top-level `;`, outside comments, string
 * literals and quoted names, trimmed, empty ones left out. Used to name a statement the
 * parser refused, and to take out the statements parsed here rather than by the parser.
 */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let from = 0;
  for (let i = 0; i < sql.length; ) {
    const end = skipNonCode(sql, i);
    if (end !== -1) i = end;
    else if (sql[i] === ';') {
      out.push(sql.slice(from, i));
      from = ++i;
    } else i++;
  }
  out.push(sql.slice(from));
  return out.map(stripComments).filter((x) => x !== '');
}

/**
 * Where a comment (line or block), a string literal or a quoted name starting at `i` ends
 * (a doubled quote inside is an escaped quote); -1 when `i` starts none. The one scanner
 * for everything here that reads SQL text around the parser.
 */
function skipNonCode(sql: string, i: number): number {
  const c = sql[i];
  if (c === '-' && sql[i + 1] === '-') {
    const nl = sql.indexOf('\n', i);
    return nl === -1 ? sql.length : nl + 1;
  }
  if (c === '/' && sql[i + 1] === '*') {
    const end = sql.indexOf('*/', i + 2);
    return end === -1 ? sql.length : end + 2;
  }
  if (c === "'" || c === '"') {
    let j = i + 1;
    while (j < sql.length && !(sql[j] === c && sql[j + 1] !== c)) j += sql[j] === c ? 2 : 1;
    return Math.min(j + 1, sql.length);
  }
  return -1;
}

/** A statement's text without its leading/trailing comments and blanks. */
function stripComments(s: string): string {
  let t = s.trim();
  for (;;) {
    if (t.startsWith('--')) {
      const nl = t.indexOf('\n');
      t = nl === -1 ? '' : t.slice(nl + 1).trim();
    } else if (t.startsWith('/*')) {
      const end = t.indexOf('*/');
      t = end === -1 ? '' : t.slice(end + 2).trim();
    } else return t;
  }
}

/** The first word of each statement (upper case). */
export function statementKeywords(sql: string): string[] {
  return splitStatements(sql).map((s) => (/^[A-Za-z_]+/.exec(s)?.[0] ?? '').toUpperCase());
}

/**
 * `ALTER TABLE [IF EXISTS] [ONLY] [public.]t ENABLE|DISABLE ROW LEVEL SECURITY`: node-sql-parser does not
 * read it, so it is recognised here (FORCE/NO FORCE, which concern table owners, are refused by name).
 */
const RLS_TOGGLE = /^alter\s+table\s+(?:if\s+exists\s+)?(?:only\s+)?(?:("?)public\1\s*\.\s*)?("?)([a-z_][a-z0-9_]*)\2\s+(enable|disable|force|no\s+force)\s+row\s+level\s+security$/i;

/** An RLS toggle statement as a node (`{type: 'pe_rls', table, enable}`), or null for any other statement. */
function rlsNode(part: string): Node | null {
  const m = RLS_TOGGLE.exec(part);
  if (!m) return null;
  const action = m[4]!.toLowerCase().replace(/\s+/g, ' ');
  if (action !== 'enable' && action !== 'disable') throw unsupported(`ALTER TABLE … ${action.toUpperCase()} ROW LEVEL SECURITY`);
  return { type: 'pe_rls', table: m[3]!.toLowerCase(), enable: action === 'enable' };
}

const POLICY_START = /^(create|drop|alter)\s+policy\b/i;

/**
 * `CREATE POLICY name ON [public.]t [AS PERMISSIVE] [FOR ALL|SELECT|INSERT|UPDATE|DELETE]
 * [TO role, …] [USING (expr)] [WITH CHECK (expr)]` as a node (`{type: 'pe_policy', …}`; the
 * expressions stay text for the RLS compiler), or null for any other statement.
 * node-sql-parser has no grammar for policies, so the clauses are read here, token by token.
 */
function policyNode(part: string): Node | null {
  const m = POLICY_START.exec(part);
  if (!m) return null;
  const verb = m[1]!.toUpperCase();
  if (verb !== 'CREATE') throw unsupported(`${verb} POLICY (policies have no names here: rewrite a table's policies with PUT /db/tables/{t}/rls)`);
  const r = new ClauseReader(part, m[0].length);
  const name = r.name('a policy name');
  r.keyword('on');
  let table = r.name('a table name');
  if (r.punct('.')) {
    if (table !== 'public') throw unsupported(`policies on tables outside the public schema ("${table}")`);
    table = r.name('a table name');
  }
  let command = 'all';
  const roles: string[] = [];
  let using: string | null = null;
  let check: string | null = null;
  if (r.keyword('as', true)) {
    const kind = r.word();
    if (kind === 'restrictive') throw unsupported('restrictive policies (AS RESTRICTIVE): policies here are permissive');
    if (kind !== 'permissive') throw r.fail('PERMISSIVE');
  }
  if (r.keyword('for', true)) {
    command = r.word() ?? '';
    if (!['all', 'select', 'insert', 'update', 'delete'].includes(command)) throw r.fail('ALL, SELECT, INSERT, UPDATE or DELETE');
  }
  if (r.keyword('to', true)) {
    do roles.push(r.name('a role name'));
    while (r.punct(','));
  }
  if (r.keyword('using', true)) using = r.group();
  if (r.keyword('with', true)) {
    r.keyword('check');
    check = r.group();
  }
  if (!r.atEnd()) throw r.fail('the end of the statement');
  return { type: 'pe_policy', name, table, command, roles, using, check };
}

/** Reads the clauses of a statement node-sql-parser has no grammar for: names, keywords and parenthesised text. */
class ClauseReader {
  constructor(
    readonly s: string,
    public i: number,
  ) {}

  /** Past blanks and comments (not literals: they are tokens here). */
  #skip(): void {
    for (;;) {
      while (this.i < this.s.length && /\s/.test(this.s[this.i]!)) this.i++;
      const c = this.s[this.i];
      const end = c === '-' || c === '/' ? skipNonCode(this.s, this.i) : -1;
      if (end === -1) return;
      this.i = end;
    }
  }

  atEnd(): boolean {
    this.#skip();
    return this.i >= this.s.length;
  }

  /** A bare word, lower case (null, and nothing read, when there is none). */
  word(): string | null {
    this.#skip();
    const m = /^[A-Za-z_][A-Za-z0-9_$]*/.exec(this.s.slice(this.i, this.i + 200));
    if (!m) return null;
    this.i += m[0].length;
    return m[0].toLowerCase();
  }

  /** A name: a bare word (folded to lower case) or a double-quoted identifier (kept as written). */
  name(what: string): string {
    this.#skip();
    if (this.s[this.i] === '"') {
      let out = '';
      let j = this.i + 1;
      for (;;) {
        if (j >= this.s.length) throw this.fail(what);
        if (this.s[j] === '"') {
          if (this.s[j + 1] !== '"') break;
          out += '"';
          j += 2;
        } else out += this.s[j++];
      }
      this.i = j + 1;
      if (out === '') throw this.fail(what);
      return out;
    }
    const w = this.word();
    if (w === null) throw this.fail(what);
    return w;
  }

  /** Reads `kw` (true); when it is not next, false if `optional`, else a 400. */
  keyword(kw: string, optional = false): boolean {
    const at = this.i;
    if (this.word() === kw) return true;
    this.i = at;
    if (optional) return false;
    throw this.fail(kw.toUpperCase());
  }

  punct(c: string): boolean {
    this.#skip();
    if (this.s[this.i] !== c) return false;
    this.i++;
    return true;
  }

  /** `( … )`: the text inside, up to the matching parenthesis (outside strings, quoted names and comments). */
  group(): string {
    this.#skip();
    if (this.s[this.i] !== '(') throw this.fail('(');
    let depth = 0;
    for (let j = this.i; j < this.s.length; ) {
      const c = this.s[j]!;
      const end = c === "'" || c === '"' || c === '-' || c === '/' ? skipNonCode(this.s, j) : -1;
      if (end !== -1) j = end;
      else {
        if (c === '(') depth++;
        else if (c === ')' && --depth === 0) {
          const inner = this.s.slice(this.i + 1, j);
          this.i = j + 1;
          return inner;
        }
        j++;
      }
    }
    throw this.fail(')');
  }

  fail(expected: string): EdgeError {
    const near = this.s.slice(this.i, this.i + 30).trim();
    return new EdgeError('unsupported_sql', `CREATE POLICY does not parse: expected ${expected} ${near ? `at "${near}"` : 'at the end'}`, { details: { construct: 'CREATE POLICY' } });
  }
}

/**
 * What to parse: the whole script, or — when it holds statements read here (RLS toggles,
 * policies) — those as nodes and each other statement as text of its own.
 */
function scriptPieces(sql: string): Piece[] {
  const parts = splitStatements(sql);
  if (!parts.some((p) => RLS_TOGGLE.test(p) || POLICY_START.test(p) || (TABLE_DDL.test(p) && (ALWAYS_IDENTITY.test(p) || BARE_REFERENCES.test(p))))) return [sql];
  return parts.map((p) => rlsNode(p) ?? policyNode(p) ?? rewrittenDdl(p) ?? p);
}

/** A statement to parse with a mark for the nodes it yields (what its text could not say to the parser). */
class Marked {
  constructor(
    readonly sql: string,
    readonly mark: Record<string, unknown>,
  ) {}
}
type Piece = Node | string | Marked;

/** A piece's text to parse; null for a node read here. */
const pieceText = (p: Piece): string | null => (typeof p === 'string' ? p : p instanceof Marked ? p.sql : null);

/** The nodes of a parsed piece, with its mark. */
function marked(p: Piece, ast: unknown): unknown[] {
  const nodes = Array.isArray(ast) ? ast : [ast];
  return p instanceof Marked ? nodes.map((n) => ({ ...(n as object), ...p.mark })) : nodes;
}

const TABLE_DDL = /^(create|alter)\s+table\b/i;
/** node-sql-parser reads `GENERATED BY DEFAULT AS IDENTITY` but not `GENERATED ALWAYS AS IDENTITY`. */
const ALWAYS_IDENTITY = /\bgenerated\s+always\s+as\s+identity\b/i;
/**
 * `REFERENCES t` without a column list (Postgres: t's primary key), which node-sql-parser
 * does not read: an unquoted, possibly schema-qualified name not followed by `(`.
 */
const BARE_REFERENCES = /\breferences\s+([a-z_][a-z0-9_$]*(?:\s*\.\s*[a-z_][a-z0-9_$]*)?)(?![\w$.])(?!\s*\()/i;

/**
 * A `CREATE`/`ALTER TABLE` in a form node-sql-parser does not read, rewritten (only code,
 * outside literals and comments) to one it does, and marked with what the rewrite hides:
 * `GENERATED ALWAYS AS IDENTITY` is parsed as BY DEFAULT and marked (statements.ts adds what
 * ALWAYS means: an explicit value is refused); `REFERENCES t` gets the column list
 * `(pe_primary_key)`, which statements.ts reads as t's primary key.
 */
function rewrittenDdl(part: string): Marked | null {
  if (!TABLE_DDL.test(part)) return null;
  let always = false;
  let changed = false;
  const text = mapCode(part, (code) =>
    code
      .replace(new RegExp(ALWAYS_IDENTITY.source, 'gi'), () => {
        always = changed = true;
        return 'generated by default as identity';
      })
      .replace(new RegExp(BARE_REFERENCES.source, 'gi'), (_, name: string) => {
        changed = true;
        return `references ${name} (${PRIMARY_KEY_MARK})`;
      }),
  );
  return changed ? new Marked(text, always ? { pe_identity_always: true } : {}) : null;
}

/** `sql` with `fn` applied to its code, leaving string literals, quoted names and comments as they are. */
function mapCode(sql: string, fn: (code: string) => string): string {
  let out = '';
  let from = 0;
  const flush = (to: number) => {
    out += fn(sql.slice(from, to));
    from = to;
  };
  for (let i = 0; i < sql.length; ) {
    const end = skipNonCode(sql, i);
    if (end === -1) {
      i++;
      continue;
    }
    flush(i);
    out += sql.slice(i, end);
    from = i = end;
  }
  flush(sql.length);
  return out;
}

/** The script as parsed nodes (see scriptPieces). */
async function parseScript(sql: string, parse: (sql: string) => unknown): Promise<unknown> {
  const pieces = scriptPieces(sql);
  if (pieces.length === 1 && typeof pieces[0] === 'string') return parse(sql);
  const nodes: unknown[] = [];
  for (const part of pieces) {
    const text = pieceText(part);
    if (text === null) {
      nodes.push(part);
      continue;
    }
    let ast: unknown;
    try {
      ast = await parse(text);
    } catch (err) {
      if (err instanceof EdgeError) throw err;
      throw parseError(err, text);
    }
    nodes.push(...marked(part, ast));
  }
  return nodes;
}

function parseError(err: unknown, sql: string): EdgeError {
  const refused = statementKeywords(sql).find((k) => REFUSED.has(k));
  if (refused) {
    return new EdgeError('unsupported_sql', `${refused} statements are never allowed: they reach SQLite's files, settings or extensions, which each project's database does not expose`, {
      details: { construct: refused },
    });
  }
  const msg = err instanceof Error ? err.message.split('\n')[0]!.slice(0, 200) : '';
  return new EdgeError('unsupported_sql', `the SQL does not parse as the PostgreSQL the translator supports${msg ? ` (${msg})` : ''}`, {
    details: { construct: 'syntax' },
  });
}

function fromAst(ast: unknown, schema: SchemaLookup, introspect?: Introspect): Translation {
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
    const em = new Emitter(introspect ? { schema: view, introspect } : { schema: view });
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

type Conversion = (v: unknown) => unknown;
let conversions: Map<string, Conversion> | null = null;

/**
 * A conversion of emit.ts's BIND_CONVERSIONS for bound values: the very function SQLite
 * would call (taken from registerFunctions), so the result is the same; a value it rejects
 * is a 400, as in Postgres where a parameter is typed when it is bound.
 */
function conversion(fn: string): Conversion {
  if (!conversions) {
    const found = new Map<string, Conversion>();
    const collect = { function: (name: string, _opts: unknown, f: Conversion) => found.set(name, (v: unknown) => convertWith(f, v)) };
    registerFunctions(collect as unknown as Database.Database, { at: Number.POSITIVE_INFINITY, n: 0 });
    conversions = found;
  }
  const f = conversions.get(fn);
  if (!f || !BIND_CONVERSIONS.has(fn)) throw new Error(`no bind conversion ${fn}`);
  return f;
}

function convertWith(f: Conversion, v: unknown): unknown {
  try {
    return f(v);
  } catch (err) {
    const m = /^pe_invalid_input: (.*)$/s.exec(err instanceof Error ? err.message : '');
    if (m) throw new EdgeError('invalid_request', m[1]!.slice(0, 300));
    throw err;
  }
}

/** A JSON parameter value → what SQLite stores (booleans 1/0, objects and arrays as JSON text). */
export function bindValue(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number' || typeof v === 'string') return v;
  return JSON.stringify(v);
}
