import { intParam } from '../../core/query-params.js';
import { v7 as uuidv7 } from 'uuid';
import type { Config } from '../../config.js';
import type { Sealer } from '../../control/seal.js';
import { EdgeError, invalidField, notFound } from '../../core/errors.js';
import type { EventBus } from '../../events/bus.js';
import { changeStore } from '../../events/change-store.js';
import { deleteCursor, openCursor } from '../../events/cursors.js';
import type { OutboundClient } from '../../net/outbound.js';
import type { ProjectLease, ProjectRegistry } from '../../project/registry.js';
import { compileFilter, parseFilter } from './filter.js';
import { deliveryStore, webhookStore, type DeliveryRow, type WebhookRow } from './store.js';
import { CURSOR, type DeliveryView, MAX_WEBHOOKS, type TableLookup, type WebhookOptions, type WebhookView, deliveryView, newSecret, parseDescription, parseEnabled, parseEvents, tx, view } from './wire.js';
import { DeliveryEngine } from './delivery.js';
import { pruneLog } from './outcome.js';

/** The deliveries not attempted yet a retry looks among for its id, the newest. */
const UNWRITTEN_RETRY_SCAN = 1000;

/**
 * Webhooks (docs/api.md "Webhooks"): the registered endpoints, their secrets and delivery log.
 * Deliveries themselves are the engine's (delivery.ts).
 */
export class WebhookService {
  readonly #config: Config;
  readonly #registry: ProjectRegistry;
  readonly #sealer: Sealer;
  readonly #outbound: OutboundClient;
  readonly #tables: TableLookup;
  readonly #now: () => number;
  readonly #engine: DeliveryEngine;

  constructor(config: Config, registry: ProjectRegistry, bus: EventBus, sealer: Sealer, outbound: OutboundClient, tables: TableLookup, opts: WebhookOptions = {}) {
    this.#config = config;
    this.#registry = registry;
    this.#sealer = sealer;
    this.#outbound = outbound;
    this.#tables = tables;
    this.#now = opts.now ?? Date.now;
    this.#engine = new DeliveryEngine(config, registry, bus, sealer, outbound, tables, opts);
  }

  // ---------------------------------------------------------------- CRUD

  list(lease: ProjectLease): { webhooks: WebhookView[] } {
    return { webhooks: webhookStore.list(lease).map(view) };
  }

