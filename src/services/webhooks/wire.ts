import { createHmac, randomBytes } from 'node:crypto';
import { invalidField } from '../../core/errors.js';
import { type LoggedChange } from '../../events/cursors.js';
import type { ProjectLease } from '../../project/registry.js';
import type { TableInfo } from '../../sql/table-model.js';
import { parseFilter, type WhereQuery } from './filter.js';
import { type DeliveryRow, type WebhookRow } from './store.js';

/**
 * Webhooks' shared parts (docs/api.md "Webhooks"): limits, the shapes on the wire, parsing of
 * what a caller writes, Standard Webhooks signing, and the delivery body of a change. Used by
 * the service (webhooks.ts: the registered endpoints) and the engine (delivery.ts: the outbox).
 */

export const CURSOR = 'webhooks';
export const EVENT_TYPES = ['db.insert', 'db.update', 'db.delete'] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export const MAX_WEBHOOKS = 100;
export const MAX_DESCRIPTION = 1000;
/** Dead deliveries in a row that disable a webhook. */
export const DEAD_IN_A_ROW = 5;
export const ERROR_MAX = 500;
/** How often request load is sampled, ms, and the event-loop use above which the server counts as busy. */
export const LOAD_SAMPLE_MS = 100;
export const BUSY_ELU = 0.75;
export const BUSY_ELU_OFF = 0.5;
export const BUSY_DISPATCH_MS = 100;
/** While busy, one attempt may start per this many requests answered (about 5 % of the loop: an attempt costs about two inserts). */
export const BUSY_REQUESTS_PER_ATTEMPT = 40;
/** Attempts waiting in memory at most (the rest wait in their rows), and when a full queue is looked at again, ms. */
export const MAX_QUEUE = 10_000;
export const QUEUE_FULL_RETRY_MS = 250;
/** Delivery rows one retention run deletes at most per webhook and rule. */
export const PRUNE_BATCH = 10_000;

/** The rows API's table a webhook may name (its model, recompiled after DDL), or null for an unknown one. */
export type TableLookup = (lease: ProjectLease, table: string) => TableInfo | null;

export interface Hook {
  row: WebhookRow;
  events: ReadonlySet<string>;
  /** null: no filter; false: a stored filter that no longer parses (matches nothing). */
  filter: WhereQuery | null | false;
  /** The filter compiled for one table version (a new TableInfo after DDL recompiles); sql null: matches nothing. */
  compiled: { t: TableInfo; sql: string | null; params: unknown[] } | null;
}

export interface WebhookView {
  id: string;
  url: string;
  events: string[];
  table: string | null;
  filter: string | string[] | null;
  enabled: boolean;
  description: string | null;
  failure_count: number;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
}

export interface DeliveryView {
  id: string;
  type: string;
  status: DeliveryRow['status'];
  attempts: number;
  next_attempt_at: string | null;
  response_status: number | null;
  error: string | null;
  duration_ms: number | null;
  created_at: string;
}

export interface WebhookOptions {
  /** The clock, ms since the epoch (tests inject one). */
  now?: () => number;
  /** A number in [0, 1) for the backoff's jitter. */
  random?: () => number;
  log?: (msg: string, err?: unknown) => void;
}

export const RUN_TX = 'webhooks.tx';
const newTx = (lease: ProjectLease): ((fn: () => void) => void) => {
  const t = lease.db.transaction((f: () => void) => f());
  return (fn) => t.immediate(fn);
};
export const tx = (lease: ProjectLease, fn: () => void): void => lease.cache(RUN_TX, newTx)(fn);

// ---------------------------------------------------------------- pure parts

/** HMAC-SHA256 of `id.timestamp.body`, keyed by the base64-decoded part after `whsec_`, in base64 (Standard Webhooks). */
export function sign(secret: string, id: string, ts: number, payload: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  return createHmac('sha256', key).update(`${id}.${ts}.${payload}`).digest('base64');
}

export const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

