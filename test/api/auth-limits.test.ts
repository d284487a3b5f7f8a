import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// Rate limits, and expired tokens (a server whose access tokens are born expired).
let s: TestServer;
let expired: TestServer;
beforeAll(async () => {
  s = await startTestServer({ rateLimit: { enabled: true, windowS: 300, login: 3, register: 3, refresh: 3, anonymous: 2, perEmail: 2 } });
  expired = await startTestServer({ rateLimit: { enabled: false }, authAccessTtlS: -60 });
});
afterAll(async () => {
  await s.close();
  await expired.close();
});

const PASSWORD = 'correct horse battery';
const post = (t: TestServer, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> =>
  t.req(path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

function expectLimited(res: Response, limit: number): void {
  expect(res.status).toBe(429);
  // the seconds left of the 300 s window: a whole number from 1 to 300, the same in both headers
  const retry = res.headers.get('retry-after')!;
  expect(retry).toMatch(/^[1-9]\d{0,2}$/);
  expect(Number(retry)).toBeLessThanOrEqual(300);
  expect(res.headers.get('ratelimit-reset')).toBe(retry);
  expect(res.headers.get('ratelimit-limit')).toBe(String(limit));
  expect(res.headers.get('ratelimit-remaining')).toBe('0');
}

describe('rate limits', () => {
  it('login per e-mail: 429 rate_limited with Retry-After and RateLimit-* headers', async () => {
    const first = await post(s, '/auth/login', { email: 'victim@example.com', password: 'wrong password' });
    expect(first.status).toBe(401);
    expect(first.headers.get('ratelimit-limit')).toBe('2');
    expect(first.headers.get('ratelimit-remaining')).toBe('1');
    expect((await post(s, '/auth/login', { email: 'VICTIM@example.com', password: 'wrong password' })).status).toBe(401);
    const third = await post(s, '/auth/login', { email: 'victim@example.com', password: 'wrong password' });
    expectLimited(third, 2);
    expect((await errorOf(third)).code).toBe('rate_limited');
  });

  it('login per address counts every e-mail', async () => {
    // note: the previous test used 3 of this address's 3 attempts.
    const res = await post(s, '/auth/login', { email: 'someone-else@example.com', password: 'wrong password' });
    expectLimited(res, 3);
  });

  it('anonymous sign-ins per address', async () => {
    expect((await s.req('/auth/anonymous', { method: 'POST' })).status).toBe(200);
    const second = await s.req('/auth/anonymous', { method: 'POST' });
    expect(second.status).toBe(200);
    expect(second.headers.get('ratelimit-remaining')).toBe('0');
    expectLimited(await s.req('/auth/anonymous', { method: 'POST' }), 2);
  });

  it('register and refresh per address', async () => {
    const reg = await post(s, '/auth/register', { email: 'r1@example.com', password: PASSWORD });
    expect(reg.status).toBe(200);
    const { refresh_token } = (await reg.json()) as { refresh_token: string };
    expect((await post(s, '/auth/register', { email: 'r2@example.com', password: PASSWORD })).status).toBe(200);
    expect((await post(s, '/auth/register', { email: 'r3@example.com', password: PASSWORD })).status).toBe(200);
    expectLimited(await post(s, '/auth/register', { email: 'r4@example.com', password: PASSWORD }), 3);
    let token = refresh_token;
    for (let i = 0; i < 3; i++) {
      const r = await post(s, '/auth/refresh', { refresh_token: token });
      expect(r.status).toBe(200);
      token = ((await r.json()) as { refresh_token: string }).refresh_token;
    }
    expectLimited(await post(s, '/auth/refresh', { refresh_token: token }), 3);
  });

  it('a limited address does not affect another project', async () => {
    const other = s.createProject('other');
    const res = await s.req('/auth/anonymous', { method: 'POST', key: other.publishable });
    expect(res.status).toBe(200);
  });
});

describe('expired access token', () => {
  it('is 401 token_expired, and refresh still works', async () => {
    const reg = await post(expired, '/auth/register', { email: 'exp@example.com', password: PASSWORD });
    expect(reg.status).toBe(200);
    const sess = (await reg.json()) as { access_token: string; refresh_token: string };
    const me = await expired.req('/auth/me', { headers: { authorization: `Bearer ${sess.access_token}` } });
    expect(me.status).toBe(401);
    expect((await errorOf(me)).code).toBe('token_expired');
    const refreshed = await post(expired, '/auth/refresh', { refresh_token: sess.refresh_token });
    expect(refreshed.status).toBe(200);
  });

  it('a tampered expired token is unauthorized, not token_expired', async () => {
    const reg = await post(expired, '/auth/register', { email: 'exp2@example.com', password: PASSWORD });
    const { access_token } = (await reg.json()) as { access_token: string };
    const tampered = access_token.slice(0, -3) + (access_token.endsWith('AAA') ? 'BBB' : 'AAA');
    const me = await expired.req('/auth/me', { headers: { authorization: `Bearer ${tampered}` } });
    expect(me.status).toBe(401);
    expect((await errorOf(me)).code).toBe('unauthorized');
  });
});

describe('rate limits behind a trusted reverse proxy', () => {
  it('count per forwarded client when the peer is trusted, and ignore the header otherwise', async () => {
    const limits = { enabled: true, windowS: 300, login: 3, register: 3, refresh: 3, anonymous: 1, perEmail: 2 };
    const proxied = await startTestServer({ rateLimit: limits, trustedProxies: ['127.0.0.1', '::1'] });
    const direct = await startTestServer({ rateLimit: limits });
    try {
      const anon = (t: TestServer, client: string) => t.req('/auth/anonymous', { method: 'POST', headers: { 'x-forwarded-for': client } });
      // Trusted peer (the test runs on loopback): each forwarded client has its own budget.
      expect((await anon(proxied, '203.0.113.1')).status).toBe(200);
      expect((await anon(proxied, '203.0.113.2')).status).toBe(200);
      expectLimited(await anon(proxied, '203.0.113.1'), 1);
      // A client-chosen address left of what the proxy appended changes nothing.
      expectLimited(await anon(proxied, '198.51.100.9, 203.0.113.1'), 1);
      // No trusted proxy: the header is ignored and all share the socket's address.
      expect((await anon(direct, '203.0.113.1')).status).toBe(200);
      expectLimited(await anon(direct, '203.0.113.2'), 1);
    } finally {
      await proxied.close();
      await direct.close();
    }
  });
});
