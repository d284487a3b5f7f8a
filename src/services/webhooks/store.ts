import type { ProjectLease } from '../../project/registry.js';
import type { TableInfo } from '../../sql/table-model.js';
import { realtimeStore } from '../realtime/store.js';

/**
 * The SQL of the webhooks service: `_svc_webhooks.webhooks` and `_svc_webhooks.deliveries`
 * (schema/project/0007_webhooks.sql). Every value is bound.
 */

export interface WebhookRow {
  id: string;
  url: string;
  events: string;
  tbl: string | null;
  /** JSON of the filter as written: a query-string text or an array of field.op.value strings (filter.ts); null: none. */
  filter: string | null;
  enabled: number;
  description: string | null;
  secret: string;
  old_secret: string | null;
  old_secret_until: string | null;
  since_seq: number;
  failure_count: number;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
}

export interface DeliveryRow {
  id: string;
  webhook_id: string;
  type: string;
  seq: number | null;
  payload: string;
  test: number;
  status: 'pending' | 'delivered' | 'failed' | 'dead';
  attempts: number;
  next_attempt_at: string | null;
  response_status: number | null;
  error: string | null;
  duration_ms: number | null;
  created_at: string;
}

const W = '"_svc_webhooks.webhooks"';
const D = '"_svc_webhooks.deliveries"';
const W_COLS = 'id, url, events, tbl, filter, enabled, description, secret, old_secret, old_secret_until, since_seq, failure_count, disabled_reason, created_at, updated_at';
const D_COLS = 'id, webhook_id, type, seq, payload, test, status, attempts, next_attempt_at, response_status, error, duration_ms, created_at';

