import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// A real browser on another origin (a page of http://localhost:<port> calling http://127.0.0.1:<port>):
// its preflights admit the TUS and conditional-read headers, and it can read the TUS answer
// headers (docs/api.md "CORS", "Multipart and TUS").
let s: TestServer;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  s = await startTestServer();
  const mk = await s.req('/storage/buckets', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'web', public: false }) });
  expect(mk.status).toBe(201);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  page = await browser.newPage();
  await page.goto(`${s.url.replace('127.0.0.1', 'localhost')}/health`);
});
afterAll(async () => {
  await browser?.close();
  await s.close();
});

describe('a browser on another origin', () => {
  it('uploads over TUS (preflighted Tus-*/Upload-* headers), reads Location and Upload-Offset, then revalidates with If-None-Match', async () => {
    expect(await page.evaluate(() => (globalThis as unknown as { location: { origin: string } }).location.origin)).toMatch(/^http:\/\/localhost:\d+$/);
    const out = await page.evaluate(
      async ({ api, key }) => {
        const tus = { 'tus-resumable': '1.0.0', 'x-service-key': key };
        const created = await fetch(`${api}/storage/tus`, {
          method: 'POST',
          headers: { ...tus, 'upload-length': '5', 'upload-metadata': `bucket ${btoa('web')},key ${btoa('hello.txt')},filetype ${btoa('text/plain')}` },
        });
        const location = created.headers.get('location');
        const patched = await fetch(location!, { method: 'PATCH', headers: { ...tus, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: 'hello' });
        const read = await fetch(`${api}/storage/objects/web/hello.txt`, { headers: { 'x-service-key': key } });
        const etag = read.headers.get('etag');
        const body = await read.text();
        const again = await fetch(`${api}/storage/objects/web/hello.txt`, { headers: { 'x-service-key': key, 'if-none-match': etag! } });
        return {
          created: [created.status, created.headers.get('upload-offset'), created.headers.get('tus-resumable'), location === null ? null : new URL(location).pathname],
          patched: [patched.status, patched.headers.get('upload-offset')],
          read: [read.status, body, etag],
          again: again.status,
        };
      },
      { api: s.url, key: s.keys.service },
    );
    expect(out.created).toEqual([201, '0', '1.0.0', expect.stringMatching(/^\/storage\/tus\/[A-Za-z0-9]{24}$/)]);
    expect(out.patched).toEqual([204, '5']);
    expect(out.read).toEqual([200, 'hello', expect.stringMatching(/^"[0-9a-f]{64}"$/)]);
    expect(out.again).toBe(304);
  });
});
