import { createRequire } from 'node:module';
import v8 from 'node:v8';
import { EdgeError } from '../../core/errors.js';

/**
 * The SQL front end: PostgreSQL's own parser (libpg-query, PostgreSQL 18 compiled to
 * WebAssembly). Loaded once at startup (`loadParser`, awaited by the server before it
 * listens); `parseScript` is synchronous after that. A syntax error is Postgres' own message
 * and position (docs/api.md "SQL syntax errors").
 */

/** One node of libpg-query's tree: `{ NodeType: { …fields } }`. */
export type PgNode = Record<string, unknown>;

interface ParseResult {
  stmts?: Array<{ stmt: PgNode; stmt_location?: number; stmt_len?: number }>;
}
interface ScanToken {
  start: number;
  end: number;
  text: string;
  tokenName: string;
}
interface LibPgQuery {
  loadModule(): Promise<void>;
  parseSync(sql: string): ParseResult;
  scanSync(sql: string): { tokens: ScanToken[] };
}

/** One statement of a parsed script. */
export interface ParsedStatement {
  /** Its node (`{ SelectStmt: … }`, …). */
  node: PgNode;
  /** Its text (without the separating `;`), and where it starts in the script (0-based). */
  text: string;
  start: number;
  /** Its index in the script (0-based). */
  index: number;
}

const require = createRequire(import.meta.url);
let lib: LibPgQuery | null = null;
let loading: Promise<void> | null = null;

/**
 * Loads the parser (once; later calls return the same promise). V8 compiles the WebAssembly
 * with its baseline compiler only (Liftoff): the optimising tier adds about 38 MB of resident
 * memory for a parse that is then barely faster (docs/benchmarks.md "SQL parse").
 */
export function loadParser(): Promise<void> {
  if (loading) return loading;
  loading = (async () => {
    v8.setFlagsFromString('--liftoff-only');
    const m = require('libpg-query') as LibPgQuery;
    await m.loadModule();
    lib = m;
  })();
  return loading;
}

export const parserReady = (): boolean => lib !== null;

function parser(): LibPgQuery {
  if (!lib) throw new EdgeError('unavailable', 'the SQL parser is still loading; retry shortly', { headers: { 'retry-after': '1' } });
  return lib;
}

/** The error libpg-query throws: its message and the 0-based offset of the error in the parsed text. */
export interface RawSyntaxError {
  message: string;
  cursor: number;
}

export function rawError(err: unknown): RawSyntaxError {
  const d = (err as { sqlDetails?: { message?: string; cursorPosition?: number } } | null)?.sqlDetails;
  const message = d?.message ?? (err instanceof Error ? err.message : String(err));
  return { message: String(message).split('\n')[0]!.slice(0, 300), cursor: typeof d?.cursorPosition === 'number' ? d.cursorPosition : -1 };
}

export const isRawSyntaxError = (e: unknown): e is RawSyntaxError =>
  typeof e === 'object' && e !== null && typeof (e as RawSyntaxError).message === 'string' && typeof (e as RawSyntaxError).cursor === 'number' && !(e instanceof Error);

/** What the parser could not read but did not call a syntax error (its tree nested too deep for JavaScript's stack). */
export const unparsable = (): EdgeError =>
  new EdgeError('unsupported_sql', 'not supported: statements nested this deeply (the parse tree is too deep to read)', { details: { construct: 'nesting' } });

/** The statements of a script (main thread). */
export function parseScript(sql: string): ParsedStatement[] {
  let r: ParseResult;
  try {
    r = parser().parseSync(sql);
  } catch (err) {
    if (err instanceof EdgeError) throw err;
    if (!(err as { sqlDetails?: unknown } | null)?.sqlDetails) throw unparsable();
    throw syntaxError(sql, rawError(err));
  }
  return statementsOf(sql, r);
}

/** A raw parse result → its statements, with their text. */
export function statementsOf(sql: string, r: ParseResult): ParsedStatement[] {
  const at = charOffsets(sql);
  return (r.stmts ?? []).map((s, index) => {
    const bytes = s.stmt_location ?? 0;
    const from = at(bytes);
    const to = s.stmt_len === undefined || s.stmt_len === 0 ? sql.length : at(bytes + s.stmt_len);
    const raw = sql.slice(from, to);
    const text = withoutLeadingComments(raw);
    return { node: s.stmt, text, start: from + raw.indexOf(text), index };
  });
}

