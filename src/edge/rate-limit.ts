import type { RateLimitConfig } from '../config.js';
import { EdgeError } from '../core/errors.js';

interface Window {
  count: number;
  resetAt: number;
}

export interface LimitCheck {
  /** Bucket key, e.g. `login:ip:<project>:<address>`. */
  readonly key: string;
  readonly limit: number;
  /** The window, seconds; the config's `windowS` when absent. */
  readonly windowS?: number;
}

const MAX_BUCKETS = 200_000;
const SWEEP_MS = 30_000;

/**
 * Fixed-window counters in memory (one process; a shared store would replace them, like the
 * bus, if the server ever ran as several processes). `hit` counts one attempt against each bucket and answers the `RateLimit-*`
 * headers of the tightest one, or throws 429 `rate_limited` with `Retry-After`.
 * The pipeline holds one, shared by every route with a `rateLimit` (route.ts); each
 * bucket keeps the window its check names.
 */
export class RateLimiter {
  readonly #cfg: RateLimitConfig;
  readonly #now: () => number;
  readonly #windows = new Map<string, Window>();
  #lastSweep = 0;

  constructor(cfg: RateLimitConfig, now: () => number = Date.now) {
    this.#cfg = cfg;
    this.#now = now;
  }

  get config(): RateLimitConfig {
    return this.#cfg;
  }

  hit(checks: readonly LimitCheck[]): Record<string, string> {
    if (!this.#cfg.enabled) return {};
    const now = this.#now();
    this.#sweep(now);
    let tightest: { limit: number; remaining: number; resetAt: number } | null = null;
    let over: { limit: number; resetAt: number } | null = null;
    for (const c of checks) {
      let w = this.#windows.get(c.key);
      if (!w || w.resetAt <= now) {
        w = { count: 0, resetAt: now + (c.windowS ?? this.#cfg.windowS) * 1000 };
        this.#windows.set(c.key, w);
      }
      w.count++;
      const remaining = Math.max(0, c.limit - w.count);
      if (w.count > c.limit && (!over || w.resetAt > over.resetAt)) over = { limit: c.limit, resetAt: w.resetAt };
      if (!tightest || remaining < tightest.remaining) tightest = { limit: c.limit, remaining, resetAt: w.resetAt };
    }
    if (over) {
      const retry = String(Math.max(1, Math.ceil((over.resetAt - now) / 1000)));
      throw new EdgeError('rate_limited', `too many attempts; retry in ${retry} s`, {
        headers: { 'retry-after': retry, 'ratelimit-limit': String(over.limit), 'ratelimit-remaining': '0', 'ratelimit-reset': retry },
      });
    }
    if (!tightest) return {};
    return {
      'ratelimit-limit': String(tightest.limit),
      'ratelimit-remaining': String(tightest.remaining),
      'ratelimit-reset': String(Math.max(1, Math.ceil((tightest.resetAt - now) / 1000))),
    };
  }

  #sweep(now: number): void {
    if (now - this.#lastSweep < SWEEP_MS && this.#windows.size < MAX_BUCKETS) return;
    this.#lastSweep = now;
    for (const [k, w] of this.#windows) if (w.resetAt <= now) this.#windows.delete(k);
    // note: a flood of distinct addresses must not grow memory without bound; past the cap we start over.
    if (this.#windows.size >= MAX_BUCKETS) this.#windows.clear();
  }
}