  get(lease: ProjectLease, id: string): WebhookView {
    return view(this.#row(lease, id));
  }

  create(lease: ProjectLease, body: Record<string, unknown>): WebhookView & { secret: string } {
    const known = new Set(['url', 'events', 'table', 'filter', 'description', 'enabled']);
    for (const k of Object.keys(body)) if (!known.has(k)) throw invalidField(k, 'unknown field');
    const url = this.#url(body.url);
    const events = parseEvents(body.events);
    const table = this.#table(lease, body.table);
    const filter = this.#filter(lease, body.filter, table);
    const description = parseDescription(body.description);
    const enabled = body.enabled === undefined ? true : parseEnabled(body.enabled);
    const secret = newSecret();
    const id = uuidv7();
    const at = this.#iso();
    let row!: WebhookRow;
    tx(lease, () => {
      if (webhookStore.count(lease) >= MAX_WEBHOOKS) throw new EdgeError('conflict', `a project has at most ${MAX_WEBHOOKS} webhooks`);
      const cursor = openCursor(lease, CURSOR, { from: 'now' });
      // note: the webhook gets the changes committed after it: those the cursor has not passed yet included.
      const since = Math.max(cursor.seq, changeStore.newest(lease));
      row = {
        id, url, events: JSON.stringify(events), tbl: table, filter, enabled: enabled ? 1 : 0,
        description, secret: this.#sealer.seal(lease.projectId, 'webhooks', id, secret), old_secret: null, old_secret_until: null,
        since_seq: since, failure_count: 0, disabled_reason: null, created_at: at, updated_at: at,
      };
      webhookStore.insert(lease, row);
    });
    this.#engine.forgetHooks(lease.projectId);
    return { ...view(row), secret };
  }

  update(lease: ProjectLease, id: string, body: Record<string, unknown>): WebhookView {
    const known = new Set(['url', 'events', 'table', 'filter', 'description', 'enabled']);
    for (const k of Object.keys(body)) if (!known.has(k)) throw invalidField(k, 'unknown field');
    const row = { ...this.#row(lease, id) };
    if (body.url !== undefined) row.url = this.#url(body.url);
    if (body.events !== undefined) row.events = JSON.stringify(parseEvents(body.events));
    if (body.table !== undefined) row.tbl = this.#table(lease, body.table);
    if (body.filter !== undefined || body.table !== undefined) {
      row.filter = this.#filter(lease, body.filter !== undefined ? body.filter : row.filter === null ? null : JSON.parse(row.filter), row.tbl);
    }
    if (body.description !== undefined) row.description = parseDescription(body.description);
    if (body.enabled !== undefined) {
      const on = parseEnabled(body.enabled);
      // note: enabling again starts the dead-in-a-row count afresh and clears why it was disabled.
      if (on) Object.assign(row, { enabled: 1, failure_count: 0, disabled_reason: null });
      else Object.assign(row, { enabled: 0, disabled_reason: row.enabled ? 'disabled by request' : row.disabled_reason });
    }
    row.updated_at = this.#iso();
    tx(lease, () => {
      if (!webhookStore.get(lease, id)) throw notFound('webhook', id);
      webhookStore.update(lease, row);
    });
    this.#engine.forgetHooks(lease.projectId);
    if (row.enabled) this.#engine.wake(lease.projectId, this.#now());
    return view(row);
  }

  delete(lease: ProjectLease, id: string): void {
    tx(lease, () => {
      if (!webhookStore.delete(lease, id)) throw notFound('webhook', id);
      // note: no webhook left: the cursor would only hold the change log's retention back.
      if (webhookStore.count(lease) === 0) deleteCursor(lease, CURSOR);
    });
    this.#engine.forgetHooks(lease.projectId);
  }

  /** A new secret; the previous one keeps signing (a second signature) for the overlap. */
  rotateSecret(lease: ProjectLease, id: string): WebhookView & { secret: string } {
    const row = { ...this.#row(lease, id) };
    let current: string | null = null;
    try {
      current = this.#engine.open(lease.projectId, row.id, row.secret, false);
    } catch {
      // note: sealed under another master key (a restored file): the rotation replaces it without an overlap.
    }
    const secret = newSecret();
    const now = this.#now();
    row.old_secret = current === null ? null : this.#sealer.seal(lease.projectId, 'webhooks', `${id}:old`, current);
    row.old_secret_until = current === null ? null : new Date(now + this.#config.webhookSecretOverlapS * 1000).toISOString();
    row.secret = this.#sealer.seal(lease.projectId, 'webhooks', id, secret);
    row.updated_at = new Date(now).toISOString();
    webhookStore.update(lease, row);
    this.#engine.forgetHooks(lease.projectId);
    // note: deliveries that could not be signed (a secret that did not open) wait for this.
    this.#engine.wake(lease.projectId, now);
    return { ...view(row), secret };
  }

  deliveries(lease: ProjectLease, id: string, query: URLSearchParams): { deliveries: DeliveryView[]; limit: number; offset: number; next_offset: number | null } {
    this.#row(lease, id);
    const status = query.get('status');
    if (status !== null && !['pending', 'delivered', 'failed', 'dead'].includes(status)) throw invalidField('status', 'must be pending, delivered, failed or dead');
    const limit = intParam(query, 'limit', 100, 0, 1000);
    const offset = intParam(query, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
    // note: the deliveries not attempted yet have no row: they are read from the change log (outbox.ts) and listed first, as the newest.
    const unwritten = status === null || status === 'pending' ? this.#engine.unwritten(lease, id, offset + limit + 1) : [];
    let rows: DeliveryRow[];
    if (unwritten.length === 0) rows = deliveryStore.list(lease, id, status, limit + 1, offset);
    else {
      const merged = [...unwritten, ...deliveryStore.list(lease, id, status, offset + limit + 1, 0)];
      merged.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
      rows = merged.slice(offset, offset + limit + 1);
    }
    const more = rows.length > limit;
    if (more) rows.pop();
    return { deliveries: rows.map(deliveryView), limit, offset, next_offset: more && limit > 0 ? offset + limit : null };
  }

  /** Puts a delivery back in the queue (a fresh set of attempts), due now. */
  retry(lease: ProjectLease, id: string, deliveryId: string): DeliveryView {
    this.#row(lease, id);
    const d = deliveryStore.get(lease, id, deliveryId);
    if (!d) {
      // note: one not attempted yet is pending and due already; its first attempt in flight is a conflict, as for a row.
      const u = this.#engine.unwritten(lease, id, UNWRITTEN_RETRY_SCAN).find((x) => x.id === deliveryId);
      if (!u) throw notFound('delivery', deliveryId);
      if (this.#engine.inFlight(u.id)) throw new EdgeError('conflict', 'the delivery is being attempted now');
      return deliveryView(u);
    }
    if (d.test) throw new EdgeError('conflict', 'a test delivery is not retried; send another');
    if (d.status === 'pending' && this.#engine.inFlight(d.id)) throw new EdgeError('conflict', 'the delivery is being attempted now');
    const at = this.#iso();
    deliveryStore.requeue(lease, d.id, at);
    this.#engine.wake(lease.projectId, this.#now());
    return deliveryView(deliveryStore.get(lease, id, deliveryId)!);
  }

  /**
   * One synchronous signed attempt of the normal body plus `"test": true`, recorded in the
   * delivery log and never retried; it changes nothing of the webhook's state.
   */
  async test(lease: ProjectLease, body: Record<string, unknown>): Promise<DeliveryView> {
    const known = new Set(['webhook_id', 'type', 'table', 'record']);
    for (const k of Object.keys(body)) if (!known.has(k)) throw invalidField(k, 'unknown field');
    if (typeof body.webhook_id !== 'string') throw invalidField('webhook_id', 'must be a webhook id');
    const row = this.#row(lease, body.webhook_id);
    const type = body.type === undefined ? 'db.insert' : parseEvents([body.type])[0]!;
    if (body.table !== undefined && (typeof body.table !== 'string' || body.table === '' || body.table.length > 128)) throw invalidField('table', 'must be a table name');
    const table = (body.table as string | undefined) ?? 'test';
    const record = body.record === undefined ? {} : body.record;
    if (record === null || typeof record !== 'object' || Array.isArray(record)) throw invalidField('record', 'must be an object');
    const id = uuidv7();
    const at = this.#iso();
    const payload = JSON.stringify({ id, type, table, record, old_record: null, occurred_at: at, test: true });
    const d: DeliveryRow = {
      id, webhook_id: row.id, type, seq: null, payload, test: 1, status: 'pending', attempts: 0, next_attempt_at: null,
      response_status: null, error: null, duration_ms: null, created_at: at,
    };
    deliveryStore.insert(lease, d);
    const projectId = lease.projectId;
    await this.#engine.attempt(projectId, d.id);
    const l = this.#registry.acquire(projectId);
    try {
      return deliveryView(deliveryStore.byId(l, d.id)!);
    } finally {
      l.release();
    }
  }

  // ---------------------------------------------------------------- the engine's (server.ts)

  /** One request answered: the engine weighs request load. */
  noteRequest(): void {
    this.#engine.noteRequest();
  }

  /** Prunes the delivery log (maintenance); how many rows went. */
  pruneLog(lease: ProjectLease): number {
    return pruneLog(lease, this.#config, this.#now());
  }

  /** Resumes dispatch and pending deliveries after a start. */
  start(projectIds: readonly string[]): void {
    this.#engine.start(projectIds);
  }

  close(): void {
    this.#engine.close();
  }

  /** The wait before the next attempt after `attempts` failures (ms). */
  backoff(attempts: number, retryAfter?: string): number {
    return this.#engine.backoff(attempts, retryAfter);
  }

  // ---------------------------------------------------------------- helpers

  #row(lease: ProjectLease, id: string): WebhookRow {
    const r = webhookStore.get(lease, id);
    if (!r) throw notFound('webhook', id);
    return r;
  }

  #url(v: unknown): string {
    if (typeof v !== 'string' || v === '') throw invalidField('url', 'must be an https:// URL (or http:// to 127.0.0.1, localhost or [::1])');
    try {
      this.#outbound.checkUrl('webhook', v);
    } catch (err) {
      if (err instanceof EdgeError && err.code === 'outbound_blocked') throw invalidField('url', err.message);
      throw err;
    }
    return v;
  }

  #table(lease: ProjectLease, v: unknown): string | null {
    if (v === null || v === undefined) return null;
    if (typeof v !== 'string' || v === '') throw invalidField('table', 'must be a table name or null');
    if (this.#tables(lease, v) === null) throw invalidField('table', `there is no table "${v.slice(0, 128)}"`);
    return v;
  }

  /** Checks a written filter against the table; the stored form (JSON of the value as given), or null for none. */
  #filter(lease: ProjectLease, v: unknown, table: string | null): string | null {
    const q = parseFilter(v);
    if (q === null) return null;
    if (table === null) throw invalidField('filter', 'a filter needs a table');
    const t = this.#tables(lease, table);
    if (t === null) throw invalidField('table', `there is no table "${table.slice(0, 128)}"`);
    compileFilter(t, q);
    return JSON.stringify(v);
  }

  #iso(): string {
    return new Date(this.#now()).toISOString();
  }
}
