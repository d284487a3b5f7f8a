import { createHash, randomBytes } from 'node:crypto';
import * as tus from 'tus-js-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// Multipart uploads and TUS 1.0 (docs/api.md "Multipart and TUS").
let s: TestServer;
const MiB = 1024 * 1024;
const JSONH = { 'content-type': 'application/json' };
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

async function start(body: Record<string, unknown>, key = s.keys.publishable): Promise<Response> {
  return s.req('/storage/multipart', { method: 'POST', key, headers: JSONH, body: JSON.stringify(body) });
}
async function part(id: string, n: number | string, body: Uint8Array): Promise<Response> {
  return s.req(`/storage/multipart/${id}/${n}`, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body });
}

beforeAll(async () => {
  s = await startTestServer();
  for (const b of [{ name: 'uploads', public: true }, { name: 'small', public: false, file_size_limit: 6 * MiB }]) {
    const res = await s.req('/storage/buckets', { method: 'POST', key: s.keys.service, headers: JSONH, body: JSON.stringify(b) });
    expect(res.status).toBe(201);
  }
});
afterAll(() => s.close());

describe('multipart', () => {
  it('start, parts in any order, list, complete: the object is the parts in order', async () => {
    const res = await start({ bucket: 'uploads', key: 'big/file.bin', content_type: 'application/x-test', part_size: 5 * MiB });
    expect(res.status).toBe(201);
    const up = (await res.json()) as { upload_id: string; part_size: number; expires_at: string };
    expect(up.upload_id).toMatch(/^[0-9A-Za-z]{24}$/);
    expect(up.part_size).toBe(5 * MiB);
    expect(Date.parse(up.expires_at) - Date.now()).toBeGreaterThan(23 * 3600_000);
    const p1 = randomBytes(5 * MiB);
    const p2 = randomBytes(5 * MiB);
    const p3 = randomBytes(1000);
    let r = await part(up.upload_id, 3, p3);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ part: 3, size: 1000, etag: `"${sha(p3)}"` });
    expect((await part(up.upload_id, 1, p1)).status).toBe(200);
    r = await s.req(`/storage/multipart/${up.upload_id}/complete`, { method: 'POST' });
    expect(r.status).toBe(400);
    expect((await errorOf(r)).message).toBe('part 2 is missing');
    expect((await part(up.upload_id, 2, p2)).status).toBe(200);
    r = await s.req(`/storage/multipart/${up.upload_id}`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({
      upload_id: up.upload_id,
      bucket: 'uploads',
      key: 'big/file.bin',
      content_type: 'application/x-test',
      part_size: 5 * MiB,
      expires_at: up.expires_at,
      parts: [
        { part: 1, size: 5 * MiB, etag: `"${sha(p1)}"` },
        { part: 2, size: 5 * MiB, etag: `"${sha(p2)}"` },
        { part: 3, size: 1000, etag: `"${sha(p3)}"` },
      ],
    });
    r = await s.req(`/storage/multipart/${up.upload_id}/complete`, { method: 'POST' });
    expect(r.status).toBe(201);
    const whole = Buffer.concat([p1, p2, p3]);
    const rec = (await r.json()) as Record<string, unknown>;
    expect(rec).toMatchObject({ bucket: 'uploads', key: 'big/file.bin', size: whole.length, content_type: 'application/x-test', etag: `"${sha(whole)}"` });
    const got = await fetch(`${s.url}/${String(rec.id)}`);
    expect(got.status).toBe(200);
    expect(sha(Buffer.from(await got.arrayBuffer()))).toBe(sha(whole));
    // the upload is gone once completed
    expect((await s.req(`/storage/multipart/${up.upload_id}`)).status).toBe(404);
  });

  it('refuses a bad part size, part number, oversize part, a short middle part and an unknown bucket', async () => {
    for (const [body, field] of [
      [{ bucket: 'uploads', key: 'a', part_size: 1024 }, 'part_size'],
      [{ bucket: 'uploads', key: 'a', part_size: 65 * MiB }, 'part_size'],
      [{ bucket: 'uploads' }, 'key'],
    ] as const) {
      const res = await start(body);
      expect(res.status).toBe(400);
      expect((await errorOf(res)).details).toEqual({ field });
    }
    expect((await start({ bucket: 'nope', key: 'a' })).status).toBe(404);
    expect((await start({ bucket: 'uploads', key: '../x' })).status).toBe(400);
    const up = (await (await start({ bucket: 'uploads', key: 'x.bin', part_size: 5 * MiB })).json()) as { upload_id: string };
    for (const n of ['0', '10001', 'x', '01']) expect((await part(up.upload_id, n, Buffer.from('a'))).status, n).toBe(400);
    const over = await part(up.upload_id, 1, Buffer.alloc(5 * MiB + 1));
    expect(over.status).toBe(413);
    expect((await errorOf(over)).code).toBe('payload_too_large');
    expect((await part(up.upload_id, 1, Buffer.alloc(100))).status).toBe(200);
    expect((await part(up.upload_id, 2, Buffer.alloc(100))).status).toBe(200);
    const res = await s.req(`/storage/multipart/${up.upload_id}/complete`, { method: 'POST' });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toContain('part 1 has 100 bytes');
  });

  it('judges the bucket limit per part: past file_size_limit is 413', async () => {
    const up = (await (await start({ bucket: 'small', key: 'x.bin', part_size: 5 * MiB })).json()) as { upload_id: string };
    expect((await part(up.upload_id, 1, Buffer.alloc(5 * MiB))).status).toBe(200);
    const res = await part(up.upload_id, 2, Buffer.alloc(2 * MiB));
    expect(res.status).toBe(413);
  });

  it('abort removes the upload; an unknown id is 404; a missing scope key is 401', async () => {
    const up = (await (await start({ bucket: 'uploads', key: 'gone.bin' })).json()) as { upload_id: string; part_size: number };
    expect(up.part_size).toBe(8 * MiB);
    expect((await part(up.upload_id, 1, Buffer.from('abc'))).status).toBe(200);
    let res = await s.req(`/storage/multipart/${up.upload_id}`, { method: 'DELETE' });
    expect(res.status).toBe(204);
    expect((await s.req(`/storage/multipart/${up.upload_id}`)).status).toBe(404);
    expect((await part(up.upload_id, 2, Buffer.from('abc'))).status).toBe(404);
    res = await s.req('/storage/multipart/AAAAAAAAAAAAAAAAAAAAAAAA/complete', { method: 'POST' });
    expect(res.status).toBe(404);
    expect((await s.req('/storage/multipart', { method: 'POST', key: null, headers: JSONH, body: '{}' })).status).toBe(401);
    expect((await s.req('/storage/objects/uploads/gone.bin')).status).toBe(404);
  });
});

