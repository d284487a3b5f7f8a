import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeImage } from '../helpers/images.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// CORS for storage reads and TUS from a browser on another origin, TUS discovery on OPTIONS,
// and Vary merged with Origin (docs/api.md "CORS", "Multipart and TUS").
let open: TestServer;
let strict: TestServer;
const APP = 'https://app.example';
const ALLOW_HEADERS =
  'authorization, content-type, x-service-key, x-service-project, x-request-id, last-event-id, range, if-none-match, if-modified-since, if-range, ' +
  'tus-resumable, upload-length, upload-offset, upload-metadata, upload-defer-length, upload-concat';
const EXPOSE =
  'x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset, location, etag, content-range, content-length, ' +
  'upload-offset, upload-length, upload-expires, tus-resumable, tus-version, tus-extension, tus-max-size';

async function bucket(s: TestServer): Promise<void> {
  const res = await s.req('/storage/buckets', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'pics', public: true }) });
  expect(res.status).toBe(201);
}
const b64 = (v: string): string => Buffer.from(v).toString('base64');

beforeAll(async () => {
  [open, strict] = await Promise.all([startTestServer(), startTestServer({ corsOrigins: [APP] })]);
  await Promise.all([bucket(open), bucket(strict)]);
});
afterAll(() => Promise.all([open.close(), strict.close()]));

describe('CORS for storage and TUS', () => {
  it('a preflight allows the conditional-read and TUS request headers', async () => {
    const res = await fetch(`${open.url}/storage/objects/pics/a.txt`, {
      method: 'OPTIONS',
      headers: { origin: APP, 'access-control-request-method': 'GET', 'access-control-request-headers': 'if-none-match, if-modified-since, if-range, range' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-headers')).toBe(ALLOW_HEADERS);
    expect(res.headers.get('tus-resumable')).toBeNull();
  });

  it('plain OPTIONS on the TUS routes is TUS discovery (no key needed), with or without an Origin', async () => {
    for (const path of ['/storage/tus', '/storage/tus/abc']) {
      const res = await fetch(`${open.url}${path}`, { method: 'OPTIONS' });
      expect(res.status).toBe(204);
      expect(res.headers.get('tus-resumable')).toBe('1.0.0');
      expect(res.headers.get('tus-version')).toBe('1.0.0');
      expect(res.headers.get('tus-extension')).toBe('creation,termination,expiration');
      expect(res.headers.get('tus-max-size')).toMatch(/^[1-9]\d*$/);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('access-control-allow-methods')).toBeNull();
    }
    const withOrigin = await fetch(`${strict.url}/storage/tus`, { method: 'OPTIONS', headers: { origin: APP } });
    expect(withOrigin.status).toBe(204);
    expect(withOrigin.headers.get('tus-version')).toBe('1.0.0');
    expect(withOrigin.headers.get('access-control-allow-origin')).toBe(APP);
    expect(withOrigin.headers.get('access-control-expose-headers')).toBe(EXPOSE);
    expect(withOrigin.headers.get('access-control-allow-methods')).toBeNull();
  });

  it("a browser's preflight on a TUS route is a real preflight and carries the TUS discovery too", async () => {
    const res = await fetch(`${strict.url}/storage/tus`, {
      method: 'OPTIONS',
      headers: { origin: APP, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, tus-resumable, upload-length, upload-metadata' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(APP);
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, POST, PUT, PATCH, DELETE, OPTIONS');
    expect(res.headers.get('access-control-allow-headers')).toBe(ALLOW_HEADERS);
    expect(res.headers.get('access-control-max-age')).toBe('600');
    expect(res.headers.get('vary')).toBe('Origin');
    expect(res.headers.get('tus-resumable')).toBe('1.0.0');
    // an origin not listed gets no allow headers, TUS discovery still
    const other = await fetch(`${strict.url}/storage/tus`, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
    expect(other.status).toBe(204);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(other.headers.get('access-control-allow-methods')).toBeNull();
    expect(other.headers.get('tus-resumable')).toBe('1.0.0');
  });

  it('a cross-origin TUS upload can read Location and Upload-Offset (exposed)', async () => {
    const tus = { origin: APP, 'tus-resumable': '1.0.0' };
    const created = await strict.req('/storage/tus', { method: 'POST', key: strict.keys.service, headers: { ...tus, 'upload-length': '5', 'upload-metadata': `bucket ${b64('pics')},key ${b64('t.txt')}` } });
    expect(created.status).toBe(201);
    expect(created.headers.get('access-control-allow-origin')).toBe(APP);
    expect(created.headers.get('access-control-expose-headers')).toBe(EXPOSE);
    const location = created.headers.get('location')!;
    expect(location).toMatch(/\/storage\/tus\/[A-Za-z0-9]{24}$/);
    const patched = await fetch(location, { method: 'PATCH', headers: { ...tus, 'x-service-key': strict.keys.service, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: 'hello' });
    expect(patched.status).toBe(204);
    expect(patched.headers.get('upload-offset')).toBe('5');
    expect(patched.headers.get('access-control-expose-headers')).toBe(EXPOSE);
    const read = await strict.req('/storage/objects/pics/t.txt', { key: strict.keys.service, headers: { origin: APP } });
    expect(await read.text()).toBe('hello');
  });

  it("merges Vary: an image's Vary: Accept and the CORS Vary: Origin both stay", async () => {
    const put = await strict.req('/storage/objects/pics/p.png', { method: 'PUT', key: strict.keys.service, headers: { 'content-type': 'image/png' }, body: await makeImage(40, 20, 'png') });
    expect(put.status).toBe(201);
    const id = ((await put.json()) as { id: string }).id;
    const auto = await fetch(`${strict.url}/${id}?w=10&format=auto`, { headers: { origin: APP, accept: 'image/webp' } });
    expect(auto.status).toBe(200);
    expect(auto.headers.get('content-type')).toBe('image/webp');
    expect(auto.headers.get('vary')).toBe('Accept, Origin');
    await auto.arrayBuffer();
    // without an Origin: only Accept; a fixed format: only Origin
    const noOrigin = await fetch(`${strict.url}/${id}?w=10&format=auto`, { headers: { accept: 'image/webp' } });
    expect(noOrigin.headers.get('vary')).toBe('Accept');
    await noOrigin.arrayBuffer();
    const fixed = await fetch(`${strict.url}/${id}?w=10&format=png`, { headers: { origin: APP } });
    expect(fixed.headers.get('vary')).toBe('Origin');
    await fixed.arrayBuffer();
  });
});
