import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../src/config.js';
import { Sealer } from '../../src/control/seal.js';
import { EventBus } from '../../src/events/bus.js';
import { OutboundClient } from '../../src/net/outbound.js';
import type { ProjectRegistry } from '../../src/project/registry.js';
import { matches, parseFilter } from '../../src/services/webhooks/filter.js';
import { parseEvents, retryAfterMs, sign, WebhookService } from '../../src/services/webhooks/webhooks.js';

const row = (data: Record<string, unknown>) => ({ id: 'r1', data, created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-02T00:00:00.000Z' });

describe('webhook filter', () => {
  it.each([
    [['qty.eq.3'], { qty: 3 }, true],
    [['qty.eq.3'], { qty: 4 }, false],
    [['qty.gt.3'], { qty: 10 }, true],
    [['qty.gt.3'], { qty: 2 }, false],
    [['qty.lte.3'], { qty: 3 }, true],
    [['qty.neq.3'], { qty: 4 }, true],
    [['qty.neq.3'], { qty: null }, false],
    [['title.eq.a.b'], { title: 'a.b' }, true],
    [['title.like.ab%'], { title: 'abc' }, true],
    [['title.like.ab%'], { title: 'xabc' }, false],
    [['title.ilike.AB*'], { title: 'abc' }, true],
    [['title.like.a_c'], { title: 'abc' }, true],
    [['title.like.a.c'], { title: 'abc' }, false],
    [['title.in.(x,y)'], { title: 'y' }, true],
    [['title.in.(x,y)'], { title: 'z' }, false],
    [['done.is.true'], { done: true }, true],
    [['done.is.true'], { done: 1 }, false],
    [['done.eq.false'], { done: false }, true],
    [['gone.is.null'], {}, true],
    [['gone.is.null'], { gone: 0 }, false],
    [['a.b.eq.1'], { a: { b: 1 } }, true],
    [['a.b.eq.1'], { a: 1 }, false],
    [['id.eq.r1'], {}, true],
    [['created_at.lt.2026-06-01'], {}, true],
    [['qty.gte.1', 'qty.lt.5'], { qty: 5 }, false],
    [['qty.eq.abc'], { qty: 3 }, false],
  ])('%j on %j → %s', (f, data, want) => {
    expect(matches(parseFilter(f, null), row(data))).toBe(want);
  });

  it('no conditions match everything, a missing row nothing', () => {
    expect(matches([], null)).toBe(true);
    expect(matches(parseFilter(['a.eq.1'], null), null)).toBe(false);
  });

  it.each([['x'], ['qty.between.1'], ['1qty.eq.1'], ['done.is.maybe'], ['t.in.a,b']])('refuses %s', (f) => {
    expect(() => parseFilter([f], null)).toThrow();
  });

  it('checks columns of a relational table', () => {
    expect(() => parseFilter(['qty.eq.1'], new Set(['title']))).toThrow(/unknown column "qty"/);
    expect(parseFilter(['title.eq.1', 'id.eq.2'], new Set(['title']))).toHaveLength(2);
    expect(() => parseFilter('qty.eq.1', null)).toThrow();
    expect(() => parseFilter(Array.from({ length: 21 }, () => 'a.eq.1'), null)).toThrow();
  });
});

describe('webhook events and signatures', () => {
  it('takes long and short names, stored long in a fixed order', () => {
    expect(parseEvents(['delete', 'db.insert', 'insert'])).toEqual(['db.insert', 'db.delete']);
    for (const bad of [[], ['INSERT'], ['db.truncate'], [1], 'insert', ['db.']]) expect(() => parseEvents(bad)).toThrow();
  });

  it('signs as standardwebhooks verifies', () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const ts = Math.floor(Date.now() / 1000);
    const body = '{"id":"m1","type":"db.insert"}';
    const sig = sign(secret, 'm1', ts, body);
    expect(new Webhook(secret).verify(body, { 'webhook-id': 'm1', 'webhook-timestamp': String(ts), 'webhook-signature': `v1,${sig}` })).toEqual({ id: 'm1', type: 'db.insert' });
    expect(new Webhook(secret).sign('m1', new Date(ts * 1000), body)).toBe(`v1,${sig}`);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs('120', now)).toBe(120_000);
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeNull();
    expect(retryAfterMs(undefined, now)).toBeNull();
  });
});

describe('backoff', () => {
  const service = (random: () => number, base = 5000, cap = 12 * 3_600_000) => {
    const config = loadConfig({ webhookRetryBaseMs: base, webhookRetryCapMs: cap }, {});
    const registry = {} as ProjectRegistry;
    const bus = new EventBus(() => {});
    return new WebhookService(config, registry, bus, new Sealer(Buffer.alloc(32)), new OutboundClient(config), () => null, { random, now: () => 0 });
  };

  it('is full jitter up to base·2^(n-1), never below the base, never above the cap', () => {
    const top = service(() => 0.999999);
    expect([1, 2, 3, 4, 10].map((n) => top.backoff(n))).toEqual([5000, 9999, 19999, 39999, 2559997]);
    expect(top.backoff(20)).toBe(Math.floor(0.999999 * 12 * 3_600_000));
    const bottom = service(() => 0);
    expect([1, 5, 10].map((n) => bottom.backoff(n))).toEqual([5000, 5000, 5000]);
    const half = service(() => 0.5);
    expect(half.backoff(3)).toBe(10_000);
  });

  it('honours a longer Retry-After, up to the cap', () => {
    const s = service(() => 0, 5000, 60_000);
    expect(s.backoff(1, '30')).toBe(30_000);
    expect(s.backoff(1, '1')).toBe(5000);
    expect(s.backoff(1, '3600')).toBe(60_000);
  });
});
