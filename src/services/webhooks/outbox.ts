import { createHash } from 'node:crypto';
import { changeStore } from '../../events/change-store.js';
import { getCursor, openCursor, readChanges, type LoggedChange } from '../../events/cursors.js';
import type { ProjectLease } from '../../project/registry.js';
import { deliveryStore, type DeliveryRow } from './store.js';
import { CURSOR, changeBody, wants, type ChangeBody, type Hook } from './wire.js';

/**
 * The change log as the webhooks' outbox (docs/api.md "Webhooks"). A delivery not yet
 * attempted has no row: it is a (change, matching webhook) pair past the `webhooks` consumer
 * cursor, read from the log. Its id is derived from (seq, webhook id) (`deliveryId`), so the
 * same change read again — after a restart — is the same delivery with the same `webhook-id`.
 * A row is written when the first attempt ends (delivery.ts), and the cursor advances, in that
 * transaction, over every change whose first attempts have all ended: a crash before that write
 * reads the change again (at least once, same id), a crash after it finds the row (no second
 * first attempt).
 */

/** First attempts one project has read from the log and not yet written, at most (the reader waits for room). */
export const WINDOW = 2000;
/** Changes one read takes at most. */
export const READ_BATCH = 500;
/** The newest changes past the cursor a listing of not-yet-attempted deliveries looks at, at most. */
export const UNWRITTEN_SCAN = 20_000;

/**
 * The delivery id of (change, webhook): a UUIDv7 whose time is the change's (so ids sort as
 * the changes were made) and whose other 74 bits come from SHA-256 of the webhook id and seq.
 */