describe('expiry', () => {
  it('an upload older than the expiry is 404 for reads, parts and completion', async () => {
    const t = await startTestServer({ uploadExpiryS: 1 });
    try {
      await t.req('/storage/buckets', { method: 'POST', key: t.keys.service, headers: JSONH, body: JSON.stringify({ name: 'b1', public: false }) });
      const res = await t.req('/storage/multipart', { method: 'POST', headers: JSONH, body: JSON.stringify({ bucket: 'b1', key: 'k' }) });
      const up = (await res.json()) as { upload_id: string };
      expect((await t.req(`/storage/multipart/${up.upload_id}/1`, { method: 'PUT', body: 'abc' })).status).toBe(200);
      await new Promise((r) => setTimeout(r, 1100));
      expect((await t.req(`/storage/multipart/${up.upload_id}`)).status).toBe(404);
      expect((await t.req(`/storage/multipart/${up.upload_id}/complete`, { method: 'POST' })).status).toBe(404);
      expect((await t.req(`/storage/multipart/${up.upload_id}/2`, { method: 'PUT', body: 'abc' })).status).toBe(404);
    } finally {
      await t.close();
    }
  });
});

describe('TUS 1.0', () => {
  const b64 = (v: string): string => Buffer.from(v).toString('base64');

  it('tus-js-client uploads in chunks; the object is readable', async () => {
    const data = randomBytes(300_000);
    const url = await new Promise<string>((resolve, reject) => {
      const up = new tus.Upload(data, {
        endpoint: `${s.url}/storage/tus`,
        headers: { 'X-Service-Key': s.keys.publishable },
        metadata: { bucket: 'uploads', key: 'tus/one.bin', contentType: 'application/x-tus' },
        chunkSize: 100_000,
        retryDelays: [],
        onError: reject,
        onSuccess: () => resolve(up.url!),
      });
      up.start();
    });
    expect(url).toMatch(new RegExp(`^${s.url}/storage/tus/[0-9A-Za-z]{24}$`));
    const res = await s.req('/storage/objects/uploads/tus/one.bin');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-tus');
    expect(sha(Buffer.from(await res.arrayBuffer()))).toBe(sha(data));
  });

  it('creation, HEAD, PATCH at the offset, a wrong offset 409, termination', async () => {
    const H = { 'tus-resumable': '1.0.0' };
    let res = await s.req('/storage/tus', {
      method: 'POST',
      headers: { ...H, 'upload-length': '10', 'upload-metadata': `bucket ${b64('uploads')},key ${b64('tus/two.txt')},content_type ${b64('text/plain')}` },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('tus-resumable')).toBe('1.0.0');
    expect(res.headers.get('upload-expires')).toMatch(/GMT$/);
    const loc = res.headers.get('location')!;
    const path = new URL(loc).pathname;
    res = await s.req(path, { method: 'HEAD', headers: H });
    expect([res.status, res.headers.get('upload-offset'), res.headers.get('upload-length'), res.headers.get('cache-control')]).toEqual([200, '0', '10', 'no-store']);
    const patch = (offset: number, body: string, ct = 'application/offset+octet-stream') =>
      s.req(path, { method: 'PATCH', headers: { ...H, 'content-type': ct, 'upload-offset': String(offset) }, body });
    res = await patch(0, 'hello');
    expect([res.status, res.headers.get('upload-offset')]).toEqual([204, '5']);
    res = await patch(0, 'hello');
    expect(res.status).toBe(409);
    expect(res.headers.get('tus-resumable')).toBe('1.0.0');
    expect((await patch(5, 'world', 'text/plain')).status).toBe(415);
    expect((await patch(5, 'world!!')).status).toBe(413);
    res = await s.req(path, { method: 'HEAD', headers: H });
    expect(res.headers.get('upload-offset')).toBe('5');
    res = await s.req(path, { method: 'DELETE', headers: H });
    expect(res.status).toBe(204);
    expect((await s.req(path, { method: 'HEAD', headers: H })).status).toBe(404);
    expect((await s.req('/storage/objects/uploads/tus/two.txt')).status).toBe(404);
  });

  it('keeps the bytes of a PATCH cut short; the client resumes from HEAD and completes', async () => {
    const H = { 'tus-resumable': '1.0.0' };
    const data = randomBytes(200_000);
    let res = await s.req('/storage/tus', {
      method: 'POST',
      headers: { ...H, 'upload-length': String(data.length), 'upload-metadata': `bucket ${b64('uploads')},key ${b64('tus/resumed.bin')}` },
    });
    const path = new URL(res.headers.get('location')!).pathname;
    const ac = new AbortController();
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (sent === 0) {
          c.enqueue(data.subarray(0, 64 * 1024));
          sent = 64 * 1024;
          return;
        }
        // the first 64 KiB are on their way; then the connection breaks
        await new Promise((r) => setTimeout(r, 300));
        ac.abort();
        c.error(new Error('cut'));
      },
    });
    await s
      .req(path, { method: 'PATCH', headers: { ...H, 'content-type': 'application/offset+octet-stream', 'upload-offset': '0' }, body, signal: ac.signal, duplex: 'half' } as RequestInit)
      .catch(() => undefined);
    let offset = 0;
    for (let i = 0; i < 50 && offset === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      res = await s.req(path, { method: 'HEAD', headers: H });
      offset = Number(res.headers.get('upload-offset'));
    }
    expect(offset).toBe(64 * 1024);
    res = await s.req(path, { method: 'PATCH', headers: { ...H, 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset) }, body: data.subarray(offset) });
    expect([res.status, res.headers.get('upload-offset')]).toEqual([204, String(data.length)]);
    const got = await s.req('/storage/objects/uploads/tus/resumed.bin');
    expect(sha(Buffer.from(await got.arrayBuffer()))).toBe(sha(data));
  });

  it('refuses another version (412), a missing length or bucket (400)', async () => {
    let res = await s.req('/storage/tus', { method: 'POST', headers: { 'tus-resumable': '0.2.2', 'upload-length': '1' } });
    expect(res.status).toBe(412);
    expect(res.headers.get('tus-version')).toBe('1.0.0');
    res = await s.req('/storage/tus', { method: 'POST', headers: { 'tus-resumable': '1.0.0', 'upload-metadata': `bucket ${b64('uploads')},key ${b64('k')}` } });
    expect(res.status).toBe(400);
    res = await s.req('/storage/tus', { method: 'POST', headers: { 'tus-resumable': '1.0.0', 'upload-length': '3', 'upload-metadata': `key ${b64('k')}` } });
    expect(res.status).toBe(400);
  });
});
