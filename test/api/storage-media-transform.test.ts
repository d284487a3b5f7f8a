import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gifBomb, makeImage, pngBomb } from '../helpers/images.js';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// Image transforms on reads (docs/api.md "Image transforms"): w/h/g/fit/format/q, Vary: Accept for
// format=auto, cached variants with their own ETag, 304, image bombs and HTML-as-PNG refused.
let s: TestServer;
let photo: string;

async function put(key: string, body: Uint8Array | string, type: string): Promise<{ id: string }> {
  const res = await s.req(`/storage/objects/pics/${key}`, { method: 'PUT', key: s.keys.service, headers: { 'content-type': type }, body });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string };
}
async function imageOf(res: Response): Promise<[string | undefined, number | undefined, number | undefined]> {
  const m = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
  return [m.format, m.width, m.height];
}

beforeAll(async () => {
  s = await startTestServer();
  const res = await s.req('/storage/buckets', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'pics', public: true }) });
  expect(res.status).toBe(201);
  photo = (await put('photo.jpg', await makeImage(400, 200, 'jpeg'), 'image/jpeg')).id;
  await put('bomb.png', pngBomb(), 'image/png');
  await put('frames.gif', gifBomb(), 'image/gif');
  await put('page.png', '<html><body><script>alert(1)</script></body></html>', 'image/png');
  await put('notes.txt', 'hello', 'text/plain');
});
afterAll(() => s.close());

