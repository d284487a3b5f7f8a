import type { ProjectLease } from '../project/registry.js';

/**
 * The SQL of the change log (`_svc_meta.change_log`) and of the consumer cursors
 * (`_svc_meta.cursors`) of one project file (schema/project/0001, 0004, 0005). The logic
 * is in change-log.ts and cursors.ts; nothing else writes these tables but the SQL
 * workers' capture (src/sql/pg/changes.ts appends with the same columns).
 */
export const APPEND = `INSERT INTO "_svc_meta.change_log" (at, op, tbl, row_id, data, old, new_row, old_row) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;

export interface LogRow {
  seq: number;
  at: string;
  op: 'insert' | 'update' | 'delete';
  tbl: string;
  row_id: string;
  data: string | null;
  old: string | null;
  new_row: string | null;
  old_row: string | null;
}

const COLUMNS = 'seq, at, op, tbl, row_id, data, old, new_row, old_row';
const AFTER = `SELECT ${COLUMNS} FROM "_svc_meta.change_log" WHERE seq > ? ORDER BY seq LIMIT ?`;
const BETWEEN = `SELECT ${COLUMNS} FROM "_svc_meta.change_log" WHERE seq > ? AND seq < ? ORDER BY seq`;
const DESCENDING = `SELECT ${COLUMNS} FROM "_svc_meta.change_log" WHERE seq > ? AND seq < ? ORDER BY seq DESC LIMIT ?`;
// note: two subqueries, each answered from one end of the rowid b-tree; min() and max() in one SELECT scan the table.
const BOUNDS = `SELECT (SELECT min(seq) FROM "_svc_meta.change_log") AS oldest, (SELECT max(seq) FROM "_svc_meta.change_log") AS newest`;
const MAX = `SELECT coalesce(max(seq), 0) FROM "_svc_meta.change_log"`;
const PRUNE = `DELETE FROM "_svc_meta.change_log" WHERE seq <= ?`;

export const changeStore = {
  append(p: ProjectLease, at: string, op: string, table: string, id: string, data: string | null, old: string | null, newRow: string | null, oldRow: string | null): number {
    return Number(p.stmt(APPEND).run(at, op, table, id, data, old, newRow, oldRow).lastInsertRowid);
  },
  /** Up to `limit` rows after `seq`, in order. */
  after: (p: ProjectLease, seq: number, limit: number): LogRow[] => p.stmt(AFTER).all(seq, limit) as LogRow[],
  /** The rows strictly between two seqs, in order. */
  between: (p: ProjectLease, after: number, before: number): LogRow[] => p.stmt(BETWEEN).all(after, before) as LogRow[],
  /** Up to `limit` rows strictly between two seqs, newest first. */
  descending: (p: ProjectLease, after: number, before: number, limit: number): LogRow[] => p.stmt(DESCENDING).all(after, before, limit) as LogRow[],
  bounds: (p: ProjectLease): { oldest: number | null; newest: number | null } => p.stmt(BOUNDS).get() as { oldest: number | null; newest: number | null },
  /** The newest seq (0 for an empty log). */
  newest: (p: ProjectLease): number => p.stmt(MAX).pluck().get() as number,
  /** Deletes the rows up to and including `seq`; how many went. */
  pruneThrough: (p: ProjectLease, seq: number): number => p.stmt(PRUNE).run(seq).changes,
};

export interface CursorRow {
  name: string;
  seq: number;
  enabled: number;
  updated_at: string;
}

const CURSOR_COLUMNS = 'name, seq, enabled, updated_at';

export const cursorStore = {
  get: (p: ProjectLease, name: string): CursorRow | undefined =>
    p.stmt(`SELECT ${CURSOR_COLUMNS} FROM "_svc_meta.cursors" WHERE name = ?`).get(name) as CursorRow | undefined,
  list: (p: ProjectLease): CursorRow[] => p.stmt(`SELECT ${CURSOR_COLUMNS} FROM "_svc_meta.cursors" ORDER BY name`).all() as CursorRow[],
  /** Inserts the cursor unless it exists; whether it was made. */
  create: (p: ProjectLease, name: string, seq: number, enabled: boolean, at: string): boolean =>
    p.stmt(`INSERT INTO "_svc_meta.cursors" (name, seq, enabled, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING`).run(name, seq, enabled ? 1 : 0, at).changes === 1,
  /** Moves the cursor forward only (a smaller seq leaves it). */
  advance: (p: ProjectLease, name: string, seq: number, at: string): number =>
    p.stmt(`UPDATE "_svc_meta.cursors" SET seq = ?, updated_at = ? WHERE name = ? AND seq < ?`).run(seq, at, name, seq).changes,
  setEnabled: (p: ProjectLease, name: string, enabled: boolean, at: string): number =>
    p.stmt(`UPDATE "_svc_meta.cursors" SET enabled = ?, updated_at = ? WHERE name = ?`).run(enabled ? 1 : 0, at, name).changes,
  delete: (p: ProjectLease, name: string): number => p.stmt(`DELETE FROM "_svc_meta.cursors" WHERE name = ?`).run(name).changes,
  /** The smallest seq of the enabled cursors, null when there is none. */
  slowest: (p: ProjectLease): number | null => p.stmt(`SELECT min(seq) FROM "_svc_meta.cursors" WHERE enabled = 1`).pluck().get() as number | null,
};
