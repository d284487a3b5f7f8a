import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { EventLoopUtilization } from 'node:perf_hooks';
import type { Config } from '../../config.js';
import type { Sealer } from '../../control/seal.js';
import { EdgeError } from '../../core/errors.js';
import type { EventBus } from '../../events/bus.js';
import type { Change } from '../../events/change-log.js';
import { advanceCursor, getCursor, type LoggedChange } from '../../events/cursors.js';
import type { OutboundClient } from '../../net/outbound.js';
import type { ProjectLease, ProjectRegistry } from '../../project/registry.js';
import { compileFilter } from './filter.js';
import { applyOutcome, backoff, type Clock, type Outcome } from './outcome.js';
import { newWindow, readNext, unwritten, WINDOW, type FirstAttempt, type Window } from './outbox.js';
import { Signer } from './signer.js';
import { deliveryStore, imageMatch, webhookStore, type DeliveryRow, type WebhookRow } from './store.js';
import { BUSY_DISPATCH_MS, BUSY_REQUESTS_PER_ATTEMPT, BUSY_ELU, BUSY_ELU_OFF, CURSOR, ERROR_MAX, type Hook, LOAD_SAMPLE_MS, MAX_QUEUE, QUEUE_FULL_RETRY_MS, type TableLookup, type WebhookOptions, safeParse, tx } from './wire.js';

/**
 * The webhooks' delivery engine (docs/api.md "Webhooks"): the change log is the outbox
 * (outbox.ts). A dispatcher reads the changes past the `webhooks` consumer cursor and starts the
 * first attempt of each (change, matching webhook) at once, without writing anything; the
 * attempt's outcome writes the delivery's row and advances the cursor over the changes whose
 * first attempts have all ended, in one transaction (outcome.ts). Later attempts go by
 * `next_attempt_at` (indexed) with exponential backoff and full jitter; everything pending
 * resumes after a restart (`start`). An attempt in flight when the process dies is made again:
 * delivery is at least once, with the same `webhook-id` (derived from the change and webhook).
 */
