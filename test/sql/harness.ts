import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { TestServer } from '../helpers/server.js';

/** One corpus entry: a statement run on PostgreSQL (PGlite) and through POST /db/query. */
export interface Entry {
  sql: string;
  params?: unknown[];
  /** Compare rows in order (the statement orders them); otherwise as a multiset. */
  ordered?: boolean;
  /** Listed on purpose as not translated: our side must answer 400 unsupported_sql. */
  unsupported?: boolean;
  /**
   * A table made through the rows API on our side (this `POST /db/tables` body), and by
   * `sql` on Postgres (a script: the equivalent DDL, with a trigger where the rows API keeps
   * `updated_at` current). Both answer no rows.
   */
  rowsApi?: Record<string, unknown>;
}

/**
 * A failure carries its kind: the SQLSTATE class (two characters) — Postgres' own, or the
 * one our answer stands for (see ourClass) — so that two failures match only when they are
 * the same kind of error, never merely both errors.
 */
export type Outcome = { ok: true; columns: string[]; rows: unknown[][] } | { ok: false; code: string; message: string; sqlClass: string };

const PG_DATE = 1082;
const PG_TIMESTAMP = 1114;
const PG_TIMESTAMPTZ = 1184;
const PG_NUMERIC = 1700;
const PG_NUMERIC_ARRAY = 1231;

// note: a new PGlite makes its data folder as initdb would: about 3–6 s of CPU on this machine,
// against about 1.7 s to load a saved one. The first file to start saves the fresh folder to the
// temporary directory (keyed by PGlite's version; written aside, then renamed, so a file started
// at the same time reads a whole one or makes its own), and the files after it load that copy
// (issue 12: the four PGlite files spent most of the sql project's CPU making it).
const PG_VERSION = (JSON.parse(readFileSync(join(import.meta.dirname, '../../node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string }).version;
const SAVED = join(tmpdir(), `pe-test-pglite-${PG_VERSION}-${process.getuid?.() ?? 0}.tar.gz`);

async function freshPg(): Promise<PGlite> {
  try {
    return await PGlite.create({ loadDataDir: new Blob([readFileSync(SAVED)]) });
  } catch {
    const pg = await PGlite.create();
    const dump = Buffer.from(await (await pg.dumpDataDir('gzip')).arrayBuffer());
    const aside = `${SAVED}.${process.pid}`;
    writeFileSync(aside, dump);
    renameSync(aside, SAVED);
    return pg;
  }
}

/** A fresh PostgreSQL (PGlite) for one test file, in UTC; the caller closes it. */
export async function startPg(): Promise<PGlite> {
  const pg = await freshPg();
  await pg.exec(`SET TIME ZONE 'UTC'`);
  return pg;
}

export async function runPg(pg: PGlite, e: Entry): Promise<Outcome> {
  try {
    if (e.rowsApi) {
      await pg.exec(e.sql);
      return { ok: true, columns: [], rows: [] };
    }
    const r = await pg.query<Record<string, unknown>>(e.sql, e.params ?? [], { rowMode: 'array' });
    const types = r.fields.map((f) => f.dataTypeID);
    const rows = (r.rows as unknown as unknown[][]).map((row) => row.map((v, i) => normPg(v, types[i]!)));
    return { ok: true, columns: r.fields.map((f) => f.name), rows };
  } catch (err) {
    const code = String((err as { code?: unknown }).code ?? '');
    return { ok: false, code: code || 'pg_error', message: (err as Error).message, sqlClass: code.slice(0, 2) || '??' };
  }
}

export async function runOurs(s: TestServer, e: Entry): Promise<Outcome> {
  if (e.rowsApi) {
    const made = await s.req('/db/tables', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify(e.rowsApi) });
    if (made.status !== 201) return { ok: false, code: String(made.status), message: await made.text(), sqlClass: '??' };
    return { ok: true, columns: [], rows: [] };
  }
  const res = await s.req('/db/query', {
    method: 'POST',
    key: s.keys.service,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ sql: e.sql, params: e.params ?? [] }),
  });
  const body = (await res.json()) as { error?: { code: string; message: string; details?: Record<string, unknown> }; columns?: { name: string }[]; rows?: Record<string, unknown>[] };
  if (res.status !== 200 || body.error) {
    const code = body.error?.code ?? String(res.status);
    const message = body.error?.message ?? '';
    return { ok: false, code, message, sqlClass: ourClass(code, message, body.error?.details) };
  }
  const cols = body.columns!.map((c) => c.name);
  // note: rows are objects keyed by name; a duplicated name keeps the last value on both sides.
  return { ok: true, columns: cols, rows: body.rows!.map((r) => cols.map((c) => norm(r[c]))) };
}

function normPg(v: unknown, type: number): unknown {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) {
    if (type === PG_DATE) return v.toISOString().slice(0, 10);
    if (type === PG_TIMESTAMP || type === PG_TIMESTAMPTZ) return v.toISOString();
  }
  if (type === PG_NUMERIC && typeof v === 'string') return norm(Number(v));
  if (type === PG_NUMERIC_ARRAY && Array.isArray(v)) return v.map((x) => (typeof x === 'string' ? norm(Number(x)) : norm(x)));
  return norm(v);
}

