import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';
import { openSse } from '../helpers/sse.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

const admin = () => ({ key: s.keys.service });
type LiveBody = { seq: number; events: Record<string, unknown>[]; stats: Record<string, unknown>; edge: Record<string, unknown> };

describe('live log', () => {
  it('records requests with the templated route, never the query string or credentials', async () => {
    await s.req('/health/key?token=supersecret123&password=hunter2', { headers: { authorization: 'Basic c2VjcmV0' } });
    await s.req('/nope/x?q=private', {});
    const res = await s.req('/live?since=0', admin());
    expect(res.status).toBe(200);
    const body = (await res.json()) as LiveBody;
    expect(body).toMatchObject({ seq: expect.any(Number), stats: expect.any(Object), edge: expect.any(Object) });
    const ev = body.events.find((e) => e.route === '/health/key');
    expect(ev).toMatchObject({ kind: 'request', method: 'GET', status: 200, seq: expect.any(Number), at: expect.any(String) });
    expect(typeof ev!.duration_ms).toBe('number');
    const text = JSON.stringify(body);
    for (const secret of ['supersecret123', 'hunter2', 'c2VjcmV0', 'private', s.keys.publishable, s.keys.service]) {
      expect(text).not.toContain(secret);
    }
    expect(body.stats).toMatchObject({ requests: expect.any(Number), rps: expect.any(Number) });
    expect(body.edge).toMatchObject({ version: expect.any(String), backend: s.backend, uptime_s: expect.any(Number) });
  });

  it('returns only events after `since`', async () => {
    const first = (await (await s.req('/live?since=0', admin())).json()) as LiveBody;
    await s.req('/health/key');
    const next = (await (await s.req(`/live?since=${first.seq}`, admin())).json()) as LiveBody;
    expect(next.events.length).toBeGreaterThanOrEqual(1);
    expect(next.events.every((e) => (e.seq as number) > first.seq)).toBe(true);
  });

  it('rejects a bad `since` with 400', async () => {
    const res = await s.req('/live?since=-3', admin());
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe('invalid_field');
  });

  it('needs auth:admin or an operator session', async () => {
    expect((await s.req('/live')).status).toBe(401);
    const op = await s.req('/live', { key: null, headers: { authorization: `Bearer ${s.operatorToken}`, 'x-service-project': s.projectId } });
    expect(op.status).toBe(200);
  });

  it('streams hello, log and stats over SSE', async () => {
    const sse = await openSse(`${s.url}/live/stream`, { 'x-service-key': s.keys.service });
    try {
      expect(sse.response.status).toBe(200);
      expect(sse.response.headers.get('content-type')).toContain('text/event-stream');
      const hello = await sse.next((e) => e.event === 'hello');
      expect(JSON.parse(hello.data)).toMatchObject({ seq: expect.any(Number), stats: expect.any(Object), edge: expect.any(Object) });
      await s.req('/health/key?secret=zzz');
      const log = await sse.next((e) => e.event === 'log');
      expect(JSON.parse(log.data)).toMatchObject({ kind: 'request', route: '/health/key', status: 200 });
      expect(log.data).not.toContain('zzz');
      expect(log.id).toBe(String(JSON.parse(log.data).seq));
      const stats = await sse.next((e) => e.event === 'stats', 4000);
      expect(JSON.parse(stats.data)).toMatchObject({ stats: { requests: expect.any(Number) } });
    } finally {
      sse.close();
    }
  });

  it('keeps a bounded ring: memory does not grow with traffic', async () => {
    await Promise.all(Array.from({ length: 700 }, () => s.req('/health/key')));
    const body = (await (await s.req(`/live?since=0`, admin())).json()) as LiveBody;
    expect(body.events.length).toBeLessThanOrEqual(500);
    expect(body.seq).toBeGreaterThanOrEqual(700);
  });
});

describe('public traffic', () => {
  const geo = { 'cf-iplatitude': '48.85661', 'cf-iplongitude': '2.35222', 'cf-ipcountry': 'fr' };

  it('polls hits with a location rounded to 0.1° and no IP or path', async () => {
    const before = (await (await fetch(`${s.url}/public/traffic/recent`)).json()) as { seq: number };
    await s.req('/health/key?x=1', { headers: geo });
    const res = await fetch(`${s.url}/public/traffic/recent?since=${before.seq}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { seq: number; hits: Record<string, unknown>[] };
    const hit = body.hits.find((h) => h.country === 'FR');
    expect(hit).toEqual({ seq: expect.any(Number), at: expect.any(String), lat: 48.9, lon: 2.4, country: 'FR' });
    expect(JSON.stringify(body)).not.toMatch(/127\.0\.0\.1|health|::1/);
  });

  it('streams hit events over SSE without auth', async () => {
    const sse = await openSse(`${s.url}/public/traffic`);
    try {
      expect(sse.response.status).toBe(200);
      await fetch(`${s.url}/health`, { headers: { 'x-vercel-ip-latitude': '-33.86785', 'x-vercel-ip-longitude': '151.20732', 'x-vercel-ip-country': 'AU' } });
      const hit = await sse.next((e) => e.event === 'hit' && JSON.parse(e.data).country === 'AU');
      expect(JSON.parse(hit.data)).toMatchObject({ lat: -33.9, lon: 151.2, country: 'AU' });
    } finally {
      sse.close();
    }
  });
});
