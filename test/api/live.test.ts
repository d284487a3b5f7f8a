import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';
import { openSse } from '../helpers/sse.js';

/** The version the server reports: package.json's (read as a user would, not from src/). */
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

const admin = () => ({ key: s.keys.service });
type LiveBody = { seq: number; events: Record<string, unknown>[]; stats: Record<string, unknown>; edge: Record<string, unknown> };

describe('live log', () => {
  it('records requests with the templated route, never the query string or credentials', async () => {
    // note: a cookie, not an Authorization header: a malformed one is refused before a project is known.
    const rows = await s.req('/db/tables/things/rows?filter=x.eq.1', { headers: { cookie: 'session=c2VjcmV0' } });
    expect(rows.status).toBe(404);
    await s.req('/health/key?token=supersecret123&password=hunter2');
    // no project is named by a path no route matches or by a failed key: these are in no project's log
    expect((await s.req('/nope/x?q=private', {})).status).toBe(404);
    expect((await s.req('/health/key', { key: 'svc_live_' + 'A'.repeat(32) })).status).toBe(401);
    const res = await s.req('/live?since=0', admin());
    expect(res.status).toBe(200);
    const body = (await res.json()) as LiveBody;
    expect(Object.keys(body).sort()).toEqual(['edge', 'events', 'seq', 'stats']);
    expect(body.seq).toBe(2);
    const [a, b] = body.events as { at: string; duration_ms: number }[];
    expect(body.events).toEqual([
      { seq: 1, at: a!.at, kind: 'request', method: 'GET', route: '/db/tables/:t/rows', status: 404, duration_ms: a!.duration_ms },
      { seq: 2, at: b!.at, kind: 'request', method: 'GET', route: '/health/key', status: 200, duration_ms: b!.duration_ms },
    ]);
    for (const e of [a!, b!]) {
      expect(new Date(e.at).toISOString()).toBe(e.at);
      expect(typeof e.duration_ms).toBe('number');
    }
    const text = JSON.stringify(body);
    for (const secret of ['supersecret123', 'hunter2', 'c2VjcmV0', 'private', 'x.eq.1', s.keys.publishable, s.keys.service]) {
      expect(text).not.toContain(secret);
    }
    expect(body.stats).toMatchObject({ requests: 2, errors: 0, client_errors: 1, changes: 0 });
    expect(Object.keys(body.stats).sort()).toEqual(['changes', 'client_errors', 'errors', 'p50_ms', 'p95_ms', 'requests', 'rps']);
    expect(body.edge).toMatchObject({ version: VERSION, backend: s.backend, open_projects: 1 });
    expect(Object.keys(body.edge).sort()).toEqual(['backend', 'open_projects', 'rss_mb', 'uptime_s', 'version']);
  });

  it('returns only events after `since`', async () => {
    const first = (await (await s.req('/live?since=0', admin())).json()) as LiveBody;
    await s.req('/health/key');
    const next = (await (await s.req(`/live?since=${first.seq}`, admin())).json()) as LiveBody;
    expect(next.events.map((e) => [e.seq, e.route, e.status])).toEqual([[first.seq + 1, '/health/key', 200]]);
    expect(next.seq).toBe(first.seq + 1);
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
    const before = ((await (await s.req('/live', admin())).json()) as LiveBody).seq;
    await Promise.all(Array.from({ length: 700 }, () => s.req('/health/key')));
    // the ring holds the newest 500: the 201st to the 700th request
    const body = (await (await s.req(`/live?since=${before + 200}`, admin())).json()) as LiveBody;
    expect(body.seq).toBe(before + 700);
    expect(body.events.map((e) => e.seq)).toEqual(Array.from({ length: 500 }, (_, i) => before + 201 + i));
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
