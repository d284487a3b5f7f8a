import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import type { Config } from '../../config.js';
import type { Sealer } from '../../control/seal.js';
import { EdgeError } from '../../core/errors.js';
import type { EventBus } from '../../events/bus.js';
import type { Change } from '../../events/change-log.js';
import { advanceCursor, openCursor, readCursor, type LoggedChange } from '../../events/cursors.js';
import type { OutboundClient } from '../../net/outbound.js';
import type { ProjectLease, ProjectRegistry } from '../../project/registry.js';
import { compileFilter } from './filter.js';
import { deliveryStore, imageMatch, webhookStore, type DeliveryRow, type WebhookRow } from './store.js';
import { BUSY_DISPATCH_MS, BUSY_ELU, CURSOR, DEAD_IN_A_ROW, DISPATCH_BATCH, ERROR_MAX, type Hook, LOAD_SAMPLE_MS, MAX_QUEUE, type Outcome, PRUNE_BATCH, QUEUE_FULL_RETRY_MS, type TableLookup, type WebhookOptions, changeBody, deliveryFor, retryAfterMs, safeParse, sign, tx, wants, type ChangeBody } from './wire.js';

/**
 * The webhooks' delivery engine (docs/api.md "Webhooks"): the change log is the outbox. A
 * dispatcher reads it through the `webhooks` consumer cursor and, in one transaction, writes one
 * delivery row per (change, matching webhook) and advances the cursor, so a crash either did both
 * or neither. Deliveries are attempted at once, then by `next_attempt_at` (indexed) with
 * exponential backoff and full jitter; everything pending resumes after a restart (`start`). An
 * attempt in flight when the process dies is made again: delivery is at least once, with the same
 * `webhook-id`.
 */
export class DeliveryEngine {
  readonly #config: Config;
  readonly #registry: ProjectRegistry;
  readonly #sealer: Sealer;
  readonly #outbound: OutboundClient;
  readonly #tables: TableLookup;
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #log: (msg: string, err?: unknown) => void;
  /** Webhooks per project, as last read (null entry: none). */
  readonly #hooks = new Map<string, Hook[]>();
  readonly #dirty = new Set<string>();
  #flushQueued = false;
  /** Earliest time (ms) each project has a delivery due. */
  readonly #wakeAt = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;
  #timerAt = Infinity;
  readonly #inFlight = new Set<string>();
  /** Opened secrets by project and sealed text. */
  readonly #secrets = new Map<string, string>();
  readonly #queue: { projectId: string; id: string }[] = [];
  /** Request load (`noteRequest`, `#sample`): requests answered since the last sample, busy as of it. */
  #requests = 0;
  #busy = false;
  #elu: EventLoopUtilization | null = null;
  #sampler: NodeJS.Timeout | null = null;
  /** Attempt outcomes waiting for this turn's write, by project. */
  readonly #outcomes = new Map<string, Outcome[]>();
  #flushOutcomesQueued = false;
  #running = 0;
  #closed = false;

