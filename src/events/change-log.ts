import type { ProjectLease } from '../project/registry.js';
import type { EventBus } from './bus.js';
import type { EdgeEvents } from './events.js';

export type Change = EdgeEvents['db.change'];
export type ChangeOp = Change['op'];

const APPEND = `INSERT INTO "_svc_meta.change_log" (at, op, tbl, row_id, data, old) VALUES (?, ?, ?, ?, ?, ?)`;

/**
 * Appends one committed-to-be change to the project's durable change log. Call it
 * inside the write transaction (it commits or rolls back with the row) and publish
 * the returned event with `publishChanges` after the commit (DESIGN.md §7).
 */
export function appendChange(
  project: ProjectLease,
  op: ChangeOp,
  table: string,
  id: string,
  data: Record<string, unknown> | null,
  old: Record<string, unknown> | null,
  at: string,
  /** `data` already serialized by the caller (saves a second JSON.stringify of a large row). */
  dataJson?: string,
): Change {
  const dataText = data === null ? null : (dataJson ?? JSON.stringify(data));
  const r = project.stmt(APPEND).run(at, op, table, id, dataText, old === null ? null : JSON.stringify(old));
  return { projectId: project.projectId, at, seq: Number(r.lastInsertRowid), op, table, id, data, old };
}

/** Emits committed changes on the bus, in order. */
export function publishChanges(bus: EventBus, changes: readonly Change[]): void {
  for (const c of changes) bus.emit('db.change', c);
}

const PRUNE = `DELETE FROM "_svc_meta.change_log" WHERE seq <= (SELECT max(seq) FROM "_svc_meta.change_log") - ?`;

/**
 * Drops all but the newest `keep` rows of the change log (at least one is always kept, so
 * sequence numbers never restart: seq is a rowid alias). Returns how many rows went.
 */
export function pruneChangeLog(project: ProjectLease, keep: number): number {
  return project.stmt(PRUNE).run(Math.max(1, keep)).changes;
}