export class DeliveryEngine {
  readonly #config: Config;
  readonly #registry: ProjectRegistry;
  readonly #signer: Signer;
  readonly #outbound: OutboundClient;
  readonly #tables: TableLookup;
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #log: (msg: string, err?: unknown) => void;
  readonly #clock: Clock;
  /** Webhooks per project, as last read (null entry: none). */
  readonly #hooks = new Map<string, Hook[]>();
  readonly #dirty = new Set<string>();
  #flushQueued = false;
  /** Earliest time (ms) each project has a delivery due. */
  readonly #wakeAt = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;
  #timerAt = Infinity;
  /** Deliveries queued or being attempted, and those being attempted. */
  readonly #inFlight = new Set<string>();
  readonly #started = new Set<string>();
  readonly #queue: { projectId: string; id: string; first: FirstAttempt | null }[] = [];
  /** Each project's read position over the change log (outbox.ts). */
  readonly #windows = new Map<string, Window>();
  /** Request load (`noteRequest`, `#sample`): requests answered since the last sample, busy as of it. */
  #requests = 0;
  #busy = false;
  /** Attempts that may still start in this sample interval while busy. */
  #budget = 1;
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
    this.#signer = new Signer(sealer);
    this.#outbound = outbound;
    this.#tables = tables;
    this.#now = opts.now ?? Date.now;
    this.#random = opts.random ?? Math.random;
    this.#log = opts.log ?? (() => {});
    this.#clock = { now: this.#now, random: this.#random };
    bus.on('db.change', (e) => this.#onChange(e));
    bus.on('project.deleted', (e) => this.#forget(e.projectId));
  }

  /** The project's webhooks changed (written by the service): read them again. */
  forgetHooks(projectId: string): void {
    this.#hooks.delete(projectId);
  }

  /** Whether this delivery is being attempted now (started, not only queued). */
  inFlight(deliveryId: string): boolean {
    return this.#started.has(deliveryId);
  }

  // ---------------------------------------------------------------- load

  /** One request answered (server.ts, the pipeline's record hook): what `#sample` weighs. */
  noteRequest(): void {
    this.#requests++;
  }

  /**
   * Every LOAD_SAMPLE_MS: busy when requests were answered in the interval and the event loop
   * was working more than BUSY_ELU of it (once busy, more than BUSY_ELU_OFF). Busy lowers the delivery concurrency (`#drain`);
   * the end of busy starts what waited.
   */
  #sample(): void {
    const elu = performance.eventLoopUtilization(this.#elu ?? undefined);
    this.#elu = performance.eventLoopUtilization();
    // note: hysteresis: busy from BUSY_ELU up, and it stays so down to BUSY_ELU_OFF (a loaded machine makes the measure flicker).
    const busy = this.#requests > 0 && elu.utilization > (this.#busy ? BUSY_ELU_OFF : BUSY_ELU);
    const starved = this.#budget <= 0;
    // note: in proportion to the requests answered, so the deliveries' share of the loop holds on a fast or a slow machine.
    this.#budget = Math.max(1, Math.floor(this.#requests / BUSY_REQUESTS_PER_ATTEMPT));
    this.#requests = 0;
    if (busy === this.#busy && !(busy && starved)) return;
    this.#busy = busy;
    this.#drain();
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

  /**
   * Reads the changes after the window's position and starts their first attempts (outbox.ts);
   * up to WINDOW of them outstanding per project, the next read when half have ended. Changes
   * no webhook wants move the cursor at once when nothing before them is outstanding.
   */
  #dispatch(projectId: string): void {
    if (this.#closed) return;
    const lease = this.#tryAcquire(projectId);
    if (!lease) return;
    const firsts: FirstAttempt[] = [];
    try {
      const hooks = this.#hooksOf(lease);
      let win = this.#windows.get(projectId);
      if (hooks.length === 0) {
        this.#windows.delete(projectId);
        return;
      }
      if (win === undefined) this.#windows.set(projectId, (win = newWindow(lease)));
      if (win.outstanding >= WINDOW) return;
      const passes = (h: Hook, c: LoggedChange): boolean => this.#passes(lease, h, c);
      for (;;) {
        const r = readNext(lease, win, hooks, passes, this.#inFlight);
        if (r.gapTo !== null) {
          // note: the change log was pruned past the cursor (its hard cap): those changes are gone.
          this.#log(`webhooks of project ${projectId}: change log gap after seq ${win.read}`);
          const to = r.gapTo - 1;
          tx(lease, () => advanceCursor(lease, CURSOR, to));
          win.advanced(to);
          win.read = Math.max(win.read, to);
          continue;
        }
        for (const f of r.attempts) firsts.push(f);
        win.more = r.more;
        if (!r.more || r.read === 0 || win.outstanding >= WINDOW) break;
      }
      if (win.outstanding === 0) {
        const through = win.through();
        if (through !== null) {
          tx(lease, () => advanceCursor(lease, CURSOR, through));
          win.advanced(through);
        }
      }
    } catch (err) {
      this.#log(`webhooks of project ${projectId} not dispatched`, err);
    } finally {
      lease.release();
    }
    for (const f of firsts) this.#enqueue(projectId, f.d.id, f);
  }

  // ---------------------------------------------------------------- attempts

  #enqueue(projectId: string, id: string, first: FirstAttempt | null = null): void {
    if (this.#closed || this.#inFlight.has(id)) return;
    // note: first attempts are bounded by their windows (WINDOW a project), not by the queue: they have no row to wait in.
    if (first === null && this.#queue.length >= MAX_QUEUE) {
      // note: the queue in memory is bounded; the delivery waits in its row (pending, due) and the
      // project's pump takes it up once there is room.
      this.wake(projectId, this.#now() + QUEUE_FULL_RETRY_MS);
      return;
    }
    this.#inFlight.add(id);
    this.#queue.push({ projectId, id, first });
    this.#drain();
  }

  /**
   * Starts queued attempts up to the concurrency: the full setting while the server is not
   * busy with requests; while it is (`#sample`), a sixteenth of it (at least 1) and one start a
   * sample interval per BUSY_REQUESTS_PER_ATTEMPT requests answered in the previous one (at
   * least one): deliveries take a small share of the loop under load, and catch up after it.
   */
  #drain(): void {
    const limit = this.#busy ? Math.max(1, Math.floor(this.#config.webhookConcurrency / 16)) : this.#config.webhookConcurrency;
    while (!this.#closed && this.#running < limit && this.#queue.length && (!this.#busy || this.#budget > 0)) {
      if (this.#busy) this.#budget--;
      const { projectId, id, first } = this.#queue.shift()!;
      this.#running++;
      this.#started.add(id);
      void (first === null ? this.attempt(projectId, id) : this.#attemptFirst(projectId, first)).finally(() => {
        this.#running--;
        this.#inFlight.delete(id);
        this.#started.delete(id);
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
    await this.#send(projectId, d, row.url, signature, null);
  }

  /**
   * The first attempt of a delivery read from the change log, with the webhook as now cached:
   * one deleted meanwhile ends it unwritten; one disabled, or whose secret does not open,
   * leaves the delivery's row pending (attempted once the webhook is enabled or its secret rotated).
   */
  async #attemptFirst(projectId: string, f: FirstAttempt): Promise<void> {
    let hooks = this.#hooks.get(projectId);
    if (hooks === undefined) {
      const lease = this.#tryAcquire(projectId);
      if (lease) {
        try {
          hooks = this.#hooksOf(lease);
        } catch {
          // note: read again at the outcome's write.
        } finally {
          lease.release();
        }
      }
    }
    const row = hooks === undefined ? f.hook.row : hooks.find((h) => h.row.id === f.d.webhook_id)?.row;
    if (row === undefined) return this.#record(projectId, parked(f));
    let signature: string;
    try {
      if (!row.enabled) throw new Error('disabled');
      signature = this.#signature(projectId, row, f.d.id, f.d.payload);
    } catch {
      return this.#record(projectId, parked(f));
    }
    await this.#send(projectId, f.d, row.url, signature, f);
  }

  /** Sends one signed attempt and records its outcome. */
  async #send(projectId: string, d: DeliveryRow, url: string, signature: string, first: FirstAttempt | null): Promise<void> {
    const ts = signature.slice(0, signature.indexOf(' '));
    const started = performance.now();
    let status: number | null = null;
    let retryAfter: string | undefined;
    let error: string | null = null;
    let blocked = false;
    try {
      const res = await this.#outbound.request({
        purpose: 'webhook',
        url,
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
    await this.#record(projectId, { d, first, parked: false, status, error, durationMs, blocked, retryAfter });
  }

  /**
   * Queues one attempt's outcome; resolves once it is written. The outcomes of a loop turn are
   * written together, one transaction per project (`#flush`), not one per attempt. The attempt
   * stays in flight (#inFlight) until then, so it is never started twice; a crash before the
   * write leaves the delivery pending: it is made again (at least once).
   */
  #record(projectId: string, o: Omit<Outcome, 'done'>): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return new Promise((done) => {
      let list = this.#outcomes.get(projectId);
      if (list === undefined) this.#outcomes.set(projectId, (list = []));
      list.push({ ...o, done });
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
    // note: the first attempts written here end in memory first, so the cursor moves over them in the same transaction.
    const win = this.#windows.get(projectId);
    for (const o of list) if (o.first !== null) o.first.win.done(o.first.seq);
    const through = win?.through() ?? null;
    try {
      tx(lease, () => {
        for (const o of list) {
          const r = applyOutcome(lease, this.#config, this.#clock, o);
          if (r.disabled) disabled = true;
          if (r.next !== null) wakes.push(r.next);
        }
        // note: the cursor goes with the project's last webhook (webhooks.ts `delete`); attempts of that one may end after.
        if (through !== null && getCursor(lease, CURSOR) !== null) advanceCursor(lease, CURSOR, through);
      });
      if (through !== null) win!.advanced(through);
    } catch (err) {
      this.#log(`webhook deliveries of project ${projectId}: ${list.length} outcomes not recorded`, err);
      // note: read the log again from the cursor: the unwritten first attempts are made again, with the same ids.
      if (win !== undefined && this.#windows.get(projectId) === win) this.#windows.delete(projectId);
      this.#markDirty(projectId);
    } finally {
      lease.release();
    }
    if (disabled) this.#hooks.delete(projectId);
    if (wakes.length) this.wake(projectId, Math.min(...wakes));
    if (win?.more && win.outstanding < WINDOW / 2) this.#markDirty(projectId);
  }

  /** The delay before attempt `attempts + 1`, ms (outcome.ts `backoff`). */
  backoff(attempts: number, retryAfter?: string): number {
    return backoff(this.#config, this.#clock, attempts, retryAfter);
  }

  /** The webhook's deliveries not written yet (not attempted, or their first attempt in flight), newest first (outbox.ts). */
  unwritten(lease: ProjectLease, webhookId: string, limit: number): DeliveryRow[] {
    const h = this.#hooksOf(lease).find((x) => x.row.id === webhookId);
    return h === undefined ? [] : unwritten(lease, h, (k, c) => this.#passes(lease, k, c), limit);
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
    this.#windows.delete(projectId);
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
    return this.#signer.open(projectId, id, sealed, old);
  }

  #signature(projectId: string, row: WebhookRow, id: string, payload: string): string {
    return this.#signer.signature(projectId, row, id, payload, this.#now());
  }

  #iso(): string {
    return new Date(this.#now()).toISOString();
  }
}

/** The outcome of a first attempt not made: its row waits pending, due. */
const parked = (f: FirstAttempt): Omit<Outcome, 'done'> => ({ d: f.d, first: f, parked: true, status: null, error: null, durationMs: 0, blocked: false, retryAfter: undefined });
