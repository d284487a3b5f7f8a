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
    // exactly what docs/api.md "CORS" lists
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, POST, PUT, PATCH, DELETE, OPTIONS');
    expect(res.headers.get('access-control-allow-headers')).toBe(
      'authorization, content-type, x-service-key, x-service-project, x-request-id, last-event-id, range, if-none-match, if-modified-since, if-range, ' +
        'tus-resumable, upload-length, upload-offset, upload-metadata, upload-defer-length, upload-concat',
    );
    expect(res.headers.get('access-control-max-age')).toBe('600');
  });

  it('adds allow-origin and exposes the request id on actual responses, errors included', async () => {
    const ok = await open.req('/health/key', { headers: { origin: 'https://anywhere.example' } });
    expect(ok.headers.get('access-control-allow-origin')).toBe('*');
    const expose =
      'x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset, location, etag, content-range, content-length, ' +
      'upload-offset, upload-length, upload-expires, tus-resumable, tus-version, tus-extension, tus-max-size';
    expect(ok.headers.get('access-control-expose-headers')).toBe(expose);
    const denied = await open.req('/health/key', { key: 'svc_live_wrong', headers: { origin: 'https://anywhere.example' } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe('*');
    expect(denied.headers.get('access-control-expose-headers')).toBe(expose);
  });

  it('sends no CORS headers without an Origin', async () => {
    const res = await fetch(`${open.url}/health`);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('with configured origins, allows only those and varies on Origin', async () => {
    const allowed = await fetch(`${strict.url}/health`, { headers: { origin: 'https://app.example' } });
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(allowed.headers.get('vary')).toBe('Origin');
    const other = await fetch(`${strict.url}/health`, { headers: { origin: 'https://evil.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const pre = await fetch(`${strict.url}/health`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
    });
    expect(pre.headers.get('access-control-allow-methods')).toBeNull();
  });
});