/** A statement's text without the blanks and comments before and after it. */
function withoutLeadingComments(s: string): string {
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

/**
 * Postgres' syntax error as a 400 `unsupported_sql`: its message, and where: `position`
 * (1-based, in characters, within the failing statement, as Postgres counts it for a single
 * statement), `line` and `column` (1-based, in the whole script), `statement` (0-based index
 * in the script) and the statement's first line.
 */
export function syntaxError(sql: string, e: RawSyntaxError): EdgeError {
  const cursor = e.cursor < 0 ? sql.length : Math.min(charOffsets(sql)(e.cursor), sql.length);
  const { index, start } = statementAt(sql, cursor);
  const before = sql.slice(0, cursor);
  const line = before.split('\n').length;
  const column = cursor - (before.lastIndexOf('\n') + 1) + 1;
  const firstLine = sql.slice(start).split('\n')[0]!.trim().slice(0, 120);
  return new EdgeError('unsupported_sql', e.message, {
    details: { construct: 'syntax', sqlstate: '42601', position: cursor - start + 1, line, column, statement: index, statement_text: firstLine },
  });
}

/**
 * Which statement of a script holds offset `at`: the `;` tokens before it, read by Postgres'
 * own lexer (the text before a syntax error lexes; when even that fails, the whole script is
 * statement 0).
 */
function statementAt(sql: string, at: number): { index: number; start: number } {
  let tokens: ScanToken[];
  try {
    tokens = parser().scanSync(sql.slice(0, at)).tokens;
  } catch {
    return { index: 0, start: 0 };
  }
  const char = charOffsets(sql);
  let index = 0;
  let start = 0;
  let afterSemi = true;
  for (const raw of tokens) {
    if (raw.tokenName === 'SQL_COMMENT' || raw.tokenName === 'C_COMMENT') continue;
    const t = { ...raw, start: char(raw.start), end: char(raw.end) };
    if (t.text === ';' && t.tokenName === 'ASCII_59') {
      index++;
      afterSemi = true;
      start = t.end;
      continue;
    }
    if (afterSemi) {
      start = t.start;
      afterSemi = false;
    }
  }
  if (afterSemi) {
    // note: nothing after the last `;` but blanks or comments: the statement starts at the error.
    start = at;
    const rest = sql.slice(start);
    start += rest.length - rest.trimStart().length;
  }
  return { index, start: Math.min(start, at) };
}

/**
 * libpg-query counts offsets in UTF-8 bytes; Postgres reports (and JavaScript slices) in
 * characters: byte offset → UTF-16 index of `sql`.
 */
export function charOffsets(sql: string): (byte: number) => number {
  if (/^[\x00-\x7f]*$/.test(sql)) return (b) => b;
  const buf = Buffer.from(sql, 'utf8');
  return (b) => buf.subarray(0, Math.max(0, Math.min(b, buf.length))).toString('utf8').length;
}

/** Postgres' lexer tokens of a text (comments and blanks are not tokens). */
export function tokens(sql: string): ScanToken[] {
  const char = charOffsets(sql);
  return parser().scanSync(sql).tokens.map((t) => ({ ...t, start: char(t.start), end: char(t.end) }));
}

/** PL/pgSQL's own parser over a `CREATE FUNCTION … LANGUAGE plpgsql` statement: its function tree (plpgsql.ts). */
export function parsePlpgsql(sql: string): Record<string, unknown> {
  const l = parser() as LibPgQuery & { parsePlPgSQLSync(sql: string): { plpgsql_funcs?: unknown[] } };
  try {
    const r = l.parsePlPgSQLSync(sql);
    return (r.plpgsql_funcs?.[0] ?? {}) as Record<string, unknown>;
  } catch (err) {
    const d = rawError(err);
    throw new EdgeError('unsupported_sql', `in the function body: ${d.message}`, { details: { construct: 'syntax', sqlstate: '42601' } });
  }
}

/** A statement's tree, parsed alone (PL/pgSQL bodies: each SQL statement and expression). */
export function parseOne(sql: string): PgNode {
  let r: ParseResult;
  try {
    r = parser().parseSync(sql);
  } catch (err) {
    throw new EdgeError('unsupported_sql', `in the function body: ${rawError(err).message}`, { details: { construct: 'syntax', sqlstate: '42601' } });
  }
  if (r.stmts?.length !== 1) throw new EdgeError('unsupported_sql', 'in the function body: expected one statement', { details: { construct: 'syntax' } });
  return r.stmts[0]!.stmt;
}
