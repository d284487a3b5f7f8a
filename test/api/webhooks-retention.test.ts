import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Retention of the delivery log (docs/api.md "Webhooks", "Delivery log retention"), with small
// settings: maintenance every 50 ms, a count cap of 2, or an age limit of 1 s.
const JSON_H = { 'content-type': 'application/json' };
let ok: Receiver;
let down: Receiver;

async function call(s: TestServer, method: string, path: string, body?: unknown) {
  const res = await s.req(path, { method, key: s.keys.service, headers: body === undefined ? {} : JSON_H, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}

async function log(s: TestServer, id: string): Promise<{ id: string; status: string }[]> {
  const r = await call(s, 'GET', `/webhooks/${id}/deliveries`);
  expect(r.status, r.text).toBe(200);
  return r.body.deliveries;
}

async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 8000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > end) throw new Error(`condition not met: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function setup(s: TestServer) {
  expect((await call(s, 'POST', '/db/tables', { name: 'notes', type: 'document' })).status).toBe(201);
  const a = await call(s, 'POST', '/webhooks', { url: ok.url, events: ['insert'], table: 'notes' });
  const b = await call(s, 'POST', '/webhooks', { url: down.url, events: ['insert'], table: 'notes' });
  expect([a.status, b.status]).toEqual([201, 201]);
  return { good: a.body.id as string, bad: b.body.id as string };
}

beforeAll(async () => {
  ok = await startReceiver(() => ({ status: 204 }));
  down = await startReceiver(() => ({ status: 503 }));
});
afterAll(async () => {
  await ok.close();
  await down.close();
});

describe('delivery log retention', () => {
  it('keeps the newest finished deliveries per webhook up to the cap; pending ones stay', async () => {
    const s = await startTestServer({ changeLogPruneMs: 50, webhookLogKeep: 2, webhookLogRetentionS: 0, webhookRetryBaseMs: 60_000, webhookRetryCapMs: 60_000 });
    try {
      const { good, bad } = await setup(s);
      for (let i = 0; i < 5; i++) expect((await call(s, 'POST', '/db/tables/notes/rows', { data: { i } })).status).toBe(201);
      await ok.waitFor(5);
      await down.waitFor(5);
      const kept = await until(() => log(s, good), (d) => d.length === 2 && d.every((x) => x.status === 'delivered'));
      const row = new Map(ok.received.map((r) => JSON.parse(r.body) as { id: string; record: { data: { i: number } } }).map((b) => [b.id, b.record.data.i]));
      // The two newest (of the last two inserts), newest first.
      expect(kept.map((d) => row.get(d.id))).toEqual([4, 3]);
      // Waiting for a retry (pending): never pruned.
      expect((await log(s, bad)).map((d) => d.status)).toEqual(['pending', 'pending', 'pending', 'pending', 'pending']);
    } finally {
      await s.close();
    }
  });

  it('drops finished deliveries older than the retention; pending ones stay', async () => {
    const s = await startTestServer({ changeLogPruneMs: 50, webhookLogKeep: 0, webhookLogRetentionS: 1, webhookRetryBaseMs: 60_000, webhookRetryCapMs: 60_000 });
    try {
      const { good, bad } = await setup(s);
      const before = ok.received.length;
      for (let i = 0; i < 3; i++) expect((await call(s, 'POST', '/db/tables/notes/rows', { data: { i } })).status).toBe(201);
      await ok.waitFor(before + 3);
      // Delivered, then past the age limit: gone.
      await until(() => log(s, good), (d) => d.length === 0);
      expect((await log(s, bad)).map((d) => d.status)).toEqual(['pending', 'pending', 'pending']);
    } finally {
      await s.close();
    }
  });
});