describe('resizing on read', () => {
  it('w keeps the ratio; g=WxH with 0 too; format converts; by key, by short id and /{shortId}', async () => {
    let res = await fetch(`${s.url}/storage/objects/pics/${photo}?w=100`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/jpeg');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('vary')).toBeNull();
    expect(await imageOf(res)).toEqual(['jpeg', 100, 50]);
    res = await s.req('/storage/objects/pics/photo.jpg?g=0x40&format=webp');
    expect(res.headers.get('content-type')).toBe('image/webp');
    expect(await imageOf(res)).toEqual(['webp', 80, 40]);
    res = await fetch(`${s.url}/${photo}?w=60&h=60&fit=cover&format=png`);
    expect(await imageOf(res)).toEqual(['png', 60, 60]);
    res = await fetch(`${s.url}/${photo}?w=60&h=60&fit=inside&format=png`);
    expect(await imageOf(res)).toEqual(['png', 60, 30]);
  });

  it('format=auto picks AVIF or WebP from Accept and sends Vary: Accept', async () => {
    let res = await fetch(`${s.url}/${photo}?w=50&format=auto`, { headers: { accept: 'image/avif,image/webp,*/*' } });
    expect([res.headers.get('content-type'), res.headers.get('vary')]).toEqual(['image/avif', 'Accept']);
    expect((await imageOf(res))[0]).toBe('heif');
    res = await fetch(`${s.url}/${photo}?w=50&format=auto`, { headers: { accept: 'image/webp' } });
    expect([res.headers.get('content-type'), res.headers.get('vary')]).toEqual(['image/webp', 'Accept']);
    res = await fetch(`${s.url}/${photo}?w=50&format=auto`, { headers: { accept: 'text/html' } });
    expect([res.headers.get('content-type'), res.headers.get('vary')]).toEqual(['image/jpeg', 'Accept']);
    await res.arrayBuffer();
  });

  it('a variant has its own strong ETag, the same for the same normalised parameters, and revalidates with 304', async () => {
    const a = await fetch(`${s.url}/${photo}?w=70&format=webp&q=80`);
    const b = await fetch(`${s.url}/${photo}?q=80&g=70x0&format=webp`);
    const plain = await fetch(`${s.url}/${photo}`);
    const etag = a.headers.get('etag')!;
    expect(etag).toMatch(/^"[0-9a-f]{8}-[0-9a-f]{64}"$/);
    expect(b.headers.get('etag')).toBe(etag);
    expect(plain.headers.get('etag')).not.toBe(etag);
    expect(Buffer.from(await a.arrayBuffer()).equals(Buffer.from(await b.arrayBuffer()))).toBe(true);
    await plain.arrayBuffer();
    const c = await fetch(`${s.url}/${photo}?w=70&format=webp`, { headers: { 'if-none-match': etag } });
    expect(c.status).toBe(304);
    const r = await fetch(`${s.url}/${photo}?w=70&format=webp`, { headers: { range: 'bytes=0-3' } });
    expect(r.status).toBe(206);
    expect(Buffer.from(await r.arrayBuffer()).toString('latin1')).toBe('RIFF');
  });

  it('an overwrite makes new variants (the ETag follows the bytes)', async () => {
    const { id } = await put('swap.png', await makeImage(100, 100, 'png'), 'image/png');
    const first = await fetch(`${s.url}/${id}?w=10`);
    expect(await imageOf(first)).toEqual(['png', 10, 10]);
    const res = await s.req('/storage/objects/pics/swap.png', { method: 'PUT', key: s.keys.service, headers: { 'content-type': 'image/png' }, body: await makeImage(200, 100, 'png') });
    expect(res.status).toBe(200);
    const second = await fetch(`${s.url}/${id}?w=10`);
    expect(second.headers.get('etag')).not.toBe(first.headers.get('etag'));
    expect(await imageOf(second)).toEqual(['png', 10, 5]);
  });
});

describe('a cached variant read again (answered from memory by short id)', () => {
  it('keeps its own ETag, Vary: Accept per Accept (format=auto also percent-encoded), 304, ranges and overwrites', async () => {
    const { id } = await put('again.png', await makeImage(120, 60, 'png'), 'image/png');
    const tags = new Set<string>();
    // note: the first read makes the variant, the second finds it in the cache, the later ones are remembered.
    for (let round = 0; round < 4; round++) {
      for (const [query, accept, type, vary] of [
        ['w=40&format=%61uto', 'image/webp', 'image/webp', 'Accept'],
        ['w=40&format=%61uto', 'text/html', 'image/png', 'Accept'],
        ['w=40&format=auto', 'image/webp', 'image/webp', 'Accept'],
        ['w=40&format=auto', 'image/png', 'image/png', 'Accept'],
        ['w=40&format=webp', 'text/html', 'image/webp', null],
      ] as const) {
        const res = await fetch(`${s.url}/${id}?${query}`, { headers: { accept } });
        expect([res.status, res.headers.get('content-type'), res.headers.get('vary')]).toEqual([200, type, vary]);
        expect([res.headers.get('x-content-type-options'), res.headers.get('content-security-policy')]).toEqual(['nosniff', 'sandbox']);
        expect(await imageOf(res)).toEqual([type === 'image/webp' ? 'webp' : 'png', 40, 20]);
        tags.add(`${type} ${res.headers.get('etag')}`);
      }
    }
    // note: one ETag per output format: the same variant by any spelling of its parameters.
    expect(tags.size).toBe(2);
    const webp = [...tags].find((t) => t.startsWith('image/webp'))!.split(' ')[1]!;
    const nm = await fetch(`${s.url}/${id}?w=40&format=webp`, { headers: { 'if-none-match': webp } });
    expect([nm.status, nm.headers.get('etag')]).toEqual([304, webp]);
    const part = await fetch(`${s.url}/${id}?w=40&format=webp`, { headers: { range: 'bytes=0-3' } });
    expect([part.status, Buffer.from(await part.arrayBuffer()).toString('latin1')]).toEqual([206, 'RIFF']);
    const res = await s.req('/storage/objects/pics/again.png', { method: 'PUT', key: s.keys.service, headers: { 'content-type': 'image/png' }, body: await makeImage(120, 120, 'png') });
    expect(res.status).toBe(200);
    const after = await fetch(`${s.url}/${id}?w=40&format=webp`);
    expect(after.headers.get('etag')).not.toBe(webp);
    expect(await imageOf(after)).toEqual(['webp', 40, 40]);
  });

  it('of a private bucket is never served by short id without credentials', async () => {
    const mk = await s.req('/storage/buckets', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'hidden', public: false }) });
    expect(mk.status).toBe(201);
    const up = await s.req('/storage/objects/hidden/p.png', { method: 'PUT', key: s.keys.service, headers: { 'content-type': 'image/png' }, body: await makeImage(50, 50, 'png') });
    const { id } = (await up.json()) as { id: string };
    for (let i = 0; i < 3; i++) {
      const own = await s.req(`/storage/objects/hidden/${id}?w=10`, { key: s.keys.service });
      expect(await imageOf(own)).toEqual(['png', 10, 10]);
      const anon = await fetch(`${s.url}/${id}?w=10`);
      expect(anon.status).toBe(404);
      await anon.arrayBuffer();
      const anonBucket = await fetch(`${s.url}/storage/objects/hidden/${id}?w=10`);
      expect(anonBucket.status).toBe(404);
      await anonBucket.arrayBuffer();
    }
  });
});

