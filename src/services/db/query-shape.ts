import { jsonValue } from '../../json-text.js';
import { toWire, typeName, typeOfDecl, wireJson, type ColumnType, type PgType } from '../../sql/pg/types.js';
import type { WorkerResult } from '../../sql/worker/worker-main.js';

/**
 * A translated statement's worker result as `/db/query` answers it: each column's Postgres
 * type (from the translation, else the declared type, else the values) and the rows in wire
 * form (docs/api.md "Raw SQL").
 */

/** One statement's result on the wire. */
export interface QueryResult {
  command: string;
  columns: Array<{ name: string; type: string }>;
  rows: Array<Record<string, unknown>>;
  row_count: number;
  /** Postgres' NOTICEs of the statement (docs/sql.md), when it has any. */
  notices?: string[];
}

interface Shape {
  names: string[];
  types: Array<PgType | null>;
  /** The wire `columns` when every type is known without looking at values. */
  wire: Array<{ name: string; type: string }> | null;
  /** For shapeText, made on first use: each column's `"name":` and the `columns` JSON. */
  keys?: string[];
  columnsJson?: string;
}
/** Column typing per (statement types, result columns): computed once for a cached statement. */
const shapes = new WeakMap<WorkerResult['columns'], WeakMap<object, Shape>>();
const NO_TYPES = {};

/** The result as JSON text, written directly (JSON.stringify(shape(…)) without the objects). */
export function shapeText(command: string, types: ColumnType[] | null, r: WorkerResult): string {
  const sh = shapeOf(types, r);
  if (!sh.wire) return JSON.stringify(shape(command, types, r));
  const { types: colTypes } = sh;
  const keys = (sh.keys ??= sh.names.map((n, i) => `${i ? ',' : ''}${JSON.stringify(n)}:`));
  let rows = '';
  for (let j = 0; j < r.rows.length; j++) {
    const row = r.rows[j]!;
    let o = j ? ',{' : '{';
    for (let i = 0; i < keys.length; i++) o += keys[i]! + wireJson(row[i], colTypes[i] ?? null);
    rows += `${o}}`;
  }
  sh.columnsJson ??= JSON.stringify(sh.wire);
  return `{"command":${jsonValue(command)},"columns":${sh.columnsJson},"rows":[${rows}],"row_count":${r.changes}}`;
}

function shapeOf(types: ColumnType[] | null, r: WorkerResult): Shape {
  let byTypes = shapes.get(r.columns);
  if (!byTypes) {
    byTypes = new WeakMap();
    shapes.set(r.columns, byTypes);
  }
  const k = types ?? NO_TYPES;
  let sh = byTypes.get(k);
  if (!sh) {
    const known = types && types.length === r.columns.length ? types : null;
    const names = r.columns.map((c) => c.name);
    const ts = r.columns.map((c, i) => known?.[i]?.type ?? typeOfDecl(c.decl));
    sh = { names, types: ts, wire: ts.every((t) => t !== null && t !== 'unknown') ? names.map((name, i) => ({ name, type: typeName(ts[i]!) })) : null };
    byTypes.set(k, sh);
  }
  return sh;
}

export function shape(command: string, types: ColumnType[] | null, r: WorkerResult): QueryResult {
  const sh = shapeOf(types, r);
  const { names, types: colTypes } = sh;
  const rows = new Array<Record<string, unknown>>(r.rows.length);
  for (let j = 0; j < r.rows.length; j++) {
    const row = r.rows[j]!;
    const o: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) o[names[i]!] = toWire(row[i], colTypes[i] ?? null);
    rows[j] = o;
  }
  return {
    command,
    columns: sh.wire ?? names.map((name, i) => ({ name, type: typeName(colTypes[i] ?? null, r.rows[0]?.[i]) })),
    rows,
    row_count: r.changes,
  };
}

