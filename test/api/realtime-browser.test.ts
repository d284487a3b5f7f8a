import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// A real browser (Debian's chromium through playwright-core): WebSocket credentials as
// subprotocols, EventSource credentials in the query (docs/api.md "Realtime", "Credentials").
let s: TestServer;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  s = await startTestServer();
  const t = await s.req('/db/tables', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'notes' }) });
  expect(t.status).toBe(201);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  page = await browser.newPage();
  await page.goto(`${s.url}/health`);
});
afterAll(async () => {
  await browser?.close();
  await s.close();
});

async function insert(data: Record<string, unknown>): Promise<string> {
  const r = await s.req('/db/tables/notes/rows', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data }) });
  expect(r.status).toBe(201);
  return ((await r.json()) as { id: string }).id;
}

describe('in a browser', () => {
  it('new WebSocket(url, ["platform-edge.v1", "key.<K>"]) opens, the server selects platform-edge.v1, changes arrive', async () => {
    const opened = await page.evaluate(
      ({ url, key }) =>
        new Promise<{ protocol: string; ready: unknown }>((resolve, reject) => {
          const ws = new WebSocket(url, ['platform-edge.v1', `key.${key}`]);
          (globalThis as unknown as { rtWs: WebSocket; rtGot: unknown[] }).rtWs = ws;
          (globalThis as unknown as { rtGot: unknown[] }).rtGot = [];
          ws.onmessage = (e) => {
            const m = JSON.parse(e.data as string) as { type: string };
            if (m.type === 'ready') resolve({ protocol: ws.protocol, ready: m });
            else (globalThis as unknown as { rtGot: unknown[] }).rtGot.push(m);
          };
          ws.onerror = () => reject(new Error('WebSocket failed'));
        }),
      { url: `${s.url.replace('http', 'ws')}/realtime/ws?table=notes`, key: s.keys.publishable },
    );
    expect(opened.protocol).toBe('platform-edge.v1');
    expect(opened.ready).toMatchObject({ type: 'ready', table: 'notes' });
    const id = await insert({ from: 'ws' });
    await page.waitForFunction(() => (globalThis as unknown as { rtGot: unknown[] }).rtGot.length > 0, null, { timeout: 5000 });
    const got = await page.evaluate(() => (globalThis as unknown as { rtGot: unknown[] }).rtGot);
    expect(got).toEqual([expect.objectContaining({ type: 'change', op: 'insert', id, data: { from: 'ws' } })]);
    await page.evaluate(() => (globalThis as unknown as { rtWs: WebSocket }).rtWs.close());
  });

  it('a WebSocket without credentials fails (the 401 comes before any socket)', async () => {
    const outcome = await page.evaluate(
      (url) =>
        new Promise<string>((resolve) => {
          const ws = new WebSocket(url, ['platform-edge.v1']);
          ws.onopen = () => resolve('open');
          ws.onerror = () => resolve('error');
        }),
      `${s.url.replace('http', 'ws')}/realtime/ws?table=notes`,
    );
    expect(outcome).toBe('error');
  });

  it('new EventSource(url + "&apikey=") gets ready and change events', async () => {
    await page.evaluate((url) => {
      const w = globalThis as unknown as { rtEs: EventSource; rtSse: { event: string; data: unknown; id: string }[] };
      w.rtSse = [];
      w.rtEs = new EventSource(url);
      for (const ev of ['ready', 'change']) w.rtEs.addEventListener(ev, (e) => w.rtSse.push({ event: ev, data: JSON.parse((e as MessageEvent).data as string), id: (e as MessageEvent).lastEventId }));
    }, `${s.url}/realtime/stream?table=notes&apikey=${s.keys.publishable}`);
    await page.waitForFunction(() => (globalThis as unknown as { rtSse: unknown[] }).rtSse.length > 0, null, { timeout: 5000 });
    const id = await insert({ from: 'sse' });
    await page.waitForFunction(() => (globalThis as unknown as { rtSse: unknown[] }).rtSse.length > 1, null, { timeout: 5000 });
    const got = await page.evaluate(() => (globalThis as unknown as { rtSse: unknown[] }).rtSse);
    const change = got[1] as { event: string; data: { seq: number; id: string }; id: string };
    expect(got[0]).toMatchObject({ event: 'ready', data: { type: 'ready', table: 'notes' } });
    expect(change).toMatchObject({ event: 'change', data: { type: 'change', op: 'insert', id, data: { from: 'sse' } } });
    expect(change.id).toBe(String(change.data.seq));
    await page.evaluate(() => (globalThis as unknown as { rtEs: EventSource }).rtEs.close());
  });
});
