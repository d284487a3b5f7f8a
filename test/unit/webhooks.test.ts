import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../src/config.js';
import { Sealer } from '../../src/control/seal.js';
import { EventBus } from '../../src/events/bus.js';
import { OutboundClient } from '../../src/net/outbound.js';
import type { ProjectRegistry } from '../../src/project/registry.js';
import { parseFilter } from '../../src/services/webhooks/filter.js';
import { WebhookService } from '../../src/services/webhooks/webhooks.js';
import { parseEvents, retryAfterMs, sign } from '../../src/services/webhooks/wire.js';

describe('webhook filter (the rows API grammar)', () => {
  it('reads the query-string form: filter= and or= as a list takes them, percent-decoded', () => {
    expect(parseFilter('filter=qty.gte.10&or=(title.eq.a,title.like.b%25)')).toEqual({
      filters: [{ field: ['qty'], op: 'gte', values: [{ text: '10', quoted: false }] }],
      or: [[
        { field: ['title'], op: 'eq', values: [{ text: 'a', quoted: false }] },
        { field: ['title'], op: 'like', values: [{ text: 'b%', quoted: false }] },
      ]],
    });
  });

  it('reads the array form as filter= terms, taken as written', () => {
    expect(parseFilter(['a.b.eq.1', 'n.in.(1,2)'])).toEqual({
      filters: [
        { field: ['a', 'b'], op: 'eq', values: [{ text: '1', quoted: false }] },
        { field: ['n'], op: 'in', values: [{ text: '1', quoted: false }, { text: '2', quoted: false }] },
      ],
      or: [],
    });
  });

  it('none is null', () => {
    for (const v of [null, undefined, [], '']) expect(parseFilter(v)).toBeNull();
  });

  it.each([['x'], ['qty.between.1'], ['1qty.eq.1'], ['done.is.maybe'], ['t.in.a,b'], ['status=eq.done'], ['select=a'], ['or=a.eq.1'], [5], [{ a: 1 }], [[1]]])(
    'refuses %j with invalid_field filter',
    (f) => {
      const v = typeof f === 'string' && !f.includes('=') ? [f] : f;
      try {
        parseFilter(v);
        expect.unreachable();
      } catch (err) {
        expect(err).toMatchObject({ code: 'invalid_field', details: { field: 'filter' } });
      }
    },
  );
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
