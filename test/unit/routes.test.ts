import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ControlStore } from '../../src/control/control-store.js';
import { CredentialCache } from '../../src/control/keys.js';
import { Sealer } from '../../src/control/seal.js';
import { notFound } from '../../src/edge/errors.js';
import { Pipeline } from '../../src/edge/pipeline.js';
import { json, route, type EdgeRequest, type EdgeResponse, type RouteDef } from '../../src/edge/route.js';
import { Router, split } from '../../src/edge/router.js';
import { EventBus } from '../../src/events/bus.js';
import { ProjectRegistry } from '../../src/project/registry.js';

// Route-table features at the router and through the pipeline's socket-free dispatch:
// the catch-all parameter and a route's rate limit (docs/api.md "Addressing", "Rate limits").

const echo = (_name: string) => (req: { params: Readonly<Record<string, string>> }) => json({ params: req.params });
const table = [
  route({ method: 'GET', path: '/storage/objects/:bucket', auth: 'none', handler: echo('list') }),
  route({ method: 'GET', path: '/storage/objects/:bucket/*key', auth: 'none', handler: echo('get') }),
  route({ method: 'PUT', path: '/storage/objects/:bucket/*key', auth: 'none', handler: echo('put') }),
  route({ method: 'GET', path: '/storage/objects/:bucket/info/:id', auth: 'none', handler: echo('info') }),
  route({ method: 'GET', path: '/storage/buckets/:bucket', auth: 'none', handler: echo('bucket') }),
];

describe('router: catch-all parameter', () => {
  const r = new Router(table);
  const match = (method: string, path: string) => r.match(method, split(path));

  it('binds the rest of the path, slashes included', () => {
    const m = match('GET', '/storage/objects/photos/2024/summer/a.jpg');
    expect(m).toEqual({ kind: 'route', route: table[1], params: { bucket: 'photos', key: '2024/summer/a.jpg' } });
    expect(match('GET', '/storage/objects/photos/a.jpg')).toMatchObject({ kind: 'route', params: { bucket: 'photos', key: 'a.jpg' } });
  });

  it('leaves static and :param routes their precedence', () => {
    expect(match('GET', '/storage/objects/photos')).toMatchObject({ kind: 'route', route: table[0], params: { bucket: 'photos' } });
    expect(match('GET', '/storage/objects/photos/info/7')).toMatchObject({ kind: 'route', route: table[3], params: { bucket: 'photos', id: '7' } });
    // a longer path under the static segment falls back to the catch-all
    expect(match('GET', '/storage/objects/photos/info/7/x')).toMatchObject({ kind: 'route', route: table[1], params: { key: 'info/7/x' } });
  });

  it('matches one or more non-empty segments only', () => {
    expect(match('GET', '/storage/objects/photos/').kind).toBe('none');
    expect(match('GET', '/storage/objects/photos/a//b').kind).toBe('none');
    expect(match('GET', '/storage/objects/photos/a/').kind).toBe('none');
    expect(match('GET', '/storage/objects//a').kind).toBe('none');
  });

  it('answers 405 with the catch-all route methods and HEAD with GET', () => {
    expect(match('DELETE', '/storage/objects/photos/a/b')).toEqual({ kind: 'method', allowed: ['GET', 'PUT'] });
    expect(match('HEAD', '/storage/objects/photos/a/b')).toMatchObject({ kind: 'route', route: table[1] });
  });

  it('refuses a catch-all that is not the last segment, unnamed, or clashing', () => {
    const h = () => json({});
    expect(() => new Router([route({ method: 'GET', path: '/a/*rest/b', auth: 'none', handler: h })])).toThrow(/last segment/);
    expect(() => new Router([route({ method: 'GET', path: '/a/*', auth: 'none', handler: h })])).toThrow(/last segment/);
    expect(
      () =>
        new Router([
          route({ method: 'GET', path: '/a/*x', auth: 'none', handler: h }),
          route({ method: 'PUT', path: '/a/*y', auth: 'none', handler: h }),
        ]),
    ).toThrow(/clashes/);
  });
});

