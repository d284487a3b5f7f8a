import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { EdgeError } from '../../src/core/errors.js';
import { ImageTransformer, JobQueue } from '../../src/services/storage/image-transform.js';
import { normalise, parseTransform, resolveFormat, sniffImage, transformableKind } from '../../src/services/storage/image-params.js';
import { gifBomb, makeImage, pngBomb } from '../helpers/images.js';

const q = (s: string) => parseTransform(new URLSearchParams(s));
const codeOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    return err instanceof EdgeError ? `${err.status} ${err.code}` : String(err);
  }
  return 'ok';
};
async function codeOfAsync(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return err instanceof EdgeError ? `${err.status} ${err.code}` : String(err);
  }
  return 'ok';
}

describe('transform parameters', () => {
  it('is null without transform parameters', () => {
    expect(q('')).toBeNull();
    expect(q('download=1')).toBeNull();
  });
  it('reads w, h, fit, format and q with defaults', () => {
    expect(q('w=800')).toEqual({ width: 800, height: null, fit: 'cover', format: 'origin', quality: 80 });
    expect(q('w=10&h=20&fit=contain&format=webp&q=55')).toEqual({ width: 10, height: 20, fit: 'contain', format: 'webp', quality: 55 });
  });
  it('reads g=WxH where a 0 side keeps the ratio', () => {
    expect(q('g=300x0')).toMatchObject({ width: 300, height: null });
    expect(q('g=0x200')).toMatchObject({ width: null, height: 200 });
    expect(q('g=40x30')).toMatchObject({ width: 40, height: 30 });
  });
  it('refuses bad values as 400 invalid_field, before making numbers of long text', () => {
    for (const bad of ['w=0', 'w=4001', 'w=100000', 'w=-1', 'w=1.5', 'w=abc', 'h=99999999999999999999', 'g=0x0', 'g=5000x1', 'g=10', 'g=10x10&w=5', 'fit=stretch',
      'format=gif', 'format=svg', 'q=0', 'q=101', 'w=1&w=2', 'w=', 'w=0800']) {
      expect(codeOf(() => q(bad)), bad).toBe('400 invalid_field');
    }
    expect(codeOf(() => q('w=4000&h=4000'))).toBe('ok');
  });
  it('normalises to what changes the output', () => {
    expect(normalise(q('w=800')!, 'webp')).toBe('w=800&h=0&f=webp&q=80');
    expect(normalise(q('w=800&fit=contain')!, 'webp')).toBe('w=800&h=0&f=webp&q=80');
    expect(normalise(q('g=800x0&q=80')!, 'webp')).toBe('w=800&h=0&f=webp&q=80');
    expect(normalise(q('w=8&h=9&fit=fill&q=10')!, 'png')).toBe('w=8&h=9&fit=fill&f=png');
    expect(normalise(q('format=jpeg')!, 'jpeg')).toBe('f=jpeg&q=80');
  });
  it('resolves format=auto from Accept', () => {
    expect(resolveFormat('auto', 'jpeg', 'image/avif,image/webp,*/*')).toBe('avif');
    expect(resolveFormat('auto', 'jpeg', 'image/webp,*/*')).toBe('webp');
    expect(resolveFormat('auto', 'png', 'image/avif;q=0, image/webp')).toBe('webp');
    expect(resolveFormat('auto', 'png', '*/*')).toBe('png');
    expect(resolveFormat('auto', 'png', undefined)).toBe('png');
    expect(resolveFormat('origin', 'gif', 'image/webp')).toBe('gif');
    expect(resolveFormat('jpeg', 'png', 'image/webp')).toBe('jpeg');
  });
  it('sniffs raster formats and nothing else; HTML labelled image/png is refused', async () => {
    expect(sniffImage(await makeImage(2, 2, 'png'))).toBe('png');
    expect(sniffImage(await makeImage(2, 2, 'jpeg'))).toBe('jpeg');
    expect(sniffImage(await makeImage(2, 2, 'webp'))).toBe('webp');
    expect(sniffImage(await makeImage(2, 2, 'gif'))).toBe('gif');
    expect(sniffImage(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'))).toBeNull();
    expect(codeOf(() => transformableKind('image/png', Buffer.from('<html><script>alert(1)</script></html>')))).toBe('415 unsupported_media_type');
    expect(codeOf(() => transformableKind('text/html', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))).toBe('415 unsupported_media_type');
    expect(codeOf(() => transformableKind('image/png; charset=x', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))).toBe('ok');
  });
});

describe('JobQueue', () => {
  it('runs `concurrency` jobs, queues `queue`, refuses the rest with 503 and Retry-After', async () => {
    const jq = new JobQueue(1, 1);
    const gates: (() => void)[] = [];
    const job = () => new Promise<string>((r) => gates.push(() => r('done')));
    const a = jq.run(job);
    const b = jq.run(job);
    let refused: unknown;
    await jq.run(job).catch((e: unknown) => (refused = e));
    expect(refused).toBeInstanceOf(EdgeError);
    expect((refused as EdgeError).status).toBe(503);
    expect((refused as EdgeError).code).toBe('unavailable');
    expect((refused as EdgeError).headers).toEqual({ 'retry-after': '1' });
    expect([jq.running, jq.waiting]).toEqual([1, 1]);
    gates.shift()!();
    expect(await a).toBe('done');
    await new Promise((r) => setImmediate(r));
    gates.shift()!();
    expect(await b).toBe('done');
    expect([jq.running, jq.waiting]).toEqual([0, 0]);
  });
});

describe('ImageTransformer', () => {
  const root = mkdtempSync(join(tmpdir(), 'pe-transform-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const dir = (p: string) => join(root, p, 'variants');
  let n = 0;
  const put = (bytes: Buffer, contentType: string) => {
    const ref = `ref${++n}`;
    const file = join(root, `${ref}.bin`);
    writeFileSync(file, bytes);
    return { projectId: 'p1', ref, file, contentType, etag: `"e${n}"` };
  };

  it('resizes, keeps the ratio, converts and caches by normalised parameters', async () => {
    const t = new ImageTransformer(dir);
    const src = put(await makeImage(400, 200, 'jpeg'), 'image/jpeg');
    const v = await t.variant(src, q('w=100&format=webp')!, undefined);
    expect(v.contentType).toBe('image/webp');
    expect(v.negotiated).toBe(false);
    const m = await sharp(v.file).metadata();
    expect([m.format, m.width, m.height]).toEqual(['webp', 100, 50]);
    const again = await t.variant(src, q('g=100x0&format=webp&fit=fill')!, undefined);
    expect(again.file).toBe(v.file);
    expect(again.etag).toBe(v.etag);
    expect(await t.usage('p1')).toEqual({ bytes: v.size, variants: 1 });
    const cover = await t.variant(src, q('w=50&h=50')!, 'image/webp');
    expect(cover.contentType).toBe('image/jpeg');
    const cm = await sharp(cover.file).metadata();
    expect([cm.format, cm.width, cm.height]).toEqual(['jpeg', 50, 50]);
    const auto = await t.variant(src, q('w=50&format=auto')!, 'image/avif,image/webp');
    expect([auto.contentType, auto.negotiated]).toEqual(['image/avif', true]);
  });

  it('never enlarges', async () => {
    const t = new ImageTransformer(dir);
    const src = put(await makeImage(40, 20, 'png'), 'image/png');
    const v = await t.variant(src, q('w=4000')!, undefined);
    const m = await sharp(v.file).metadata();
    expect([m.width, m.height]).toEqual([40, 20]);
  });

  it('refuses a 14000x14000 PNG and a 10,000-frame GIF from their headers (413)', async () => {
    const t = new ImageTransformer(dir);
    expect(await codeOfAsync(t.variant(put(pngBomb(), 'image/png'), q('w=10')!, undefined))).toBe('413 payload_too_large');
    expect(await codeOfAsync(t.variant(put(gifBomb(), 'image/gif'), q('w=10')!, undefined))).toBe('413 payload_too_large');
    // the same frames under a higher cap get past the header check
    const lax = new ImageTransformer(dir, { maxPixels: 200_000_000 });
    expect(await codeOfAsync(lax.variant(put(gifBomb(20), 'image/gif'), q('w=10&format=png')!, undefined))).toBe('ok');
  });

  it('refuses HTML labelled image/png and a corrupt image with 415', async () => {
    const t = new ImageTransformer(dir);
    expect(await codeOfAsync(t.variant(put(Buffer.from('<html><body>hi</body></html>'), 'image/png'), q('w=10')!, undefined))).toBe('415 unsupported_media_type');
    const png = await makeImage(50, 50, 'png');
    expect(await codeOfAsync(t.variant(put(png.subarray(0, 60), 'image/png'), q('w=10')!, undefined))).toBe('415 unsupported_media_type');
  });

  it('keeps at most perObject variants per object and the byte cap per project (LRU)', async () => {
    const t = new ImageTransformer((p) => join(root, p, 'v2'), { perObject: 3 });
    const src = { ...put(await makeImage(64, 64, 'png'), 'image/png'), projectId: 'p2' };
    for (const w of [10, 11, 12, 13]) await t.variant(src, q(`w=${w}`)!, undefined);
    expect((await t.usage('p2')).variants).toBe(3);
    expect(readdirSync(join(root, 'p2', 'v2', src.ref)).length).toBe(3);
    const cap = new ImageTransformer((p) => join(root, p, 'v3'), { cacheBytes: 1 });
    const big = await cap.variant({ ...src, projectId: 'p3' }, q('w=20')!, undefined);
    await cap.variant({ ...src, projectId: 'p3' }, q('w=21')!, undefined);
    expect(await cap.usage('p3')).toMatchObject({ variants: 1 });
    expect(readdirSync(join(root, 'p3', 'v3', src.ref))).not.toContain(big.file.split('/').pop());
    // a cap of two variants' bytes: the least recently used goes
    const v = await t.variant(src, q('w=30&format=jpeg')!, undefined);
    const lru = new ImageTransformer((p) => join(root, p, 'v4'), { cacheBytes: v.size * 2 + 1 });
    const s4 = { ...src, projectId: 'p4' };
    const a = await lru.variant(s4, q('w=30&format=jpeg')!, undefined);
    const b = await lru.variant(s4, q('w=30&format=jpeg&q=81')!, undefined);
    await lru.variant(s4, q('w=30&format=jpeg')!, undefined); // a is now the most recent
    await lru.variant(s4, q('w=30&format=jpeg&q=82')!, undefined);
    const files = readdirSync(join(root, 'p4', 'v4', src.ref));
    expect(files).toContain(a.file.split('/').pop());
    expect(files).not.toContain(b.file.split('/').pop());
    // a restart rebuilds the index from the folder
    const again = new ImageTransformer((p) => join(root, p, 'v4'), { cacheBytes: v.size * 2 + 1 });
    expect((await again.usage('p4')).variants).toBe(2);
    await again.dropRef('p4', src.ref);
    expect(await again.usage('p4')).toEqual({ bytes: 0, variants: 0 });
  });

  it('refuses past the queue with 503', async () => {
    const t = new ImageTransformer((p) => join(root, p, 'v5'), { concurrency: 1, queue: 0 });
    const src = { ...put(await makeImage(800, 800, 'png'), 'image/png'), projectId: 'p5' };
    const results = await Promise.all([10, 11, 12].map((w) => codeOfAsync(t.variant(src, q(`w=${w}`)!, undefined))));
    expect(results.filter((r) => r === 'ok').length).toBeGreaterThanOrEqual(1);
    expect(results.filter((r) => r === '503 unavailable').length).toBeGreaterThanOrEqual(1);
  });
});
