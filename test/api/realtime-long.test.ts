import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventSource } from '../helpers/realtime.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// A stream whose auth awaited (a Bearer user) outlives the pinned uWS's 10 s idle timeout: that
// backend arms the timeout when a held-back answer is resumed and writes do not reset it, so such
// a stream used to be cut about 12 s after it opened (src/http/uws-write.ts).
let s: TestServer;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  s = await startTestServer({ realtimeHeartbeatMs: 1000 });
  const t = await s.req('/db/tables', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'notes' }) });
  expect(t.status).toBe(201);
});
afterAll(() => s.close());

describe('a long-lived stream with a user token', () => {
  it('stays open past 14 s and gets every change, without a reconnect', { timeout: 30_000 }, async () => {
    const reg = await s.req('/auth/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'long@example.com', password: 'correct horse battery staple 1' }) });
    expect(reg.status).toBe(200);
    const token = ((await reg.json()) as { access_token: string }).access_token;
    const es = openEventSource(`${s.url}/realtime/stream?table=notes&apikey=${s.keys.publishable}&access_token=${token}`);
    await es.next((m) => m.event === 'ready');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      await sleep(3000);
      const r = await s.req('/db/tables/notes/rows', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: { n: i } }) });
      expect(r.status).toBe(201);
      ids.push(((await r.json()) as { id: string }).id);
      const change = await es.next((m) => m.event === 'change', 5000);
      expect(change.data).toMatchObject({ op: 'insert', table: 'notes', id: ids[i], data: { n: i } });
    }
    expect(es.errors).toBe(0);
    expect(es.received.filter((m) => m.event === 'ready')).toHaveLength(1);
    es.close();
  });
});