export function parseEvents(v: unknown): EventType[] {
  if (!Array.isArray(v) || v.length === 0 || v.length > 10) throw invalidField('events', 'must be a non-empty array of db.insert, db.update, db.delete');
  const out = new Set<EventType>();
  for (const e of v) {
    const long = typeof e === 'string' && !e.startsWith('db.') ? `db.${e}` : e;
    if (typeof long !== 'string' || !(EVENT_TYPES as readonly string[]).includes(long)) {
      throw invalidField('events', `unknown event ${JSON.stringify(e).slice(0, 100)}; use db.insert, db.update, db.delete (or insert, update, delete)`);
    }
    out.add(long as EventType);
  }
  return EVENT_TYPES.filter((t) => out.has(t));
}

export function parseDescription(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'string' || v.length > MAX_DESCRIPTION) throw invalidField('description', `must be a string of at most ${MAX_DESCRIPTION} characters`);
  return v;
}

export function parseEnabled(v: unknown): boolean {
  if (typeof v !== 'boolean') throw invalidField('enabled', 'must be a boolean');
  return v;
}

/** Seconds or an HTTP date → ms from now; null when absent or unreadable. */
export function retryAfterMs(v: string | undefined, now: number): number | null {
  if (v === undefined) return null;
  const s = v.trim();
  if (/^\d+$/.test(s)) return Number(s) * 1000;
  const t = Date.parse(s);
  return Number.isFinite(t) ? Math.max(0, t - now) : null;
}

export function wants(h: Hook, c: LoggedChange): boolean {
  return h.row.enabled === 1 && c.seq > h.row.since_seq && h.events.has(`db.${c.op}`) && (h.row.tbl === null || h.row.tbl === c.table);
}

/** A stored filter read back; false for one that no longer parses (it matches nothing). */
export function safeParse(stored: string): WhereQuery | null | false {
  try {
    return parseFilter(JSON.parse(stored));
  } catch {
    return false;
  }
}

/** A row in the rows API's wire shape, from the change's `data` and its stored image (id and timestamps). */
export function wireRow(id: string, data: Record<string, unknown> | null, image: string | null): { id: unknown; data: Record<string, unknown>; created_at?: string; updated_at?: string } | null {
  if (data === null) return null;
  const out: { id: unknown; data: Record<string, unknown>; created_at?: string; updated_at?: string } = { id, data };
  if (image !== null) {
    try {
      const img = JSON.parse(image) as Record<string, unknown>;
      if (typeof img.id === 'number' || typeof img.id === 'string') out.id = img.id;
      if (typeof img.created_at === 'string') out.created_at = img.created_at;
      if (typeof img.updated_at === 'string') out.updated_at = img.updated_at;
    } catch {
      // note: an unreadable image leaves the row without timestamps.
    }
  }
  return out;
}

/** What every webhook's payload of one change shares: the row images read once, the body after its `id`. */
export interface ChangeBody {
  type: string;
  /** The payload's JSON after `{"id":"…",`. */
  rest: string;
}

export function changeBody(c: LoggedChange): ChangeBody {
  const record = wireRow(c.id, c.data, c.newRow);
  const oldRecord = wireRow(c.id, c.old, c.oldRow);
  const type = `db.${c.op}`;
  const rest = JSON.stringify({ type, table: c.table, record, old_record: oldRecord, occurred_at: c.at }).slice(1);
  return { type, rest };
}

export function view(r: WebhookRow): WebhookView {
  return {
    id: r.id,
    url: r.url,
    events: JSON.parse(r.events) as string[],
    table: r.tbl,
    filter: r.filter === null ? null : (JSON.parse(r.filter) as string | string[]),
    enabled: r.enabled === 1,
    description: r.description,
    failure_count: r.failure_count,
    disabled_reason: r.disabled_reason,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

export function deliveryView(d: DeliveryRow): DeliveryView {
  return {
    id: d.id,
    type: d.type,
    status: d.status,
    attempts: d.attempts,
    next_attempt_at: d.next_attempt_at,
    response_status: d.response_status,
    error: d.error,
    duration_ms: d.duration_ms,
    created_at: d.created_at,
  };
}
