import { describe, expect, it } from 'vitest';
import { DEFAULT_RATE_LIMIT, loadConfig } from '../../src/config.js';
import { EdgeError } from '../../src/core/errors.js';
import { RateLimiter } from '../../src/edge/rate-limit.js';
import { Revocations } from '../../src/services/auth/revocations.js';

const cfg = { ...DEFAULT_RATE_LIMIT, windowS: 60 };

function limited(fn: () => unknown): EdgeError {
  try {
    fn();
  } catch (err) {
    if (err instanceof EdgeError) return err;
    throw err;
  }
  throw new Error('expected a rate_limited error');
}

describe('RateLimiter', () => {
  it('counts per bucket and answers the tightest headers', () => {
    let now = 1_000_000;
    const rl = new RateLimiter(cfg, () => now);
    const h = rl.hit([{ key: 'a', limit: 5 }, { key: 'b', limit: 2 }]);
    expect(h).toEqual({ 'ratelimit-limit': '2', 'ratelimit-remaining': '1', 'ratelimit-reset': '60' });
    now += 30_000;
    expect(rl.hit([{ key: 'b', limit: 2 }])['ratelimit-remaining']).toBe('0');
    const err = limited(() => rl.hit([{ key: 'b', limit: 2 }]));
    expect(err.code).toBe('rate_limited');
    expect(err.status).toBe(429);
    expect(err.headers).toMatchObject({ 'retry-after': '30', 'ratelimit-limit': '2', 'ratelimit-remaining': '0', 'ratelimit-reset': '30' });
    now += 30_000;
    expect(rl.hit([{ key: 'b', limit: 2 }])['ratelimit-remaining']).toBe('1');
  });

  it('does nothing when disabled', () => {
    const rl = new RateLimiter({ ...cfg, enabled: false });
    for (let i = 0; i < 10; i++) expect(rl.hit([{ key: 'x', limit: 1 }])).toEqual({});
  });
});

describe('Revocations', () => {
  it('remembers ids until their tokens expire, then forgets them', () => {
    let now = 0;
    const r = new Revocations(() => now);
    r.add('s1', 1_000);
    expect(r.has('s1')).toBe(true);
    now = 20_000;
    r.add('s2', 40_000);
    expect(r.has('s1')).toBe(false);
    expect(r.has('s2')).toBe(true);
  });
});

describe('rate-limit config', () => {
  it('reads env and lets overrides change single fields', () => {
    const c = loadConfig({ rateLimit: { login: 7 } }, { PLATFORM_EDGE_RATE_LIMIT_WINDOW_S: '60' });
    expect(c.rateLimit).toMatchObject({ enabled: true, windowS: 60, login: 7, register: DEFAULT_RATE_LIMIT.register });
    expect(loadConfig({}, { PLATFORM_EDGE_RATE_LIMIT: 'off' }).rateLimit.enabled).toBe(false);
    expect(() => loadConfig({}, { PLATFORM_EDGE_RATE_LIMIT: 'maybe' })).toThrow(/on or off/);
    expect(() => loadConfig({}, { PLATFORM_EDGE_RATE_LIMIT_LOGIN: '0' })).toThrow(/at least 1/);
  });
});
