import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// The upload iframe (docs/api.md "Upload iframe") in headless Chromium: a host page on another
// origin embeds it, sets a file, awaits the posted message and downloads the object.
let s: TestServer;
let host: Server;
let hostUrl: string;
let browser: Browser;
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  s = await startTestServer();
  const res = await s.req('/storage/buckets', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'media', public: true }) });
  expect(res.status).toBe(201);
  host = createServer((req, res) => {
    const src = new URL(req.url ?? '/', 'http://x').searchParams.get('src') ?? '';
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<!doctype html><body><script>window.__msgs=[];addEventListener('message',function(e){window.__msgs.push({origin:e.origin,data:e.data});});</script><iframe id="f" src="${src.replace(/"/g, '&quot;')}"></iframe></body>`);
  });
  await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
  hostUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await new Promise((r) => host?.close(r));
  await s?.close();
});

async function uploadThroughIframe(name: string, mimeType: string, buffer: Buffer): Promise<{ origin: string; data: Record<string, unknown> }> {
  const page = await browser.newPage();
  try {
    const src = `${s.url}/upload?key=${s.keys.publishable}&bucket=media&prefix=in/&origin=${encodeURIComponent(hostUrl)}`;
    await page.goto(`${hostUrl}/?src=${encodeURIComponent(src)}`);
    const frame = page.frameLocator('#f');
    await frame.locator('#file').setInputFiles({ name, mimeType, buffer });
    await page.waitForFunction('window.__msgs.length > 0', undefined, { timeout: 30_000 });
    const msgs = (await page.evaluate('window.__msgs')) as { origin: string; data: Record<string, unknown> }[];
    expect(msgs).toHaveLength(1);
    expect(await frame.locator('progress').getAttribute('value')).toBe('1');
    return msgs[0]!;
  } finally {
    await page.close();
  }
}

describe('upload iframe', () => {
  it('uploads a small file and posts platform-edge:uploaded to the parent from the server origin', async () => {
    const bytes = Buffer.from('hello from the iframe');
    const { origin, data } = await uploadThroughIframe('note.txt', 'text/plain', bytes);
    expect(origin).toBe(s.url);
    expect(data).toMatchObject({ type: 'platform-edge:uploaded', bucket: 'media', key: 'in/note.txt', size: bytes.length, content_type: 'text/plain' });
    expect(data.id).toMatch(/^[0-9A-Za-z]{10}$/);
    expect(data.url).toBe(`${s.url}/storage/objects/media/${String(data.id)}`);
    const res = await fetch(String(data.url));
    expect(await res.text()).toBe('hello from the iframe');
  }, 60_000);

  it('uploads a file above 8 MiB as a multipart upload', async () => {
    const bytes = randomBytes(9 * 1024 * 1024);
    const { data } = await uploadThroughIframe('big.bin', 'application/octet-stream', bytes);
    expect(data).toMatchObject({ type: 'platform-edge:uploaded', key: 'in/big.bin', size: bytes.length });
    const res = await fetch(String(data.url));
    expect(sha(Buffer.from(await res.arrayBuffer()))).toBe(sha(bytes));
  }, 60_000);

  it('is one HTML page with a nonce CSP and no referrer; a service-role key is a 400 page, a bad key 401', async () => {
    let res = await fetch(`${s.url}/upload?key=${s.keys.publishable}&bucket=media`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'nonce-[A-Za-z0-9+/=]+'/);
    expect(await res.text()).toContain(`"base":"${s.url}"`);
    res = await fetch(`${s.url}/upload?key=${s.keys.service}&bucket=media`);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const page = await res.text();
    expect(page).toContain('service-role key');
    expect(page).not.toContain(s.keys.service);
    res = await fetch(`${s.url}/upload?key=svc_live_nope&bucket=media`);
    expect(res.status).toBe(401);
    await res.text();
    res = await fetch(`${s.url}/upload?key=${s.keys.publishable}&bucket=BAD`);
    expect(res.status).toBe(400);
    await res.text();
  });
});
