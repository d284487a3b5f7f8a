import type { ProjectLease } from '../project/registry.js';
import type { EventBus } from './bus.js';
import { changeStore, cursorStore, type LogRow } from './change-store.js';
import type { EdgeEvents } from './events.js';

export type Change = EdgeEvents['db.change'];
export type ChangeOp = Change['op'];

/**
 * The row images of a change, each the whole row as stored, as JSON text (`storedImage`):
 * `newRow` after the change (null for a delete), `oldRow` before it (null for an insert).
 */
export interface RowImages {
  newRow: string | null;
  oldRow: string | null;
}

/**
 * Appends one committed-to-be change to the project's durable change log. Call it
 * inside the write transaction (it commits or rolls back with the row) and publish
 * the returned event with `publishChanges` after the commit (docs/architecture.md "Seams").
 */
export function appendChange(
  project: ProjectLease,
  op: ChangeOp,
  table: string,
  id: string,
  data: Record<string, unknown> | null,
  old: Record<string, unknown> | null,
  at: string,
  images: RowImages,
  /** `data` already serialized by the caller (saves a second JSON.stringify of a large row). */
  dataJson?: string,
): Change {
  expectChanges(project);
  const dataText = data === null ? null : (dataJson ?? JSON.stringify(data));
  const seq = changeStore.append(project, at, op, table, id, dataText, old === null ? null : JSON.stringify(old), images.newRow, images.oldRow);
  return { projectId: project.projectId, at, seq, op, table, id, data, old };
}

/**
 * A stored row (as better-sqlite3 reads it: every column of the table) → its image: a JSON
 * object of the columns with their stored values — text, numbers (0/1 for a boolean),
 * null, a blob as upper-case hex (SQLite's `hex()`), and the `jsonColumn` (a document's
 * `data`, valid JSON by CHECK) spliced in as JSON. The same form the SQL workers' triggers
 * write (src/sql/pg/changes.ts), so a policy or filter can be evaluated on it later.
 */
export function storedImage(row: Readonly<Record<string, unknown>>, jsonColumn: string | null = null, skip?: ReadonlySet<string>): string {
  let out = '{';
  for (const k in row) {
    if (skip?.has(k)) continue;
    const v = row[k];
    let s: string;
    if (k === jsonColumn && typeof v === 'string') s = v;
    else if (v === null || v === undefined) s = 'null';
    else if (typeof v === 'bigint') s = v.toString();
    else if (typeof v === 'number') s = Number.isFinite(v) ? String(v) : 'null';
    else if (v instanceof Uint8Array) s = JSON.stringify(Buffer.from(v).toString('hex').toUpperCase());
    else s = JSON.stringify(v);
    out += `${out.length > 1 ? ',' : ''}${JSON.stringify(k)}:${s}`;
  }
  return `${out}}`;
}

// ---------------------------------------------------------------- publishing in seq order

/** Per open project database (`lease.cache`): the last seq this process put on the bus, once `started`. */
interface Relay {
  started: boolean;
  last: number;
}
const RELAYED = 'change-log.relayed';
const newRelay = (): Relay => ({ started: false, last: 0 });

/**
 * Marks the start of this process's writes to a project's change log: the first call
 * for an open database reads its newest seq, which is where publishing starts. Every
 * writer calls it before writing (appendChange does; the raw-SQL path before it hands a
 * writing script to a worker), so nothing this process commits is older than the mark.
 */
export function expectChanges(project: ProjectLease): void {
  const st = project.cache(RELAYED, newRelay);
  if (!st.started) {
    st.last = changeStore.newest(project);
    st.started = true;
  }
}

/**
 * Emits committed changes on the bus in `seq` order, each once. Changes reach here in
 * commit order from the main thread, but a SQL worker's reply may arrive after a later
 * commit (another worker's, or the rows API's): a change past the next expected seq first
 * publishes the missing ones from the log (they are committed: seq is SQLite's
 * max(rowid)+1 taken inside serialized write transactions, so a seq exists only once every
 * smaller one has committed), and a change already published that way is skipped.
 */
export function publishChanges(bus: EventBus, project: ProjectLease, changes: readonly Change[]): void {
  if (changes.length === 0) return;
  const st = project.cache(RELAYED, newRelay);
  if (!st.started) {
    // note: nothing announced it (should not happen): start at the first change given.
    st.last = changes[0]!.seq - 1;
    st.started = true;
  }
  for (const c of changes) {
    if (c.seq <= st.last) continue;
    if (c.seq > st.last + 1) {
      let missing: LogRow[] = [];
      try {
        missing = changeStore.between(project, st.last, c.seq);
      } catch {
        // note: the database was closed meanwhile (the project deleted): the given change still goes out.
      }
      for (const r of missing) bus.emit('db.change', toChange(project.projectId, r));
    }
    bus.emit('db.change', c);
    st.last = c.seq;
  }
}

/**
 * Publishes whatever this process committed but did not publish yet (a SQL worker that
 * ended after its commit without a reply): read from the log after the last published seq.
 */
export function catchUpChanges(bus: EventBus, project: ProjectLease): void {
  const st = project.cache(RELAYED, newRelay);
  if (!st.started) return;
  for (;;) {
    const rows = changeStore.after(project, st.last, 500);
    for (const r of rows) bus.emit('db.change', toChange(project.projectId, r));
    if (rows.length) st.last = rows.at(-1)!.seq;
    if (rows.length < 500) return;
  }
}

export function toChange(projectId: string, r: LogRow): Change {
  return {
    projectId,
    at: r.at,
    seq: r.seq,
    op: r.op,
    table: r.tbl,
    id: r.row_id,
    data: r.data === null ? null : (JSON.parse(r.data) as Record<string, unknown>),
    old: r.old === null ? null : (JSON.parse(r.old) as Record<string, unknown>),
  };
}

// ---------------------------------------------------------------- retention

export interface Retention {
  /** Rows kept at least (the newest), whatever the cursors say (PLATFORM_EDGE_CHANGE_LOG_KEEP). */
  keep: number;
  /** Rows kept at most, whatever the cursors say (PLATFORM_EDGE_CHANGE_LOG_CAP). */
  cap: number;
}

/**
 * Prunes the oldest rows of the change log: those older than the newest `keep` that every
 * enabled consumer cursor has passed; and, whatever the cursors say, all but the newest
 * `cap` (a cursor left behind then reads a gap, cursors.ts). The newest row is never
 * pruned, so seq never restarts. Returns how many rows went.
 */
export function pruneChangeLog(project: ProjectLease, r: Retention): number {
  const { oldest, newest } = changeStore.bounds(project);
  if (oldest === null || newest === null) return 0;
  const keep = Math.max(1, r.keep);
  const cap = Math.max(keep, r.cap);
  let through = newest - keep;
  const slowest = cursorStore.slowest(project);
  if (slowest !== null && slowest < through) through = slowest;
  if (through < newest - cap) through = newest - cap;
  // note: nothing to delete runs no DELETE (a write statement takes the file's write lock even when it matches nothing).
  return through >= oldest ? changeStore.pruneThrough(project, through) : 0;
}
