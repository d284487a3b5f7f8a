import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// A route's rate limit is counted by the edge after the key is checked and the JSON body
// parsed, before the handler (docs/api.md "Rate limits").
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ rateLimit: { enabled: true, windowS: 300, login: 2, register: 30, refresh: 30, anonymous: 30, perEmail: 10 } });
});
afterAll(() => s.close());

const login = (body: string, key?: string | null): Promise<Response> =>
  s.req('/auth/login', { method: 'POST', key, headers: { 'content-type': 'application/json' }, body });

describe('route rate limits', () => {
  it('do not count a request refused for its key or its body; count every one that reaches the handler', async () => {
    const creds = JSON.stringify({ email: 'nobody@example.com', password: 'wrong password' });
    for (let i = 0; i < 3; i++) {
      const noKey = await login(creds, null);
      expect(noKey.status).toBe(401);
      expect(noKey.headers.get('ratelimit-limit')).toBeNull();
      const badJson = await login('{"email":');
      expect(badJson.status).toBe(400);
      expect((await errorOf(badJson)).code).toBe('invalid_body');
      expect(badJson.headers.get('ratelimit-limit')).toBeNull();
    }
    const first = await login(creds);
    expect(first.status).toBe(401);
    expect(await errorOf(first)).toEqual({ code: 'invalid_credentials', message: 'invalid e-mail or password' });
    expect([first.headers.get('ratelimit-limit'), first.headers.get('ratelimit-remaining')]).toEqual(['2', '1']);
    // a body that is JSON but not valid credentials reaches the handler, and counts
    const invalid = await login(JSON.stringify({ email: 42 }));
    expect(invalid.status).toBe(400);
    expect((await errorOf(invalid)).code).toBe('invalid_field');
    expect(invalid.headers.get('ratelimit-remaining')).toBe('0');
    const over = await login(creds);
    expect(over.status).toBe(429);
    expect((await errorOf(over)).code).toBe('rate_limited');
    expect(over.headers.get('retry-after')).toMatch(/^[1-9]\d{0,2}$/);
    expect(over.headers.get('retry-after')).toBe(over.headers.get('ratelimit-reset'));
  });
});
