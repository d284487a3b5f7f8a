import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

let open: TestServer;
let strict: TestServer;
beforeAll(async () => {
  [open, strict] = await Promise.all([startTestServer(), startTestServer({ corsOrigins: ['https://app.example'] })]);
});
afterAll(() => Promise.all([open.close(), strict.close()]));

describe('CORS', () => {
  it('answers a preflight for key-authenticated APIs from any origin by default', async () => {
    const res = await fetch(`${open.url}/health/key`, {
      method: 'OPTIONS',
      headers: { origin: 'https://anywhere.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-service-key' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toContain('PATCH');
    expect(res.headers.get('access-control-allow-headers')).toContain('x-service-key');
    expect(res.headers.get('access-control-allow-headers')).toContain('authorization');
  });

  it('adds allow-origin and exposes the request id on actual responses, errors included', async () => {
    const ok = await open.req('/health/key', { headers: { origin: 'https://anywhere.example' } });
    expect(ok.headers.get('access-control-allow-origin')).toBe('*');
    expect(ok.headers.get('access-control-expose-headers')).toContain('x-request-id');
    const denied = await open.req('/health/key', { key: 'svc_live_wrong', headers: { origin: 'https://anywhere.example' } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('sends no CORS headers without an Origin', async () => {
    const res = await fetch(`${open.url}/health`);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('with configured origins, allows only those and varies on Origin', async () => {
    const allowed = await fetch(`${strict.url}/health`, { headers: { origin: 'https://app.example' } });
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(allowed.headers.get('vary')).toContain('Origin');
    const other = await fetch(`${strict.url}/health`, { headers: { origin: 'https://evil.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const pre = await fetch(`${strict.url}/health`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
    });
    expect(pre.headers.get('access-control-allow-methods')).toBeNull();
  });
});