  constructor(config: Config, registry: ProjectRegistry, bus: EventBus, sealer: Sealer, outbound: OutboundClient, tables: TableLookup, opts: WebhookOptions = {}) {
    this.#config = config;
    this.#registry = registry;
    this.#sealer = sealer;
    this.#outbound = outbound;
    this.#tables = tables;
    this.#now = opts.now ?? Date.now;
    this.#random = opts.random ?? Math.random;
    this.#log = opts.log ?? (() => {});
    bus.on('db.change', (e) => this.#onChange(e));
    bus.on('project.deleted', (e) => this.#forget(e.projectId));
  }

  /** The project's webhooks changed (written by the service): read them again. */
  forgetHooks(projectId: string): void {
    this.#hooks.delete(projectId);
  }

  /** Whether this delivery is being attempted now. */
  inFlight(deliveryId: string): boolean {
    return this.#inFlight.has(deliveryId);
  }

  // ---------------------------------------------------------------- load

  /** One request answered (server.ts, the pipeline's record hook): what `#sample` weighs. */
  noteRequest(): void {
    this.#requests++;
  }

  /**
   * Every LOAD_SAMPLE_MS: busy when requests were answered in the interval and the event loop
   * was working more than BUSY_ELU of it. Busy lowers the delivery concurrency (`#drain`);
   * the end of busy starts what waited.
   */
  #sample(): void {
    const elu = performance.eventLoopUtilization(this.#elu ?? undefined);
    this.#elu = performance.eventLoopUtilization();
    const busy = this.#requests > 0 && elu.utilization > BUSY_ELU;
    this.#requests = 0;
    if (busy === this.#busy) return;
    this.#busy = busy;
    if (!busy) this.#drain();
  }

  // ---------------------------------------------------------------- retention

  /**
   * Prunes the delivery log (maintenance, server.ts): finished deliveries (delivered, failed,
   * dead) older than `webhookLogRetentionS`, and past the newest `webhookLogKeep` finished ones
   * of each webhook. Pending ones are never touched. At most PRUNE_BATCH rows per webhook and
   * rule a run (the rest at the next). Returns how many went.
   */
  pruneLog(lease: ProjectLease): number {
    const { webhookLogRetentionS: age, webhookLogKeep: keep } = this.#config;
    if (age === 0 && keep === 0) return 0;
    const before = new Date(this.#now() - age * 1000).toISOString();
    let n = 0;
    tx(lease, () => {
      for (const id of webhookStore.ids(lease)) {
        if (age > 0) n += deliveryStore.pruneOlder(lease, id, before, PRUNE_BATCH);
        if (keep > 0) n += deliveryStore.pruneBeyond(lease, id, keep, PRUNE_BATCH);
      }
    });
    return n;
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * Resumes after a start: every project with webhooks dispatches what its cursor has not
   * passed and schedules its pending deliveries. Runs in the background, one project a turn.
   */
  start(projectIds: readonly string[]): void {
    if (this.#sampler === null && !this.#closed) {
      this.#elu = performance.eventLoopUtilization();
      this.#sampler = setInterval(() => this.#sample(), LOAD_SAMPLE_MS);
      this.#sampler.unref();
    }
    let i = 0;
    const step = (): void => {
      if (this.#closed || i >= projectIds.length) return;
      const id = projectIds[i++]!;
      try {
        if (existsSync(join(this.#registry.dir(id), 'project.db'))) {
          const lease = this.#registry.acquire(id);
          try {
            if (this.#hooksOf(lease).length) {
              this.#markDirty(id);
              this.wake(id, this.#now());
            }
          } finally {
            lease.release();
          }
        }
      } catch (err) {
        this.#log(`webhooks of project ${id} not resumed`, err);
      }
      setImmediate(step);
    };
    setImmediate(step);
  }

  /**
   * Stops timers and new attempts. Attempts in flight finish without recording their outcome
   * (the databases close next): those deliveries stay pending and are made again after a start.
   */
  close(): void {
    // note: outcomes already in hand are written now (fewer repeats after the restart).
    this.#flushOutcomes();
    this.#closed = true;
    if (this.#sampler) clearInterval(this.#sampler);
    this.#sampler = null;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#queue.length = 0;
  }

  // ---------------------------------------------------------------- dispatch

  #onChange(e: Change): void {
    const hooks = this.#hooks.get(e.projectId);
    if (hooks !== undefined && hooks.length === 0) return;
    this.#markDirty(e.projectId);
  }

  #markDirty(projectId: string): void {
    this.#dirty.add(projectId);
    if (this.#flushQueued || this.#closed) return;
    this.#flushQueued = true;
    const run = (): void => {
      this.#flushQueued = false;
      const ids = [...this.#dirty];
      this.#dirty.clear();
      for (const id of ids) this.#dispatch(id);
    };
    // note: after the writing request's turn: a burst of inserts is dispatched in one transaction;
    // while the server is busy with requests, every BUSY_DISPATCH_MS (the changes of that time in
    // one transaction a batch; the change log holds them meanwhile, nothing is lost).
    if (this.#busy) setTimeout(run, BUSY_DISPATCH_MS).unref();
    else setImmediate(run);
  }

  /** Turns the changes after the cursor into delivery rows (and advances it) in one transaction per batch. */
  #dispatch(projectId: string): void {
    if (this.#closed) return;
    let lease: ProjectLease;
    try {
      lease = this.#registry.acquire(projectId);
    } catch {
      return;
    }
    const created: string[] = [];
    try {
      const hooks = this.#hooksOf(lease);
      if (hooks.length === 0) return;
      for (let more = true; more; ) {
        more = false;
        tx(lease, () => {
          openCursor(lease, CURSOR, { from: 'now' });
          const read = readCursor(lease, CURSOR, DISPATCH_BATCH);
          if (read.gap) {
            // note: the change log was pruned past the cursor (its hard cap): those changes are gone.
            this.#log(`webhooks of project ${projectId}: change log gap after seq ${read.since}`);
            advanceCursor(lease, CURSOR, read.oldest_seq - 1);
            more = true;
            return;
          }
          const at = this.#iso();
          for (const c of read.changes) {
            let body: ChangeBody | null = null;
            for (const h of hooks) {
              if (!wants(h, c) || !this.#passes(lease, h, c)) continue;
              body ??= changeBody(c);
              const d = deliveryFor(h, c, body, at);
              deliveryStore.insert(lease, d);
              created.push(d.id);
            }
          }
          if (read.changes.length) advanceCursor(lease, CURSOR, read.changes.at(-1)!.seq);
          more = read.changes.length === DISPATCH_BATCH;
        });
      }
    } catch (err) {
      this.#log(`webhooks of project ${projectId} not dispatched`, err);
    } finally {
      lease.release();
    }
    for (const id of created) this.#enqueue(projectId, id);
  }

  // ---------------------------------------------------------------- attempts

  #enqueue(projectId: string, id: string): void {
    if (this.#closed || this.#inFlight.has(id)) return;
    if (this.#queue.length >= MAX_QUEUE) {
      // note: the queue in memory is bounded; the delivery waits in its row (pending, due) and the
      // project's pump takes it up once there is room.
      this.wake(projectId, this.#now() + QUEUE_FULL_RETRY_MS);
      return;
    }
    this.#inFlight.add(id);
    this.#queue.push({ projectId, id });
    this.#drain();
  }

  /**
   * Starts queued attempts up to the concurrency: the full setting while the server is not
   * busy with requests, a sixteenth of it (at least 1) while it is (`#sample`), so deliveries
   * take a bounded share of the one event loop under request load and catch up after it.
   */
  #drain(): void {
    const limit = this.#busy ? Math.max(1, Math.floor(this.#config.webhookConcurrency / 16)) : this.#config.webhookConcurrency;
    while (!this.#closed && this.#running < limit && this.#queue.length) {
      const { projectId, id } = this.#queue.shift()!;
      this.#running++;
      void this.attempt(projectId, id).finally(() => {
        this.#running--;
        this.#inFlight.delete(id);
        this.#drain();
      });
    }
  }

  /** One attempt of a pending delivery, its outcome recorded (and the next one scheduled). Never throws. */
  async attempt(projectId: string, id: string): Promise<void> {
    let d: DeliveryRow | undefined;
    let row: WebhookRow | undefined;
    let signature = '';
    const lease = this.#tryAcquire(projectId);
    if (!lease) return;
    try {
      d = deliveryStore.byId(lease, id);
      row = d && webhookStore.get(lease, d.webhook_id);
      if (!d || !row || d.status !== 'pending' || (!row.enabled && !d.test)) return;
      signature = this.#signature(lease.projectId, row, d.id, d.payload);
    } catch (err) {
      this.#log(`webhook delivery ${id} not attempted`, err);
      return;
    } finally {
      lease.release();
    }
    const ts = signature.slice(0, signature.indexOf(' '));
    const started = performance.now();
    let status: number | null = null;
    let retryAfter: string | undefined;
    let error: string | null = null;
    let blocked = false;
    try {
      const res = await this.#outbound.request({
        purpose: 'webhook',
        url: row.url,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': d.id,
          'webhook-timestamp': ts,
          'webhook-signature': signature.slice(ts.length + 1),
        },
        body: d.payload,
        timeoutMs: this.#config.webhookTimeoutMs,
        maxResponseBytes: this.#config.webhookMaxResponseBytes,
        overflow: 'truncate',
        // note: receivers de-duplicate on webhook-id: a send cut on a stale kept-alive connection may go again.
        atLeastOnce: true,
      });
      status = res.status;
      retryAfter = res.headers['retry-after'];
      if (status < 200 || status > 299) error = `the target answered ${status}`;
    } catch (err) {
      const e = err instanceof EdgeError ? err : new EdgeError('provider_unreachable', 'the request failed');
      error = `${e.code}: ${e.message}`.slice(0, ERROR_MAX);
      blocked = e.code === 'outbound_blocked' || e.code === 'invalid_request';
    }
    const durationMs = Math.round(performance.now() - started);
    await this.#record(projectId, d, status, error, durationMs, blocked, retryAfter);
  }

  /**
   * Queues one attempt's outcome; resolves once it is written. The outcomes of a loop turn are
   * written together, one transaction per project (`#flush`), not one per attempt. The attempt
   * stays in flight (#inFlight) until then, so it is never started twice; a crash before the
   * write leaves the delivery pending: it is made again (at least once).
   */
  #record(projectId: string, d: DeliveryRow, status: number | null, error: string | null, durationMs: number, blocked: boolean, retryAfter: string | undefined): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return new Promise((done) => {
      let list = this.#outcomes.get(projectId);
      if (list === undefined) this.#outcomes.set(projectId, (list = []));
      list.push({ d, status, error, durationMs, blocked, retryAfter, done });
      if (this.#flushOutcomesQueued) return;
      this.#flushOutcomesQueued = true;
      setImmediate(() => this.#flushOutcomes());
    });
  }

  #flushOutcomes(): void {
    this.#flushOutcomesQueued = false;
    const all = [...this.#outcomes];
    this.#outcomes.clear();
    for (const [projectId, list] of all) {
      try {
        this.#writeOutcomes(projectId, list);
      } finally {
        for (const o of list) o.done();
      }
    }
  }

  #writeOutcomes(projectId: string, list: readonly Outcome[]): void {
    // note: after close the registry may be closed too: an attempt that ends now is made again after the restart.
    if (this.#closed) return;
    const lease = this.#tryAcquire(projectId);
    if (!lease) return;
    const wakes: number[] = [];
    let disabled = false;
    try {
      tx(lease, () => {
        for (const o of list) {
          const r = this.#apply(lease, o);
          if (r.disabled) disabled = true;
          if (r.next !== null) wakes.push(r.next);
        }
      });
    } catch (err) {
      this.#log(`webhook deliveries of project ${projectId}: ${list.length} outcomes not recorded`, err);
    } finally {
      lease.release();
    }
    if (disabled) this.#hooks.delete(projectId);
    if (wakes.length) this.wake(projectId, Math.min(...wakes));
  }

  /** Writes one outcome (inside the flush's transaction): the next attempt's time, whether it disabled the webhook. */
  #apply(lease: ProjectLease, o: Outcome): { next: number | null; disabled: boolean } {
    const { d, status, error, durationMs, blocked, retryAfter } = o;
    const none = { next: null, disabled: false };
    const cur = deliveryStore.byId(lease, d.id);
    if (!cur || cur.status !== 'pending') return none;
    const attempts = cur.attempts + 1;
    const base = { attempts, response_status: status, error, duration_ms: durationMs };
    const ok = status !== null && status >= 200 && status <= 299;
    const at = this.#iso();
    if (ok) {
      deliveryStore.record(lease, d.id, { ...base, status: 'delivered', next_attempt_at: null });
      if (!cur.test) webhookStore.resetFailures(lease, d.webhook_id);
      return none;
    }
    if (cur.test || blocked) {
      deliveryStore.record(lease, d.id, { ...base, status: 'failed', next_attempt_at: null });
      return none;
    }
    if (status === 410) {
      deliveryStore.record(lease, d.id, { ...base, status: 'failed', next_attempt_at: null });
      webhookStore.disable(lease, d.webhook_id, 'the target answered 410 Gone', at);
      return { next: null, disabled: true };
    }
    if (attempts >= this.#config.webhookMaxAttempts) {
      deliveryStore.record(lease, d.id, { ...base, status: 'dead', next_attempt_at: null });
      if (webhookStore.addFailure(lease, d.webhook_id) >= DEAD_IN_A_ROW) {
        webhookStore.disable(lease, d.webhook_id, `${DEAD_IN_A_ROW} deliveries in a row failed every attempt`, at);
        return { next: null, disabled: true };
      }
      return none;
    }
    const next = this.#now() + this.backoff(attempts, retryAfter);
    deliveryStore.record(lease, d.id, { ...base, status: 'pending', next_attempt_at: new Date(next).toISOString() });
    return { next, disabled: false };
  }

  /**
   * The delay before attempt `attempts + 1`, ms: full jitter, a random point up to
   * min(cap, base·2^(attempts-1)), but never below the base; a `Retry-After` (seconds or an
   * HTTP date) longer than that is honoured, up to the cap.
   */
  backoff(attempts: number, retryAfter?: string): number {
    const { webhookRetryBaseMs: base, webhookRetryCapMs: cap } = this.#config;
    const ceiling = Math.min(cap, base * 2 ** Math.min(attempts - 1, 40));
    let delay = Math.max(base, Math.floor(this.#random() * ceiling));
    const asked = retryAfterMs(retryAfter, this.#now());
    if (asked !== null && asked > delay) delay = asked;
    return Math.min(cap, delay);
  }

  // ---------------------------------------------------------------- schedule

  wake(projectId: string, at: number): void {
    if (this.#closed) return;
    const cur = this.#wakeAt.get(projectId);
    if (cur === undefined || at < cur) this.#wakeAt.set(projectId, at);
    if (at < this.#timerAt) this.#arm(at);
  }

  #arm(at: number): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => this.#tick(), Math.max(0, Math.min(at - this.#now(), 2 ** 31 - 1)));
    this.#timer.unref();
  }

  #tick(): void {
    this.#timer = null;
    this.#timerAt = Infinity;
    const now = this.#now();
    let earliest = Infinity;
    for (const [pid, at] of [...this.#wakeAt]) {
      if (at <= now) {
        this.#wakeAt.delete(pid);
        this.#pump(pid);
      } else earliest = Math.min(earliest, at);
    }
    for (const at of this.#wakeAt.values()) earliest = Math.min(earliest, at);
    if (earliest !== Infinity && !this.#closed) this.#arm(earliest);
  }

  /** Dispatches what is left and starts the project's due deliveries; schedules the next. */
  #pump(projectId: string): void {
    this.#dirty.delete(projectId);
    this.#dispatch(projectId);
    if (this.#queue.length >= MAX_QUEUE) return this.wake(projectId, this.#now() + QUEUE_FULL_RETRY_MS);
    const lease = this.#tryAcquire(projectId);
    if (!lease) return;
    const start: string[] = [];
    let nextDue: string | null = null;
    // note: one instant for both reads: a delivery due by it is in `due` (started now, or in flight and
    // rescheduling itself when it ends); the earliest of the others gets the wake-up.
    const nowMs = this.#now();
    try {
      const now = new Date(nowMs).toISOString();
      const limit = this.#inFlight.size + 200;
      const due = deliveryStore.due(lease, now, limit);
      for (const d of due) if (!this.#inFlight.has(d.id)) start.push(d.id);
      if (start.length && due.length === limit) this.#wakeAt.set(projectId, nowMs);
      nextDue = deliveryStore.nextDue(lease, now);
    } catch (err) {
      this.#log(`webhooks of project ${projectId} not scheduled`, err);
    } finally {
      lease.release();
    }
    for (const id of start) this.#enqueue(projectId, id);
    // note: a due one in flight reschedules itself when its attempt ends.
    if (nextDue !== null) this.wake(projectId, Date.parse(nextDue));
  }

  // ---------------------------------------------------------------- helpers

  #tryAcquire(projectId: string): ProjectLease | null {
    try {
      return this.#registry.acquire(projectId);
    } catch {
      return null;
    }
  }

  #hooksOf(lease: ProjectLease): Hook[] {
    let hooks = this.#hooks.get(lease.projectId);
    if (hooks === undefined) {
      hooks = webhookStore.list(lease).map((row) => ({
        row,
        events: new Set(JSON.parse(row.events) as string[]),
        filter: row.filter === null ? null : safeParse(row.filter),
        compiled: null,
      }));
      this.#hooks.set(lease.projectId, hooks);
    }
    return hooks;
  }

  #forget(projectId: string): void {
    this.#hooks.delete(projectId);
    this.#wakeAt.delete(projectId);
    this.#dirty.delete(projectId);
  }

  /**
   * Whether the change's row (the new row; the old one for a delete) passes the hook's filter:
   * the rows API's compiled terms run by SQLite on the stored row image (as realtime does).
   * A row without an image (logged before images were kept) or a filter that no longer
   * compiles (a column dropped since) matches nothing.
   */
  #passes(lease: ProjectLease, h: Hook, c: LoggedChange): boolean {
    if (h.filter === null) return true;
    if (h.filter === false) return false;
    const image = c.op === 'delete' ? c.oldRow : c.newRow;
    if (image === null) return false;
    const t = this.#tables(lease, c.table);
    if (t === null) return false;
    let k = h.compiled;
    if (k === null || k.t !== t) {
      try {
        const { where, params } = compileFilter(t, h.filter);
        k = { t, sql: imageMatch.sql(t, where), params };
      } catch {
        k = { t, sql: null, params: [] };
      }
      h.compiled = k;
    }
    return k.sql !== null && imageMatch.run(lease, k.sql, image, k.params);
  }

  open(projectId: string, id: string, sealed: string, old: boolean): string {
    // note: opening derives the project's key (HKDF) and decrypts: once per sealed value, not per attempt.
    const key = `${projectId}\0${sealed}`;
    let plain = this.#secrets.get(key);
    if (plain === undefined) {
      plain = this.#sealer.open(projectId, 'webhooks', old ? `${id}:old` : id, sealed, () => {});
      if (this.#secrets.size >= 10_000) this.#secrets.clear();
      this.#secrets.set(key, plain);
    }
    return plain;
  }

  /** `<timestamp> <signature header>`: one `v1,` signature per secret in force (the new one first). */
  #signature(projectId: string, row: WebhookRow, id: string, payload: string): string {
    const ts = Math.floor(this.#now() / 1000);
    const secrets = [this.open(projectId, row.id, row.secret, false)];
    if (row.old_secret !== null && row.old_secret_until !== null && Date.parse(row.old_secret_until) > this.#now()) {
      secrets.push(this.open(projectId, row.id, row.old_secret, true));
    }
    return `${ts} ${secrets.map((s) => `v1,${sign(s, id, ts, payload)}`).join(' ')}`;
  }

  #iso(): string {
    return new Date(this.#now()).toISOString();
  }
}