export const webhookStore = {
  ids: (p: ProjectLease): string[] => p.stmt(`SELECT id FROM ${W} ORDER BY id`).pluck().all() as string[],
  list: (p: ProjectLease): WebhookRow[] => p.stmt(`SELECT ${W_COLS} FROM ${W} ORDER BY id`).all() as WebhookRow[],
  exists: (p: ProjectLease, id: string): boolean => p.stmt(`SELECT 1 FROM ${W} WHERE id = ?`).pluck().get(id) !== undefined,
  count: (p: ProjectLease): number => p.stmt(`SELECT count(*) FROM ${W}`).pluck().get() as number,
  get: (p: ProjectLease, id: string): WebhookRow | undefined => p.stmt(`SELECT ${W_COLS} FROM ${W} WHERE id = ?`).get(id) as WebhookRow | undefined,
  insert(p: ProjectLease, r: WebhookRow): void {
    p.stmt(`INSERT INTO ${W} (${W_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
      r.id, r.url, r.events, r.tbl, r.filter, r.enabled, r.description, r.secret, r.old_secret, r.old_secret_until, r.since_seq, r.failure_count, r.disabled_reason, r.created_at, r.updated_at,
    );
  },
  /** Writes every mutable field of the row as given. */
  update(p: ProjectLease, r: WebhookRow): void {
    p.stmt(
      `UPDATE ${W} SET url = ?, events = ?, tbl = ?, filter = ?, enabled = ?, description = ?, secret = ?, old_secret = ?, old_secret_until = ?, failure_count = ?, disabled_reason = ?, updated_at = ? WHERE id = ?`,
    ).run(r.url, r.events, r.tbl, r.filter, r.enabled, r.description, r.secret, r.old_secret, r.old_secret_until, r.failure_count, r.disabled_reason, r.updated_at, r.id);
  },
  delete: (p: ProjectLease, id: string): number => p.stmt(`DELETE FROM ${W} WHERE id = ?`).run(id).changes,
  /** After a delivered attempt: the dead-in-a-row count starts again. */
  resetFailures: (p: ProjectLease, id: string): void => {
    p.stmt(`UPDATE ${W} SET failure_count = 0 WHERE id = ? AND failure_count <> 0`).run(id);
  },
  /** After a dead delivery: the new count. */
  addFailure: (p: ProjectLease, id: string): number =>
    (p.stmt(`UPDATE ${W} SET failure_count = failure_count + 1 WHERE id = ? RETURNING failure_count`).get(id) as { failure_count: number } | undefined)?.failure_count ?? 0,
  disable: (p: ProjectLease, id: string, reason: string, at: string): void => {
    p.stmt(`UPDATE ${W} SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE id = ?`).run(reason, at, id);
  },
};

const FINISHED = "status IN ('delivered', 'failed', 'dead')";

export const deliveryStore = {
  /** Deletes up to `limit` finished deliveries of the webhook created before `before` (ISO). */
  pruneOlder: (p: ProjectLease, webhookId: string, before: string, limit: number): number =>
    p.stmt(`DELETE FROM ${D} WHERE id IN (SELECT id FROM ${D} WHERE webhook_id = ? AND ${FINISHED} AND created_at < ? LIMIT ?)`).run(webhookId, before, limit).changes,
  /** Deletes up to `limit` finished deliveries of the webhook past its `keep` newest finished ones (newest by id, a UUIDv7). */
  pruneBeyond(p: ProjectLease, webhookId: string, keep: number, limit: number): number {
    const edge = p.stmt(`SELECT id FROM ${D} WHERE webhook_id = ? AND ${FINISHED} ORDER BY id DESC LIMIT 1 OFFSET ?`).pluck().get(webhookId, keep) as string | undefined;
    if (edge === undefined) return 0;
    return p.stmt(`DELETE FROM ${D} WHERE id IN (SELECT id FROM ${D} WHERE webhook_id = ? AND ${FINISHED} AND id <= ? LIMIT ?)`).run(webhookId, edge, limit).changes;
  },
  insert(p: ProjectLease, r: DeliveryRow): void {
    p.stmt(`INSERT INTO ${D} (${D_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
      r.id, r.webhook_id, r.type, r.seq, r.payload, r.test, r.status, r.attempts, r.next_attempt_at, r.response_status, r.error, r.duration_ms, r.created_at,
    );
  },
  get: (p: ProjectLease, webhookId: string, id: string): DeliveryRow | undefined =>
    p.stmt(`SELECT ${D_COLS} FROM ${D} WHERE id = ? AND webhook_id = ?`).get(id, webhookId) as DeliveryRow | undefined,
  byId: (p: ProjectLease, id: string): DeliveryRow | undefined => p.stmt(`SELECT ${D_COLS} FROM ${D} WHERE id = ?`).get(id) as DeliveryRow | undefined,
  /** Newest first. */
  list(p: ProjectLease, webhookId: string, status: string | null, limit: number, offset: number): DeliveryRow[] {
    return (status === null
      ? p.stmt(`SELECT ${D_COLS} FROM ${D} WHERE webhook_id = ? ORDER BY id DESC LIMIT ? OFFSET ?`).all(webhookId, limit, offset)
      : p.stmt(`SELECT ${D_COLS} FROM ${D} WHERE webhook_id = ? AND status = ? ORDER BY id DESC LIMIT ? OFFSET ?`).all(webhookId, status, limit, offset)) as DeliveryRow[];
  },
  /** Pending deliveries of enabled webhooks due by `now` (ISO), oldest first. */
  due: (p: ProjectLease, now: string, limit: number): DeliveryRow[] =>
    p
      .stmt(
        `SELECT ${D_COLS.split(', ').map((c) => `d.${c}`).join(', ')} FROM ${D} d JOIN ${W} w ON w.id = d.webhook_id
         WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND w.enabled = 1 ORDER BY d.next_attempt_at LIMIT ?`,
      )
      .all(now, limit) as DeliveryRow[],
  /** The earliest next attempt after `now` (ISO) of a pending delivery of an enabled webhook, or null. */
  nextDue: (p: ProjectLease, now: string): string | null =>
    p
      .stmt(`SELECT min(d.next_attempt_at) FROM ${D} d JOIN ${W} w ON w.id = d.webhook_id WHERE d.status = 'pending' AND d.next_attempt_at > ? AND w.enabled = 1`)
      .pluck()
      .get(now) as string | null,
  /** Records one attempt's outcome. */
  record(
    p: ProjectLease,
    id: string,
    o: { status: DeliveryRow['status']; attempts: number; next_attempt_at: string | null; response_status: number | null; error: string | null; duration_ms: number | null },
  ): void {
    p.stmt(`UPDATE ${D} SET status = ?, attempts = ?, next_attempt_at = ?, response_status = ?, error = ?, duration_ms = ? WHERE id = ?`).run(
      o.status, o.attempts, o.next_attempt_at, o.response_status, o.error, o.duration_ms, id,
    );
  },
  /** Back to pending, due at `at`, with a fresh attempt count. */
  requeue: (p: ProjectLease, id: string, at: string): void => {
    p.stmt(`UPDATE ${D} SET status = 'pending', attempts = 0, next_attempt_at = ? WHERE id = ?`).run(at, id);
  },
};

/**
 * A webhook filter run on a change's stored row image: the same SQL realtime runs (the image
 * read back as the table's columns, the rows API's WHERE terms on it), in the project file.
 */
export const imageMatch = {
  sql: (t: TableInfo, where: readonly string[]): string => realtimeStore.visibilitySql(t, where),
  run: (p: ProjectLease, sql: string, image: string, params: readonly unknown[]): boolean => realtimeStore.visible(p, sql, image, params),
};
