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
}

export type Outcome = { ok: true; columns: string[]; rows: unknown[][] } | { ok: false; code: string; message: string };

const PG_DATE = 1082;
const PG_TIMESTAMP = 1114;
const PG_TIMESTAMPTZ = 1184;
const PG_NUMERIC = 1700;

export async function startPg(): Promise<PGlite> {
  const pg = new PGlite();
  await pg.exec(`SET TIME ZONE 'UTC'`);
  return pg;
}

export async function runPg(pg: PGlite, e: Entry): Promise<Outcome> {
  try {
    const r = await pg.query<Record<string, unknown>>(e.sql, e.params ?? [], { rowMode: 'array' });
    const types = r.fields.map((f) => f.dataTypeID);
    const rows = (r.rows as unknown as unknown[][]).map((row) => row.map((v, i) => normPg(v, types[i]!)));
    return { ok: true, columns: r.fields.map((f) => f.name), rows };
  } catch (err) {
    return { ok: false, code: 'pg_error', message: (err as Error).message };
  }
}

export async function runOurs(s: TestServer, e: Entry): Promise<Outcome> {
  const res = await s.req('/db/query', {
    method: 'POST',
    key: s.keys.service,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ sql: e.sql, params: e.params ?? [] }),
  });
  const body = (await res.json()) as { error?: { code: string; message: string }; columns?: { name: string }[]; rows?: Record<string, unknown>[] };
  if (res.status !== 200 || body.error) return { ok: false, code: body.error?.code ?? String(res.status), message: body.error?.message ?? '' };
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

/** Whether two outcomes match: both errors, or the same columns and rows (order only where the query orders). */
export function same(e: Entry, a: Outcome, b: Outcome): boolean {
  if (!a.ok || !b.ok) return !a.ok && !b.ok;
  if (JSON.stringify(a.columns) !== JSON.stringify(b.columns)) return false;
  const ra = a.rows.map((r) => JSON.stringify(r));
  const rb = b.rows.map((r) => JSON.stringify(r));
  if (!e.ordered) {
    ra.sort();
    rb.sort();
  }
  return JSON.stringify(ra) === JSON.stringify(rb);
}