describe('objects that are not raster images', () => {
  it('are served as stored, parameters ignored once valid', async () => {
    const res = await s.req('/storage/objects/pics/notes.txt?w=10&format=webp');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain');
    expect(await res.text()).toBe('hello');
    const bad = await s.req('/storage/objects/pics/notes.txt?w=100000');
    expect(bad.status).toBe(400);
  });
});

describe('refusals', () => {
  it('bad parameters are 400 invalid_field, w=100000 included', async () => {
    for (const q of ['w=100000', 'w=0', 'h=4001', 'g=10x10&w=5', 'g=0x0', 'fit=zoom', 'format=bmp', 'q=0']) {
      const res = await fetch(`${s.url}/${photo}?${q}`);
      expect(res.status, q).toBe(400);
      expect((await errorOf(res)).code, q).toBe('invalid_field');
    }
  });
  it('a 14000x14000 PNG and a 10,000-frame GIF are refused from their headers: 413', async () => {
    for (const key of ['bomb.png', 'frames.gif']) {
      const res = await s.req(`/storage/objects/pics/${key}?w=10`);
      expect(res.status, key).toBe(413);
      expect((await errorOf(res)).code).toBe('payload_too_large');
    }
  });
  it('HTML uploaded as image/png is never resized: 415; without parameters it is served as stored', async () => {
    const res = await s.req('/storage/objects/pics/page.png?w=10');
    expect(res.status).toBe(415);
    expect((await errorOf(res)).code).toBe('unsupported_media_type');
    const raw = await s.req('/storage/objects/pics/page.png');
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-security-policy')).toBe('sandbox');
    expect(await raw.text()).toContain('<html>');
  });
});

describe('the transform queue', () => {
  it('past its concurrency and queue, a transform is 503 unavailable with Retry-After', async () => {
    const t = await startTestServer({ imageConcurrency: 1, imageQueue: 0 });
    try {
      await t.req('/storage/buckets', { method: 'POST', key: t.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'qq', public: true }) });
      const res = await t.req('/storage/objects/qq/big.png', { method: 'PUT', key: t.keys.service, headers: { 'content-type': 'image/png' }, body: await makeImage(2000, 2000, 'png') });
      expect(res.status).toBe(201);
      const { id } = (await res.json()) as { id: string };
      // distinct widths: distinct variants, so none joins another's transform
      const answers = await Promise.all([101, 102, 103, 104].map((w) => fetch(`${t.url}/${id}?w=${w}&format=png`)));
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses[0]).toBe(200);
      expect(statuses[statuses.length - 1]).toBe(503);
      for (const a of answers) {
        if (a.status === 503) {
          expect(a.headers.get('retry-after')).toBe('1');
          expect((await errorOf(a)).code).toBe('unavailable');
        } else await a.arrayBuffer();
      }
    } finally {
      await t.close();
    }
  });
});