/** Both sides: bigint → number, floats to 12 significant digits, objects with sorted keys. */
export function norm(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number') return Number.isInteger(v) ? v : Number(v.toPrecision(12));
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return v.map(norm);
  if (typeof v === 'object') {
    const o: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) o[k] = norm((v as Record<string, unknown>)[k]);
    return o;
  }
  return v;
}

/**
 * The SQLSTATE class an answer of ours stands for (docs/api.md "Raw SQL" errors): 23
 * integrity (409 `conflict`; 400 `invalid_field` is NOT NULL / CHECK), 22 data exception
 * (a value the type cannot read, out of range, division by zero), 42 syntax or access
 * (unknown table/column, grouping, SQL that does not parse, a missing scope), 0A feature
 * not supported (`unsupported_sql` naming a construct), 57 `statement_timeout`. Anything
 * else is `??`, which matches nothing.
 */
export function ourClass(code: string, message: string, details?: Record<string, unknown>): string {
  // note: an error that stands for a Postgres one says its SQLSTATE (docs/sql.md "Errors").
  if (typeof details?.sqlstate === 'string') return details.sqlstate.slice(0, 2);
  switch (code) {
    case 'conflict':
    case 'invalid_field':
    case 'rls_denied':
      return '23';
    case 'statement_timeout':
      return '57';
    case 'missing_scope':
      return '42';
    case 'unsupported_sql':
      return details?.construct === 'syntax' ? '42' : '0A';
    case 'invalid_request':
      for (const [re, cls] of MESSAGE_CLASSES) if (re.test(message)) return cls;
      return '??';
    default:
      return '??';
  }
}

/** `invalid_request` reasons by class (SQLite's and the translator's wording). */
const MESSAGE_CLASSES: Array<[RegExp, string]> = [
  [/^invalid input syntax|out of range|^division by zero|^invalid input value|^malformed|^value too long|^numeric field overflow/i, '22'],
  [/^no such (table|column)|^unknown (table|column)|does not exist|already exists|^ambiguous column|must appear in the GROUP BY|^duplicate column|non-DEFAULT value into column|can only be updated to DEFAULT/i, '42'],
];

/**
 * Whether two outcomes match: the same columns and rows (order only where the query
 * orders), or two failures of the same kind (the same SQLSTATE class).
 */
export function same(e: Entry, a: Outcome, b: Outcome): boolean {
  if (!a.ok || !b.ok) return !a.ok && !b.ok && a.sqlClass === b.sqlClass;
  if (JSON.stringify(a.columns) !== JSON.stringify(b.columns)) return false;
  const ra = a.rows.map((r) => JSON.stringify(r));
  const rb = b.rows.map((r) => JSON.stringify(r));
  if (!e.ordered) {
    ra.sort();
    rb.sort();
  }
  return JSON.stringify(ra) === JSON.stringify(rb);
}
