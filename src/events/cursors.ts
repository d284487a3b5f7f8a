import { EdgeError, invalidField, notFound } from '../core/errors.js';
import type { ProjectLease } from '../project/registry.js';
import { changeStore, cursorStore, type CursorRow, type LogRow } from './change-store.js';
import { toChange, type Change } from './change-log.js';

/**
 * Named consumer cursors over a project's change log (docs/architecture.md "Seams": every consumer of
 * changes — realtime, webhooks, triggers — reads the log through one). A cursor is the
 * last seq its consumer has processed; it lives in the project file, so it survives
 * restarts and moves with the project. Retention never prunes past the slowest enabled
 * cursor, up to the hard cap (change-log.ts `pruneChangeLog`); a cursor left behind by
 * the cap reads a gap marker instead of silently skipping changes.
 */
export interface Cursor {
  name: string;
  /** The last seq the consumer has processed; changes after it are still to read. */
  seq: number;
  /** A disabled cursor is kept but does not hold retention back. */
  enabled: boolean;
  updated_at: string;
}

/** A change as the log keeps it: the event's fields plus the full row images (JSON text). */
export interface LoggedChange extends Change {
  /** The whole row after the change as stored (change-log.ts `storedImage`); null for a delete or a row logged before images were kept. */
  newRow: string | null;
  /** The whole row before the change as stored; null for an insert. */
  oldRow: string | null;
}

/** Reading after a seq the log no longer has: the consumer missed `oldest_seq - since - 1` changes at most. */
export interface Gap {
  gap: true;
  /** The seq read after. */
  since: number;
  /** The oldest seq the log still has; advance the cursor to `oldest_seq - 1` to read on. */
  oldest_seq: number;
}

export type ChangeRead = Gap | { gap: false; changes: LoggedChange[] };

const NAME = /^[a-z][a-z0-9_.:-]{0,63}$/;
/** The most changes one read returns. */
export const MAX_READ = 1000;

const toCursor = (r: CursorRow): Cursor => ({ name: r.name, seq: r.seq, enabled: r.enabled === 1, updated_at: r.updated_at });

function checkName(name: string): void {
  if (!NAME.test(name)) throw invalidField('name', 'a cursor name is 1-64 lower-case letters, digits, "_", ".", ":" or "-", starting with a letter');
}

/**
 * The named cursor, made when absent — at `from`: `'now'` (the newest seq: only changes
 * from now on), `'start'` (before the oldest row kept) or a seq. An existing one is
 * returned as it is.
 */
export function openCursor(p: ProjectLease, name: string, opts: { from?: 'now' | 'start' | number; enabled?: boolean } = {}): Cursor {
  checkName(name);
  const hit = cursorStore.get(p, name);
  if (hit) return toCursor(hit);
  const from = opts.from ?? 'now';
  let seq: number;
  if (from === 'now') seq = changeStore.newest(p);
  else if (from === 'start') seq = Math.max(0, (changeStore.bounds(p).oldest ?? 1) - 1);
  else if (Number.isSafeInteger(from) && from >= 0) seq = from;
  else throw invalidField('from', 'must be "now", "start" or a seq (a non-negative integer)');
  cursorStore.create(p, name, seq, opts.enabled ?? true, new Date().toISOString());
  return toCursor(cursorStore.get(p, name)!);
}

export function getCursor(p: ProjectLease, name: string): Cursor | null {
  const r = cursorStore.get(p, name);
  return r ? toCursor(r) : null;
}

export function listCursors(p: ProjectLease): Cursor[] {
  return cursorStore.list(p).map(toCursor);
}

/**
 * Records that the consumer has processed everything up to `seq` (forward only: a smaller
 * seq leaves the cursor where it is; past the newest seq is an error).
 */
export function advanceCursor(p: ProjectLease, name: string, seq: number): Cursor {
  if (!Number.isSafeInteger(seq) || seq < 0) throw invalidField('seq', 'must be a non-negative integer');
  if (!cursorStore.get(p, name)) throw notFound('cursor', name);
  const newest = changeStore.newest(p);
  if (seq > newest) throw new EdgeError('invalid_request', `seq ${seq} is past the newest change (${newest})`);
  cursorStore.advance(p, name, seq, new Date().toISOString());
  return toCursor(cursorStore.get(p, name)!);
}

/** Enables or disables a cursor (a disabled one keeps its seq but no longer holds retention). */
export function setCursorEnabled(p: ProjectLease, name: string, enabled: boolean): Cursor {
  if (!cursorStore.setEnabled(p, name, enabled, new Date().toISOString())) throw notFound('cursor', name);
  return toCursor(cursorStore.get(p, name)!);
}

export function deleteCursor(p: ProjectLease, name: string): boolean {
  return cursorStore.delete(p, name) === 1;
}

/**
 * Up to `limit` changes after `seq`, in seq order — or a gap marker when the log no
 * longer has the change right after `seq` (pruned by the cap or the keep count).
 */
export function readChanges(p: ProjectLease, seq: number, limit = MAX_READ): ChangeRead {
  if (!Number.isSafeInteger(seq) || seq < 0) throw invalidField('since', 'must be a non-negative integer');
  const n = Math.max(1, Math.min(MAX_READ, Math.floor(limit)));
  const rows = changeStore.after(p, seq, n);
  // note: seqs are contiguous (rowid max+1 in serialized write transactions; only the oldest are pruned),
  // so a first row past seq + 1 means the ones between were pruned.
  if (rows.length && rows[0]!.seq > seq + 1) return { gap: true, since: seq, oldest_seq: rows[0]!.seq };
  return { gap: false, changes: rows.map((r) => logged(p.projectId, r)) };
}

/** The changes after a cursor (or its gap); advance it with what was processed. */
export function readCursor(p: ProjectLease, name: string, limit = MAX_READ): ChangeRead {
  const c = cursorStore.get(p, name);
  if (!c) throw notFound('cursor', name);
  return readChanges(p, c.seq, limit);
}

function logged(projectId: string, r: LogRow): LoggedChange {
  return { ...toChange(projectId, r), newRow: r.new_row, oldRow: r.old_row };
}
