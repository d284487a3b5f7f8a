import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// Signed URLs (docs/api.md "Storage", "Signed URLs"): POST /storage/signed/{bucket}/{key} →
// {url, path, expires_at}; GET of the URL without credentials; any change → 403 invalid_signature,
// past the expiry → 403 url_expired.
let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };

async function sign(path: string, body: unknown, key: string = s.keys.service, headers: Record<string, string> = {}) {
  const res = await s.req(`/storage/signed/${path}`, { method: 'POST', key, headers: { ...JSON_H, ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  // note: a signed URL may last 1 s here, so expiry is tested without a long wait.
  s = await startTestServer({ storageSignedMinS: 1 });
  const mk = await s.req('/storage/buckets', { method: 'POST', key: s.keys.service, headers: JSON_H, body: JSON.stringify({ name: 'vault' }) });
  expect(mk.status).toBe(201);
  expect((await s.req('/storage/objects/vault/dir/report.txt', { method: 'PUT', key: s.keys.service, headers: { 'content-type': 'text/plain' }, body: 'quarterly' })).status).toBe(201);
});
afterAll(() => s.close());

describe('signing', () => {
  it('answers {url, path, expires_at}; the URL reads the private object without credentials, ranges included', async () => {
    const before = Date.now();
    const r = await sign('vault/dir/report.txt', { expires_in: 600 });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['expires_at', 'path', 'url']);
    const path = r.body.path as string;
    expect(path).toMatch(/^\/storage\/signed\/vault\/dir\/report\.txt\?token=[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(r.body.url).toBe(s.url + path);
    const exp = Date.parse(r.body.expires_at as string);
    expect(exp).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 600_000);
    expect(exp).toBeLessThanOrEqual(Date.now() + 600_000);
    const got = await fetch(r.body.url as string);
    expect(got.status).toBe(200);
    expect(got.headers.get('x-content-type-options')).toBe('nosniff');
    expect(got.headers.get('content-security-policy')).toBe('sandbox');
    expect(await got.text()).toBe('quarterly');
    const part = await fetch(r.body.url as string, { headers: { range: 'bytes=0-6' } });
    expect(part.status).toBe(206);
    expect(await part.text()).toBe('quarter');
  });

  it('defaults to 3600 s and refuses expires_in outside 1 s (here) to 7 days', async () => {
    const r = await sign('vault/dir/report.txt', {});
    expect(r.status).toBe(200);
    const left = Date.parse(r.body.expires_at as string) - Date.now();
    expect(left).toBeGreaterThan(3590_000);
    expect(left).toBeLessThanOrEqual(3600_000);
    for (const expires_in of [0, 7 * 86_400 + 1, 1.5, '60']) {
      const bad = await sign('vault/dir/report.txt', { expires_in });
      expect(bad.status).toBe(400);
      expect((bad.body.error as { code: string }).code).toBe('invalid_field');
    }
    expect((await sign('vault/dir/report.txt', { transform: { zoom: 2 } })).status).toBe(400);
  });

  it('signs only what the caller may read: 404 for a missing object or another user', async () => {
    expect((await sign('vault/nothing.txt', {})).status).toBe(404);
    expect((await sign('vault/dir/report.txt', {}, s.keys.publishable)).status).toBe(404);
    expect((await sign('nobucket/x', {})).status).toBe(404);
  });
});

describe('tampering', () => {
  it('any change of path, token or transform is 403 invalid_signature', async () => {
    const r = await sign('vault/dir/report.txt', { expires_in: 600, transform: { w: 200 } });
    const url = new URL(r.body.url as string);
    expect(url.searchParams.get('w')).toBe('200');
    const token = url.searchParams.get('token')!;
    const [payload, sig] = token.split('.') as [string, string];
    const flip = (t: string): string => (t[0] === 'A' ? 'B' : 'A') + t.slice(1);
    const longer = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), e: 9_999_999_999 })).toString('base64url');
    const variants = [
      `${s.url}/storage/signed/vault/dir/other.txt?w=200&token=${token}`,
      `${s.url}/storage/signed/vault/dir/report.txt?token=${token}`,
      `${s.url}/storage/signed/vault/dir/report.txt?w=201&token=${token}`,
      `${s.url}/storage/signed/vault/dir/report.txt?w=200&h=50&token=${token}`,
      `${s.url}/storage/signed/vault/dir/report.txt?w=200&token=${payload}.${flip(sig)}`,
      `${s.url}/storage/signed/vault/dir/report.txt?w=200&token=${longer}.${sig}`,
      `${s.url}/storage/signed/vault/dir/report.txt?w=200&token=garbage`,
      `${s.url}/storage/signed/vault/dir/report.txt?w=200`,
    ];
    for (const v of variants) {
      const res = await fetch(v);
      expect(res.status, v).toBe(403);
      expect((await errorOf(res)).code).toBe('invalid_signature');
    }
    const ok = await fetch(url);
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
  });

  it('a token of another project does not open this one', async () => {
    const other = s.server.projects.create('other');
    const mk = await fetch(`${s.url}/storage/buckets`, { method: 'POST', headers: { ...JSON_H, 'x-service-key': other.service }, body: JSON.stringify({ name: 'vault' }) });
    expect(mk.status).toBe(201);
    expect((await fetch(`${s.url}/storage/objects/vault/dir/report.txt`, { method: 'PUT', headers: { 'x-service-key': other.service }, body: 'other' })).status).toBe(201);
    const r = await sign('vault/dir/report.txt', { expires_in: 600 });
    const token = new URL(r.body.url as string).searchParams.get('token')!;
    const [payload, sig] = token.split('.') as [string, string];
    const moved = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), p: other.project.id })).toString('base64url');
    const res = await fetch(`${s.url}/storage/signed/vault/dir/report.txt?token=${moved}.${sig}`);
    expect(res.status).toBe(403);
    expect((await errorOf(res)).code).toBe('invalid_signature');
  });

  it('past its expiry a URL is 403 url_expired', async () => {
    const r = await sign('vault/dir/report.txt', { expires_in: 1 });
    const wait = Date.parse(r.body.expires_at as string) - Date.now() + 50;
    await new Promise((res) => setTimeout(res, Math.max(0, wait)));
    const res = await fetch(r.body.url as string);
    expect(res.status).toBe(403);
    expect((await errorOf(res)).code).toBe('url_expired');
  });
});
