import type { Config } from '../../config.js';
import type { ProjectLease } from '../../project/registry.js';
import type { FirstAttempt } from './outbox.js';
import { deliveryStore, webhookStore, type DeliveryRow } from './store.js';
import { DEAD_IN_A_ROW, PRUNE_BATCH, retryAfterMs, tx } from './wire.js';

/**
 * What one delivery attempt's outcome does to the log (and the log's retention, `pruneLog`) (docs/api.md "Webhooks"): delivered,
 * failed (410 also disables the webhook; refused by the URL rule; a test), or pending again at
 * the backoff's time, or dead (the fifth dead one in a row disables the webhook). A first
 * attempt (`first`) writes the delivery's row; a later one updates it.
 */

/** One attempt's outcome, waiting for the turn's write (delivery.ts `#record`). */
export interface Outcome {
  d: DeliveryRow;
  /** The first attempt of a delivery read from the change log (no row yet), else null. */
  first: FirstAttempt | null;
  /** Not attempted (the webhook disabled meanwhile, or its secret did not open): the row waits pending, due. */
  parked: boolean;
  status: number | null;
  error: string | null;
  durationMs: number;
  blocked: boolean;
  retryAfter: string | undefined;
  done: () => void;
}

export interface Clock {
  now: () => number;
  random: () => number;
}

/**
 * The delay before attempt `attempts + 1`, ms: full jitter, a random point up to
 * min(cap, base·2^(attempts-1)), but never below the base; a `Retry-After` (seconds or an
 * HTTP date) longer than that is honoured, up to the cap.
 */
export function backoff(config: Config, clock: Clock, attempts: number, retryAfter?: string): number {
  const { webhookRetryBaseMs: base, webhookRetryCapMs: cap } = config;
  const ceiling = Math.min(cap, base * 2 ** Math.min(attempts - 1, 40));
  let delay = Math.max(base, Math.floor(clock.random() * ceiling));
  const asked = retryAfterMs(retryAfter, clock.now());
  if (asked !== null && asked > delay) delay = asked;
  return Math.min(cap, delay);
}

/** Writes one outcome (inside the flush's transaction): the next attempt's time, whether it disabled the webhook. */
export function applyOutcome(lease: ProjectLease, config: Config, clock: Clock, o: Outcome): { next: number | null; disabled: boolean } {
  const { d, status, error, durationMs, blocked, retryAfter } = o;
  const none = { next: null, disabled: false };
  const at = new Date(clock.now()).toISOString();
  let cur: DeliveryRow | undefined;
  let write: (f: Pick<DeliveryRow, 'status' | 'attempts' | 'next_attempt_at' | 'response_status' | 'error'> & { duration_ms: number | null }) => void;
  if (o.first !== null) {
    // note: the webhook deleted meanwhile takes its deliveries with it; a row already there was
    // written by another reading of the same change (after a restart): this one is a repeat.
    if (!webhookStore.exists(lease, d.webhook_id) || deliveryStore.byId(lease, d.id)) return none;
    cur = d;
    write = (f) => deliveryStore.insert(lease, { ...d, ...f });
    if (o.parked) {
      write({ status: 'pending', attempts: 0, next_attempt_at: at, response_status: null, error: null, duration_ms: null });
      return none;
    }
  } else {
    cur = deliveryStore.byId(lease, d.id);
    if (!cur || cur.status !== 'pending') return none;
    write = (f) => deliveryStore.record(lease, d.id, f);
  }
  const attempts = cur.attempts + 1;
  const base = { attempts, response_status: status, error, duration_ms: durationMs };
  const ok = status !== null && status >= 200 && status <= 299;
  if (ok) {
    write({ ...base, status: 'delivered', next_attempt_at: null });
    if (!cur.test) webhookStore.resetFailures(lease, d.webhook_id);
    return none;
  }
  if (cur.test || blocked) {
    write({ ...base, status: 'failed', next_attempt_at: null });
    return none;
  }
  if (status === 410) {
    write({ ...base, status: 'failed', next_attempt_at: null });
    webhookStore.disable(lease, d.webhook_id, 'the target answered 410 Gone', at);
    return { next: null, disabled: true };
  }
  if (attempts >= config.webhookMaxAttempts) {
    write({ ...base, status: 'dead', next_attempt_at: null });
    if (webhookStore.addFailure(lease, d.webhook_id) >= DEAD_IN_A_ROW) {
      webhookStore.disable(lease, d.webhook_id, `${DEAD_IN_A_ROW} deliveries in a row failed every attempt`, at);
      return { next: null, disabled: true };
    }
    return none;
  }
  const next = clock.now() + backoff(config, clock, attempts, retryAfter);
  write({ ...base, status: 'pending', next_attempt_at: new Date(next).toISOString() });
  return { next, disabled: false };
}

/**
 * Prunes the delivery log (maintenance, server.ts): finished deliveries (delivered, failed,
 * dead) older than `webhookLogRetentionS`, and past the newest `webhookLogKeep` finished ones
 * of each webhook. Pending ones are never touched. At most PRUNE_BATCH rows per webhook and
 * rule a run (the rest at the next). Returns how many went.
 */
export function pruneLog(lease: ProjectLease, config: Config, nowMs: number): number {
  const { webhookLogRetentionS: age, webhookLogKeep: keep } = config;
  if (age === 0 && keep === 0) return 0;
  const before = new Date(nowMs - age * 1000).toISOString();
  let n = 0;
  tx(lease, () => {
    for (const id of webhookStore.ids(lease)) {
      if (age > 0) n += deliveryStore.pruneOlder(lease, id, before, PRUNE_BATCH);
      if (keep > 0) n += deliveryStore.pruneBeyond(lease, id, keep, PRUNE_BATCH);
    }
  });
  return n;
}