export function deliveryId(seq: number, webhookId: string, at: string): string {
  const ms = Date.parse(at);
  const h = createHash('sha256').update(`${webhookId}\0${seq}`).digest();
  const b = Buffer.allocUnsafe(16);
  b.writeUIntBE(Number.isFinite(ms) && ms >= 0 ? ms : 0, 0, 6);
  h.copy(b, 6, 0, 10);
  b[6] = 0x70 | (b[6]! & 0x0f);
  b[8] = 0x80 | (b[8]! & 0x3f);
  const x = b.toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** The not-yet-written delivery of (change, webhook): the row its first attempt's outcome completes. */
export function firstDelivery(h: Hook, c: LoggedChange, body: ChangeBody): DeliveryRow {
  const id = deliveryId(c.seq, h.row.id, c.at);
  // note: the same text JSON.stringify({ id, type, table, record, old_record, occurred_at }) gives.
  const payload = `{"id":"${id}",${body.rest}`;
  return {
    id, webhook_id: h.row.id, type: body.type, seq: c.seq, payload, test: 0, status: 'pending', attempts: 0, next_attempt_at: c.at,
    response_status: null, error: null, duration_ms: null, created_at: c.at,
  };
}

/** One first attempt read from the log: its delivery (no row yet) and the window it counts in. */
export interface FirstAttempt {
  win: Window;
  seq: number;
  hook: Hook;
  d: DeliveryRow;
}

/** A project's read position over the log: the changes read, each with its first attempts not yet written. */
export class Window {
  /** The highest seq read. */
  read = 0;
  /** Seqs at or below this may have delivery rows already (written before this window existed). */
  readonly recoverThrough: number;
  /** Read changes past the cursor, in seq order, with how many of their first attempts are not written yet. */
  readonly open: { seq: number; left: number }[] = [];
  /** First attempts not yet written. */
  outstanding = 0;
  /** The cursor's seq as last written. */
  cursor = 0;
  /** The last read stopped for room, not at the log's end. */
  more = false;

  constructor(recoverThrough: number) {
    this.recoverThrough = recoverThrough;
  }

  /** One first attempt of `seq` was written (or is not to be made). */
  done(seq: number): void {
    // note: seqs are few and in order; the one ended is usually near the head.
    for (const e of this.open) {
      if (e.seq === seq) {
        e.left--;
        this.outstanding--;
        return;
      }
    }
  }

  /** The highest seq past the cursor whose first attempts, and those of every change before it, have all ended; null: none. */
  through(): number | null {
    let n = 0;
    while (n < this.open.length && this.open[n]!.left <= 0) n++;
    return n === 0 ? null : this.open[n - 1]!.seq;
  }

  /** The cursor was written at `seq`: forgets the changes up to it. */
  advanced(seq: number): void {
    this.cursor = Math.max(this.cursor, seq);
    let n = 0;
    while (n < this.open.length && this.open[n]!.seq <= seq) this.outstanding -= Math.max(0, this.open[n++]!.left);
    this.open.splice(0, n);
  }
}

export interface ReadResult {
  attempts: FirstAttempt[];
  /** Changes were read (the window may advance without any attempt). */
  read: number;
  /** More changes wait after these. */
  more: boolean;
  /** The log was pruned past the read position: the oldest seq it has. */
  gapTo: number | null;
}

/**
 * Reads the next changes after the window's position and turns each into its first attempts
 * (one per matching webhook; a pair that already has its row — written before a restart — is
 * skipped). `passes` runs a webhook's filter on the change.
 */
export function readNext(lease: ProjectLease, win: Window, hooks: readonly Hook[], passes: (h: Hook, c: LoggedChange) => boolean, inFlight: ReadonlySet<string>): ReadResult {
  const cur = openCursor(lease, CURSOR, { from: 'now' });
  win.cursor = Math.max(win.cursor, cur.seq);
  if (win.read < win.cursor) win.read = win.cursor;
  const room = Math.max(0, Math.min(READ_BATCH, WINDOW - win.outstanding));
  const out: ReadResult = { attempts: [], read: 0, more: false, gapTo: null };
  if (room === 0) return { ...out, more: true };
  const r = readChanges(lease, win.read, room);
  if (r.gap) return { ...out, gapTo: r.oldest_seq };
  for (const c of r.changes) {
    let body: ChangeBody | null = null;
    let left = 0;
    for (const h of hooks) {
      if (!wants(h, c) || !passes(h, c)) continue;
      body ??= changeBody(c);
      const d = firstDelivery(h, c, body);
      if (inFlight.has(d.id) || (c.seq <= win.recoverThrough && deliveryStore.byId(lease, d.id))) continue;
      out.attempts.push({ win, seq: c.seq, hook: h, d });
      left++;
    }
    win.open.push({ seq: c.seq, left });
    win.outstanding += left;
    win.read = c.seq;
  }
  out.read = r.changes.length;
  out.more = r.changes.length === room;
  return out;
}

/** A new window for a project: rows may exist for every seq logged so far. */
export function newWindow(lease: ProjectLease): Window {
  return new Window(changeStore.newest(lease));
}

/**
 * The webhook's deliveries not yet written (not attempted, or their first attempt in flight),
 * newest first, at most `limit`: its matching changes past the cursor without a row, among
 * the newest UNWRITTEN_SCAN changes.
 */
export function unwritten(lease: ProjectLease, h: Hook, passes: (h: Hook, c: LoggedChange) => boolean, limit: number): DeliveryRow[] {
  const cursor = getCursor(lease, CURSOR);
  if (cursor === null || limit <= 0) return [];
  const out: DeliveryRow[] = [];
  let before = changeStore.newest(lease) + 1;
  // note: a bounded scan (a filter that rarely matches over a long backlog would read it all).
  const floor = Math.max(cursor.seq, before - 1 - UNWRITTEN_SCAN);
  while (out.length < limit && before > floor + 1) {
    const rows = changeStore.descending(lease, floor, before, READ_BATCH);
    if (rows.length === 0) break;
    for (const r of rows) {
      const c: LoggedChange = { projectId: lease.projectId, at: r.at, seq: r.seq, op: r.op, table: r.tbl, id: r.row_id, data: null, old: null, newRow: r.new_row, oldRow: r.old_row };
      if (!wants(h, c) || !passes(h, c)) continue;
      const id = deliveryId(c.seq, h.row.id, c.at);
      if (deliveryStore.byId(lease, id)) continue;
      c.data = r.data === null ? null : (JSON.parse(r.data) as Record<string, unknown>);
      c.old = r.old === null ? null : (JSON.parse(r.old) as Record<string, unknown>);
      out.push(firstDelivery(h, c, changeBody(c)));
      if (out.length >= limit) break;
    }
    before = rows.at(-1)!.seq;
  }
  return out;
}
