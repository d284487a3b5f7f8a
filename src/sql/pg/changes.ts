import { quoteIdent } from '../../project/schemas.js';
import { quoteLiteral } from '../quote.js';

/**
 * Change capture for raw SQL writes: TEMP triggers on the worker connection record every
 * row a script inserts, updates or deletes in a db-catalog table into `temp.pe_changes`,
 * with the row's `data` object in the rows API's wire form and the whole row before and
 * after as stored (the image src/events/change-log.ts `storedImage` makes on the main
 * thread: every column's stored value, blobs as hex, a document's `data` as JSON); the
 * worker appends them to `_svc_meta.change_log` in the same transaction and the main thread publishes
 * `db.change` after commit (docs/api.md "Change log"). TEMP triggers exist only on that connection.
 */
export interface TrackedTable {
  table: string;
  /** Relational columns besides id/created_at/updated_at with their catalog types; null for a document table. */
  columns: Array<{ name: string; type: string }> | null;
  /** The table has created_at/updated_at (a document table always does). */
  stamps: boolean;
}

/** A db-catalog table (its TableInfo) as the capture sees it; null for a table outside the catalog. */
export function trackedOf(name: string, info: { def: { kind: string; columns?: Array<{ name: string; type: string }>; stamps?: boolean } } | undefined): TrackedTable | null {
  if (!info) return null;
  return { table: name, columns: info.def.kind === 'document' ? null : (info.def.columns ?? []).map((c) => ({ name: c.name, type: c.type })), stamps: info.def.stamps !== false };
}

export interface TrackSetup {
  table: string;
  /** Changes when the table's shape does: the worker re-creates the triggers then. */
  key: string;
  sql: string[];
}

export const CHANGES_TABLE = `CREATE TEMP TABLE IF NOT EXISTS pe_changes (seq INTEGER PRIMARY KEY, op TEXT NOT NULL, tbl TEXT NOT NULL, row_id TEXT NOT NULL, data TEXT, old TEXT, new_row TEXT, old_row TEXT)`;
export const READ_CHANGES = `SELECT op, tbl, row_id, data, old, new_row, old_row FROM temp.pe_changes ORDER BY seq`;
export const CLEAR_CHANGES = `DELETE FROM temp.pe_changes`;
export const APPEND_CHANGE = `INSERT INTO "_svc_meta.change_log" (at, op, tbl, row_id, data, old, new_row, old_row) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;

/** The row `r` (NEW or OLD) as the JSON text of its stored image: every column, blobs as hex, a document's data as JSON. */
export function imageJson(t: TrackedTable, r: string): string {
  const col = (name: string) => `${r}.${quoteIdent(name)}`;
  const pairs: Array<[string, string]> = [['id', col('id')]];
  if (t.columns === null) pairs.push(['data', `json(${col('data')})`]);
  else for (const c of t.columns) pairs.push([c.name, c.type === 'bytea' ? `CASE WHEN ${col(c.name)} IS NULL THEN NULL ELSE hex(${col(c.name)}) END` : col(c.name)]);
  if (t.columns === null || t.stamps) pairs.push(['created_at', col('created_at')], ['updated_at', col('updated_at')]);
  // note: json_object takes at most 127 arguments by default: wide rows add the rest with json_insert
  // (which keeps a null, where json_patch would drop the key).
  let out = '';
  for (let i = 0; i < pairs.length; i += 50) {
    const chunk = pairs.slice(i, i + 50);
    if (i === 0) out = `json_object(${chunk.map(([k, v]) => `${quoteLiteral(k)}, ${v}`).join(', ')})`;
    else out = `json_insert(${out}, ${chunk.map(([k, v]) => `${quoteLiteral(`$.${JSON.stringify(k)}`)}, ${v}`).join(', ')})`;
  }
  return out;
}

/** The row `r` (NEW or OLD) as the JSON text of its wire `data` object. */
export function rowJson(t: TrackedTable, r: string): string {
  if (t.columns === null) return `json(${r}."data")`;
  if (t.columns.length === 0) return `json_object()`;
  const parts: string[] = [];
  // note: json_object takes at most 127 arguments by default; wide tables are merged in chunks.
  for (let i = 0; i < t.columns.length; i += 50) {
    const chunk = t.columns.slice(i, i + 50).map((c) => {
      const v = `${r}.${quoteIdent(c.name)}`;
      let e = v;
      if (c.type === 'bool') e = `CASE WHEN ${v} IS NULL THEN NULL WHEN ${v} THEN json('true') ELSE json('false') END`;
      else if (c.type === 'jsonb') e = `json(${v})`;
      // note: hex(NULL) is '', not NULL.
      else if (c.type === 'bytea') e = `CASE WHEN ${v} IS NULL THEN NULL ELSE hex(${v}) END`;
      return `${quoteLiteral(c.name)}, ${e}`;
    });
    parts.push(`json_object(${chunk.join(', ')})`);
  }
  return parts.reduce((a, b) => `json_patch(${a}, ${b})`);
}

export function trackSetup(t: TrackedTable): TrackSetup {
  const q = quoteIdent(t.table);
  const name = (op: string) => quoteIdent(`pe_${op}_${t.table}`);
  const tbl = quoteLiteral(t.table);
  const ins = `INSERT INTO temp.pe_changes (op, tbl, row_id, data, old, new_row, old_row) VALUES`;
  return {
    table: t.table,
    key: JSON.stringify([t.columns, t.stamps]),
    sql: [
      CHANGES_TABLE,
      `DROP TRIGGER IF EXISTS temp.${name('ins')}`,
      `DROP TRIGGER IF EXISTS temp.${name('upd')}`,
      `DROP TRIGGER IF EXISTS temp.${name('del')}`,
      `CREATE TEMP TRIGGER ${name('ins')} AFTER INSERT ON main.${q} BEGIN ${ins} ('insert', ${tbl}, NEW."id", ${rowJson(t, 'NEW')}, NULL, ${imageJson(t, 'NEW')}, NULL); END`,
      `CREATE TEMP TRIGGER ${name('upd')} AFTER UPDATE ON main.${q} BEGIN ${ins} ('update', ${tbl}, NEW."id", ${rowJson(t, 'NEW')}, ${rowJson(t, 'OLD')}, ${imageJson(t, 'NEW')}, ${imageJson(t, 'OLD')}); END`,
      `CREATE TEMP TRIGGER ${name('del')} AFTER DELETE ON main.${q} BEGIN ${ins} ('delete', ${tbl}, OLD."id", NULL, ${rowJson(t, 'OLD')}, NULL, ${imageJson(t, 'OLD')}); END`,
    ],
  };
}
