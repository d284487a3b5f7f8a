import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// Object reads (docs/api.md "Storage", "Reading an object"): stored Content-Type, strong ETag,
// Last-Modified, ranges (206, 416, several ranges → 200 whole), conditional requests (304), and the
// headers that keep an object from acting as a page (nosniff, CSP sandbox, attachment).
let s: TestServer;
let id: string;
const BODY = 'hello world';
const ETAG = `"${createHash('sha256').update(BODY).digest('hex')}"`;

async function put(key: string, body: string, type: string) {
  const res = await s.req(`/storage/objects/files/${key}`, { method: 'PUT', key: s.keys.service, headers: { 'content-type': type }, body });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string };
}

beforeAll(async () => {
  s = await startTestServer();
  const res = await s.req('/storage/buckets', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'files', public: true }) });
  expect(res.status).toBe(201);
  id = (await put('hello.txt', BODY, 'text/plain; charset=utf-8')).id;
});
afterAll(() => s.close());

const SAFETY = { 'x-content-type-options': 'nosniff', 'content-security-policy': 'sandbox' };
function expectSafety(res: Response): void {
  for (const [k, v] of Object.entries(SAFETY)) expect(res.headers.get(k)).toBe(v);
}

describe('a read', () => {
  it('sends the stored type, a strong ETag, Last-Modified, Accept-Ranges and the safety headers', async () => {
    for (const path of [`/storage/objects/files/${id}`, `/${id}`]) {
      const res = await fetch(s.url + path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(res.headers.get('etag')).toBe(ETAG);
      expect(res.headers.get('accept-ranges')).toBe('bytes');
      expect(res.headers.get('content-length')).toBe('11');
      expect(res.headers.get('cache-control')).toBe('public, max-age=60');
      expect(new Date(res.headers.get('last-modified')!).getTime()).toBeGreaterThan(Date.parse('2020-01-01'));
      expect(res.headers.get('content-disposition')).toBeNull();
      expectSafety(res);
      expect(await res.text()).toBe(BODY);
    }
  });

  it('one range is 206 with Content-Range; a suffix range too', async () => {
    const res = await fetch(`${s.url}/${id}`, { headers: { range: 'bytes=0-4' } });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe('bytes 0-4/11');
    expect(res.headers.get('content-length')).toBe('5');
    expectSafety(res);
    expect(await res.text()).toBe('hello');
    const tail = await fetch(`${s.url}/storage/objects/files/${id}`, { headers: { range: 'bytes=-5' } });
    expect(tail.status).toBe(206);
    expect(tail.headers.get('content-range')).toBe('bytes 6-10/11');
    expect(await tail.text()).toBe('world');
    const open = await s.req('/storage/objects/files/hello.txt', { headers: { range: 'bytes=6-' } });
    expect(open.status).toBe(206);
    expect(await open.text()).toBe('world');
  });

  it('If-Range: the current ETag or Last-Modified keeps the range (206); another validator sends the whole body (200)', async () => {
    const first = await fetch(`${s.url}/${id}`);
    const lm = first.headers.get('last-modified')!;
    await first.arrayBuffer();
    for (const v of [ETAG, lm]) {
      const res = await fetch(`${s.url}/${id}`, { headers: { range: 'bytes=0-4', 'if-range': v } });
      expect(res.status).toBe(206);
      expect(await res.text()).toBe('hello');
    }
    for (const v of ['"stale"', `W/${ETAG}`, 'Thu, 01 Jan 2015 00:00:00 GMT']) {
      const res = await fetch(`${s.url}/${id}`, { headers: { range: 'bytes=0-4', 'if-range': v } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-range')).toBeNull();
      expect(res.headers.get('content-length')).toBe('11');
      expect(await res.text()).toBe(BODY);
    }
  });

  it('an unsatisfiable range is 416 with Content-Range: bytes */size', async () => {
    const res = await fetch(`${s.url}/${id}`, { headers: { range: 'bytes=11-20' } });
    expect(res.status).toBe(416);
    expect(res.headers.get('content-range')).toBe('bytes */11');
    expectSafety(res);
    expect((await errorOf(res)).code).toBe('range_not_satisfiable');
  });

  it('several ranges are answered 200 with the whole body', async () => {
    const res = await fetch(`${s.url}/${id}`, { headers: { range: 'bytes=0-1,4-5' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-range')).toBeNull();
    expect(await res.text()).toBe(BODY);
  });

  it('If-None-Match with the ETag (or W/ of it, or *, or in a list) is 304 with the validators and safety headers', async () => {
    for (const inm of [ETAG, `W/${ETAG}`, '*', `"nope", ${ETAG}`]) {
      const res = await fetch(`${s.url}/${id}`, { headers: { 'if-none-match': inm } });
      expect(res.status).toBe(304);
      expect(res.headers.get('etag')).toBe(ETAG);
      expect(res.headers.get('last-modified')).not.toBeNull();
      expectSafety(res);
      expect(await res.text()).toBe('');
    }
    const other = await fetch(`${s.url}/${id}`, { headers: { 'if-none-match': '"other"' } });
    expect(other.status).toBe(200);
    expect(await other.text()).toBe(BODY);
  });

  it('If-Modified-Since at or after Last-Modified is 304, before it 200; If-None-Match wins over it', async () => {
    const first = await fetch(`${s.url}/${id}`);
    const lm = first.headers.get('last-modified')!;
    await first.arrayBuffer();
    expect((await fetch(`${s.url}/${id}`, { headers: { 'if-modified-since': lm } })).status).toBe(304);
    const before = new Date(Date.parse(lm) - 60_000).toUTCString();
    const res = await fetch(`${s.url}/${id}`, { headers: { 'if-modified-since': before } });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const both = await fetch(`${s.url}/${id}`, { headers: { 'if-modified-since': lm, 'if-none-match': '"other"' } });
    expect(both.status).toBe(200);
    await both.arrayBuffer();
    expect((await fetch(`${s.url}/${id}`, { headers: { 'if-modified-since': 'garbage' } })).status).toBe(200);
  });

  it('a read with image parameters of an object that is no image sends the stored bytes', async () => {
    const res = await fetch(`${s.url}/${id}?w=100&h=50`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.headers.get('etag')).toBe(ETAG);
    expectSafety(res);
    expect(await res.text()).toBe(BODY);
  });

  it('HEAD sends the headers of GET without a body, ranges included', async () => {
    const res = await fetch(`${s.url}/${id}`, { method: 'HEAD', headers: { range: 'bytes=0-4' } });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-length')).toBe('5');
    expect(res.headers.get('etag')).toBe(ETAG);
    expect(await res.text()).toBe('');
  });

  it('a private object revalidates every time (Cache-Control: private, no-cache)', async () => {
    const mk = await s.req('/storage/buckets', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'closed' }) });
    expect(mk.status).toBe(201);
    expect((await s.req('/storage/objects/closed/a', { method: 'PUT', key: s.keys.service, body: 'x' })).status).toBe(201);
    const res = await s.req('/storage/objects/closed/a', { key: s.keys.service });
    expect(res.headers.get('cache-control')).toBe('private, no-cache');
    expectSafety(res);
  });

  it('an overwrite changes ETag and body under the same short id', async () => {
    const r = await put('changing.txt', 'one', 'text/plain');
    const a = await fetch(`${s.url}/${r.id}`);
    const etagA = a.headers.get('etag');
    expect(await a.text()).toBe('one');
    const res = await s.req('/storage/objects/files/changing.txt', { method: 'PUT', key: s.keys.service, headers: { 'content-type': 'text/plain' }, body: 'two' });
    expect(res.status).toBe(200);
    const b = await fetch(`${s.url}/${r.id}`, { headers: { 'if-none-match': etagA! } });
    expect(b.status).toBe(200);
    expect(await b.text()).toBe('two');
  });
});

describe('types a browser would run', () => {
  it('HTML, SVG, XML and JavaScript are served as attachment; images and text inline', async () => {
    const cases: [string, string, boolean][] = [
      ['page.html', 'text/html', true],
      ['page2.htm', 'text/html; charset=utf-8', true],
      ['x.xhtml', 'application/xhtml+xml', true],
      ['pic.svg', 'image/svg+xml', true],
      ['data.xml', 'application/xml', true],
      ['data2.xml', 'text/xml', true],
      ['app.js', 'text/javascript', true],
      ['app2.js', 'application/javascript', true],
      ['pic.png', 'image/png', false],
      ['note.txt', 'text/plain', false],
    ];
    for (const [key, type, att] of cases) {
      const { id: sid } = await put(key, '<script>alert(1)</script>', type);
      const res = await fetch(`${s.url}/${sid}`);
      expect(res.headers.get('content-type')).toBe(type);
      expect(res.headers.get('content-disposition')).toBe(att ? `attachment; filename="${key}"; filename*=UTF-8''${key}` : null);
      expectSafety(res);
      await res.arrayBuffer();
    }
  });
});
