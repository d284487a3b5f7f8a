import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';
import { openSse, type SseClient } from '../helpers/sse.js';

// Credentials in the query string: only on routes that opt in (GET /live/stream, for a
// browser's EventSource), never elsewhere, and never recorded (docs/api.md "Live log").
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

const q = (v: string): string => encodeURIComponent(v);

async function expectStream(url: string, headers: Record<string, string> = {}): Promise<void> {
  const sse: SseClient = await openSse(url, headers);
  try {
    expect(sse.response.status).toBe(200);
    expect(sse.response.headers.get('content-type')).toContain('text/event-stream');
    const hello = await sse.next((e) => e.event === 'hello');
    expect(Object.keys(JSON.parse(hello.data) as object).sort()).toEqual(['edge', 'seq', 'stats']);
  } finally {
    sse.close();
  }
}

async function expectRefused(res: Response, status: number, code: string, message: string, details?: Record<string, unknown>): Promise<void> {
  expect(res.status).toBe(status);
  expect(await errorOf(res)).toEqual(details === undefined ? { code, message } : { code, message, details });
}

const MISSING_ADMIN = ['missing_scope', 'this request needs the "auth:admin" scope', { scope: 'auth:admin' }] as const;

describe('credentials in the query string', () => {
  it('GET /live/stream?apikey=<service key> opens the stream', async () => {
    await expectStream(`${s.url}/live/stream?apikey=${q(s.keys.service)}`);
  });

  it('GET /live/stream?access_token=<operator session>&project=<id> opens the stream', async () => {
    await expectStream(`${s.url}/live/stream?access_token=${q(s.operatorToken)}&project=${q(s.projectId)}`);
  });

  it('refuses bad query credentials on /live/stream as it refuses bad headers', async () => {
    await expectRefused(await fetch(`${s.url}/live/stream?apikey=svc_live_${'A'.repeat(32)}`), 401, 'unauthorized', 'invalid API key');
    await expectRefused(
      await fetch(`${s.url}/live/stream?apikey=${q(s.keys.publishable)}`),
      401,
      ...MISSING_ADMIN,
    );
    await expectRefused(
      await fetch(`${s.url}/live/stream?access_token=${q(s.operatorToken)}`),
      401,
      'unauthorized',
      'X-Service-Project (or ?project=) must name an existing project',
    );
    await expectRefused(
      await fetch(`${s.url}/live/stream?access_token=lcd_${'x'.repeat(40)}&project=${q(s.projectId)}`),
      401,
      'unauthorized',
      'missing or invalid operator session',
    );
    // a user access token names no key: the key is still needed
    await expectRefused(
      await fetch(`${s.url}/live/stream?access_token=lca_${'x'.repeat(40)}`),
      401,
      'unauthorized',
      'missing X-Service-Key header (or apikey query parameter)',
    );
  });

  it('a header, when sent, wins over the query string', async () => {
    const res = await fetch(`${s.url}/live/stream?apikey=${q(s.keys.service)}`, { headers: { 'x-service-key': s.keys.publishable } });
    await expectRefused(res, 401, ...MISSING_ADMIN);
  });

  it('is ignored on every other route: ?apikey= on /db/tables is 401 as without a key', async () => {
    await expectRefused(await fetch(`${s.url}/db/tables?apikey=${q(s.keys.service)}`), 401, 'unauthorized', 'missing X-Service-Key header');
    await expectRefused(await fetch(`${s.url}/live?apikey=${q(s.keys.service)}`), 401, 'unauthorized', 'missing X-Service-Key header');
    await expectRefused(
      await fetch(`${s.url}/live?access_token=${q(s.operatorToken)}&project=${q(s.projectId)}`),
      401,
      'unauthorized',
      'missing X-Service-Key header',
    );
    // with a key header, the query's key changes nothing: the header's key is the one used
    const res = await s.req(`/health/key?apikey=${q(s.keys.service)}`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { role: string }).role).toBe('anon');
  });

  it('never records the query string or its credentials', async () => {
    const before = ((await (await s.req('/live', { key: s.keys.service })).json()) as { seq: number }).seq;
    await s.req(`/health/key?apikey=${q(s.keys.service)}&access_token=${q(s.operatorToken)}`);
    await expectStream(`${s.url}/live/stream?apikey=${q(s.keys.service)}`);
    const res = await s.req(`/live?since=${before}`, { key: s.keys.service });
    const body = (await res.json()) as { events: { route: string }[] };
    expect(body.events.map((e) => e.route)).toEqual(['/health/key']);
    const text = JSON.stringify(body);
    for (const secret of [s.keys.service, s.operatorToken, 'apikey', 'access_token']) expect(text).not.toContain(secret);
  });
});