describe('pipeline: routes', () => {
  let dir: string;
  let control: ControlStore;
  let credentials: CredentialCache;
  let registry: ProjectRegistry;
  let bus: EventBus;
  let now = 1_000_000;

  const pipelineWith = (routes: RouteDef[], rateLimitEnabled = true): Pipeline => {
    const config = loadConfig({ dataDir: dir, rateLimit: { enabled: rateLimitEnabled } }, {});
    return new Pipeline({ config, routes, credentials, projects: registry, bus, projectExists: () => false, now: () => now });
  };
  const get = async (p: Pipeline, path: string, method = 'GET', ip = '192.0.2.1', headers: Record<string, string> = {}): Promise<EdgeResponse> =>
    await p.dispatch({ method, path, rawQuery: '', headers, body: null, ip, signal: new AbortController().signal } satisfies EdgeRequest);

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'pe-routes-'));
    control = new ControlStore(dir, 'normal', new Sealer(randomBytes(32)));
    credentials = new CredentialCache(control, 60_000);
    registry = new ProjectRegistry(loadConfig({ dataDir: dir }, {}));
    bus = new EventBus(() => {});
  });
  afterAll(() => {
    credentials.close();
    registry.closeAll();
    control.close();
    bus.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('decodes a catch-all once and refuses encoded slashes and traversal in it', async () => {
    const p = pipelineWith(table);
    const ok = await get(p, '/storage/objects/my%20photos/2024/caf%C3%A9%2525.jpg');
    expect(ok.status).toBe(200);
    expect(ok.json).toEqual({ params: { bucket: 'my photos', key: '2024/café%25.jpg' } });
    for (const bad of ['/storage/objects/b/a%2Fb', '/storage/objects/b/a%2fb', '/storage/objects/b/a/../c', '/storage/objects/b/a/%2e%2e/c', '/storage/objects/b/a%5Cb', '/storage/objects/b/a/.']) {
      const res = await get(p, bad);
      expect(res.status, bad).toBe(400);
      expect(res.json, bad).toEqual({ error: { code: 'invalid_request', message: 'the path contains a forbidden segment' } });
    }
    const malformed = await get(p, '/storage/objects/b/a/%E0%A4%A');
    expect(malformed.status).toBe(400);
    expect(malformed.json).toEqual({ error: { code: 'invalid_request', message: 'malformed percent-encoding in the path' } });
  });

  it('counts a rate-limited route per client address, each route in its own window', async () => {
    const h = () => json({ ok: true });
    const p = pipelineWith([
      route({ method: 'POST', path: '/short', auth: 'none', rateLimit: { name: 'short', perAddress: 2, windowS: 10 }, handler: h }),
      route({ method: 'POST', path: '/long', auth: 'none', rateLimit: { name: 'long', perAddress: 1, windowS: 100 }, handler: h }),
      route({ method: 'POST', path: '/free', auth: 'none', handler: h }),
    ]);
    const first = await get(p, '/short', 'POST');
    expect(first.status).toBe(200);
    expect(first.headers).toMatchObject({ 'ratelimit-limit': '2', 'ratelimit-remaining': '1', 'ratelimit-reset': '10' });
    expect((await get(p, '/short', 'POST')).status).toBe(200);
    const over = await get(p, '/short', 'POST');
    expect(over.status).toBe(429);
    expect(over.json).toEqual({ error: { code: 'rate_limited', message: 'too many attempts; retry in 10 s' } });
    expect(over.headers).toMatchObject({ 'retry-after': '10', 'ratelimit-limit': '2', 'ratelimit-remaining': '0', 'ratelimit-reset': '10' });
    // another address has its own bucket; a route without a limit sends no RateLimit-* headers
    expect((await get(p, '/short', 'POST', '192.0.2.2')).status).toBe(200);
    expect((await get(p, '/free', 'POST')).headers?.['ratelimit-limit']).toBeUndefined();
    expect((await get(p, '/long', 'POST')).headers).toMatchObject({ 'ratelimit-remaining': '0', 'ratelimit-reset': '100' });
    now += 10_000;
    expect((await get(p, '/short', 'POST')).status).toBe(200);
    const long = await get(p, '/long', 'POST');
    expect(long.status).toBe(429);
    expect(long.headers).toMatchObject({ 'retry-after': '90' });
  });

  it('sends the RateLimit-* headers with an error answer, and none when rate limits are off', async () => {
    const rule = { name: 'e', perAddress: 5, windowS: 60 };
    const p = pipelineWith([
      route({ method: 'GET', path: '/missing/:id', auth: 'none', rateLimit: rule, handler: (req) => { throw notFound('thing', req.params.id!); } }),
      route({ method: 'GET', path: '/broken', auth: 'none', rateLimit: { ...rule, name: 'b' }, handler: () => { throw new TypeError('internal'); } }),
    ]);
    const missing = await get(p, '/missing/1');
    expect(missing.status).toBe(404);
    expect(missing.headers).toMatchObject({ 'ratelimit-limit': '5', 'ratelimit-remaining': '4' });
    // an internal error says nothing but its envelope
    const broken = await get(p, '/broken');
    expect(broken.status).toBe(500);
    expect(broken.headers?.['ratelimit-limit']).toBeUndefined();
    const off = pipelineWith([route({ method: 'GET', path: '/x', auth: 'none', rateLimit: { name: 'x', perAddress: 1, windowS: 60 }, handler: () => json({}) })], false);
    for (let i = 0; i < 3; i++) {
      const res = await get(off, '/x');
      expect(res.status).toBe(200);
      expect(res.headers?.['ratelimit-limit']).toBeUndefined();
    }
  });
});

describe('router: fallback routes', () => {
  const h = () => json({});
  const table2 = [
    route({ method: 'GET', path: '/health', auth: 'none', handler: h }),
    route({ method: 'GET', path: '/:shortId', auth: 'none', fallback: true, handler: h }),
    route({ method: 'GET', path: '/db/tables', auth: 'none', handler: h }),
  ];
  const r = new Router(table2);
  const match = (method: string, path: string) => r.match(method, split(path));

  it('matches GET/HEAD of a one-segment path; static routes win; other methods are no route (404), never 405', () => {
    expect(match('GET', '/abcdefghij')).toMatchObject({ kind: 'route', route: table2[1], params: { shortId: 'abcdefghij' } });
    expect(match('HEAD', '/abcdefghij')).toMatchObject({ kind: 'route', route: table2[1] });
    expect(match('GET', '/health')).toMatchObject({ kind: 'route', route: table2[0] });
    expect(match('POST', '/abcdefghij')).toEqual({ kind: 'none' });
    expect(match('DELETE', '/anything')).toEqual({ kind: 'none' });
    // note: a route that is no fallback keeps its 405.
    expect(match('POST', '/health')).toEqual({ kind: 'method', allowed: ['GET'] });
    expect(match('GET', '/db')).toMatchObject({ kind: 'route', route: table2[1], params: { shortId: 'db' } });
    expect(match('GET', '/db/nothing').kind).toBe('none');
  });
});
