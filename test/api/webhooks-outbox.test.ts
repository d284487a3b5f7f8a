import { afterAll, describe, expect, it, vi } from 'vitest';
import { killAll, startServe, tempDir, type ServeProcess } from '../helpers/cli.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { startTestServer } from '../helpers/server.js';

// The change log is the outbox (docs/api.md "Webhooks"): a delivery not attempted yet is a
// change past the webhooks cursor, listed as pending with the id it will be sent with. A real
// `serve` process is killed with SIGKILL while deliveries wait for their first attempt (one
// attempt slot, held by a target that does not answer); restarted on the same data folder, it
// sends each of them once, with the id listed before the kill; the one in flight goes again
// with its id. Every signature is verified with the standardwebhooks package.

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const receivers: Receiver[] = [];
afterAll(async () => {
  await killAll();
  for (const r of receivers) await r.close();
});

const ENV = { PLATFORM_EDGE_WEBHOOK_RETRY_BASE_MS: '300', PLATFORM_EDGE_WEBHOOK_RETRY_CAP_MS: '300', PLATFORM_EDGE_WEBHOOK_TIMEOUT_MS: '20000' };

interface Entry {
  id: string;
  type: string;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  response_status: number | null;
  created_at: string;
}

async function call(p: ServeProcess, method: string, path: string, body?: unknown) {
  const res = await p.req(path, {
    method,
    key: p.info.keys.service,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`condition not met: ${JSON.stringify(v).slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const log = async (p: ServeProcess, id: string, q = '') => {
  const r = await call(p, 'GET', `/webhooks/${id}/deliveries${q}`);
  expect(r.status, r.text).toBe(200);
  return r.body as { deliveries: Entry[]; limit: number; offset: number; next_offset: number | null };
};

describe('the change log as the outbox', () => {
  it('deliveries waiting for their first attempt are listed as pending, survive kill -9 and go once, with the listed ids', async () => {
    // The first request to `slow` is never answered: it holds the one attempt slot until the kill.
    const slow = await startReceiver((n) => (n === 0 ? 'handled' : { status: 200 }));
    const rx = await startReceiver(() => ({ status: 204 }));
    receivers.push(slow, rx);
    const dir = tempDir('pe-wh-outbox-');
    let p = await startServe(['--data-dir', dir], { env: { ...ENV, PLATFORM_EDGE_WEBHOOK_CONCURRENCY: '1' } });
    for (const name of ['slow', 'notes']) expect((await call(p, 'POST', '/db/tables', { name, type: 'document' })).status).toBe(201);
    const a = (await call(p, 'POST', '/webhooks', { url: slow.url, events: ['insert'], table: 'slow' })).body;
    const b = (await call(p, 'POST', '/webhooks', { url: rx.url, events: ['insert', 'update'], table: 'notes' })).body;
    slow.secrets = [a.secret];
    rx.secrets = [b.secret];

    expect((await call(p, 'POST', '/db/tables/slow/rows', { data: { s: 1 } })).status).toBe(201);
    await slow.waitFor(1, 10_000);
    const rows: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await call(p, 'POST', '/db/tables/notes/rows', { data: { i } });
      expect(r.status).toBe(201);
      rows.push(r.body.id as string);
    }
    expect((await call(p, 'PATCH', `/db/tables/notes/rows/${rows[0]}`, { data: { i: 0, edited: true } })).status).toBe(200);

    // Four deliveries wait for their first attempt: pending, no attempt yet, newest first.
    const pending = (await until(() => log(p, b.id, '?status=pending'), (l) => l.deliveries.length === 4)).deliveries;
    for (const d of pending) expect(d).toMatchObject({ status: 'pending', attempts: 0, response_status: null });
    expect(pending.map((d) => d.type)).toEqual(['db.update', 'db.insert', 'db.insert', 'db.insert']);
    expect([...pending.map((d) => d.id)].sort().reverse()).toEqual(pending.map((d) => d.id));
    expect((await log(p, b.id)).deliveries.map((d) => d.id)).toEqual(pending.map((d) => d.id));
    // Pages of the same list.
    const page1 = await log(p, b.id, '?status=pending&limit=3');
    expect(page1.deliveries.map((d) => d.id)).toEqual(pending.slice(0, 3).map((d) => d.id));
    expect(page1.next_offset).toBe(3);
    const page2 = await log(p, b.id, '?status=pending&limit=3&offset=3');
    expect(page2.deliveries.map((d) => d.id)).toEqual(pending.slice(3).map((d) => d.id));
    expect(page2.next_offset).toBeNull();
    expect((await log(p, b.id, '?status=delivered')).deliveries).toEqual([]);
    // Listed again: the same ids (they are derived from the change and the webhook, not drawn).
    expect((await log(p, b.id, '?status=pending')).deliveries).toEqual(pending);
    // A retry of one waiting for its first attempt: it is pending and due already.
    const retry = await call(p, 'POST', `/webhooks/${b.id}/deliveries/${pending[1]!.id}/retry`);
    expect(retry.status, retry.text).toBe(202);
    expect(retry.body).toMatchObject({ id: pending[1]!.id, status: 'pending', attempts: 0 });
    // The one in flight is pending too.
    const inFlight = (await log(p, a.id)).deliveries;
    expect(inFlight).toMatchObject([{ status: 'pending', attempts: 0 }]);
    expect(inFlight[0]!.id).toBe(slow.received[0]!.headers['webhook-id']);
    expect(rx.received).toHaveLength(0);

    await p.stop('SIGKILL');
    p = await startServe(['--data-dir', dir], { env: ENV });

    const done = await until(() => log(p, b.id), (l) => l.deliveries.length === 4 && l.deliveries.every((d) => d.status === 'delivered'));
    expect(done.deliveries.map((d) => d.id)).toEqual(pending.map((d) => d.id));
    for (const d of done.deliveries) expect(d).toMatchObject({ attempts: 1, response_status: 204 });
    // Each once, with the id listed before the kill, signed.
    expect(rx.received.map((r) => r.headers['webhook-id']).sort()).toEqual(pending.map((d) => d.id).sort());
    for (const r of rx.received) {
      expect(r.verifyError).toBeNull();
      const body = JSON.parse(r.body) as { id: string; type: string; table: string; record: { id: string } };
      expect(body.id).toBe(r.headers['webhook-id']);
      expect(body.table).toBe('notes');
      expect(rows).toContain(body.record.id);
    }
    // The attempt in flight at the kill is made again, with its id (at least once).
    await until(() => log(p, a.id), (l) => l.deliveries[0]?.status === 'delivered');
    expect(slow.received.length).toBe(2);
    expect(slow.received[1]!.headers['webhook-id']).toBe(slow.received[0]!.headers['webhook-id']);
    expect(slow.received[1]!.body).toBe(slow.received[0]!.body);
    for (const r of slow.received) expect(r.verifyError).toBeNull();
    expect((await log(p, b.id, '?status=pending')).deliveries).toEqual([]);
    await p.stop();
    // Nothing more arrives after a clean restart: every delivery is written.
    p = await startServe(['--data-dir', dir], { env: ENV });
    expect((await call(p, 'POST', '/db/tables/notes/rows', { data: { last: true } })).status).toBe(201);
    await rx.waitFor(5, 10_000);
    expect(new Set(rx.received.map((r) => r.headers['webhook-id'])).size).toBe(5);
    await p.stop();
  });

  it('a retried delivery keeps its id: the first attempt writes the row, the next ones update it', async () => {
    const rx = await startReceiver((n) => (n < 2 ? { status: 503 } : { status: 200 }));
    receivers.push(rx);
    const dir = tempDir('pe-wh-outbox2-');
    const p = await startServe(['--data-dir', dir], { env: ENV });
    expect((await call(p, 'POST', '/db/tables', { name: 'notes', type: 'document' })).status).toBe(201);
    const h = (await call(p, 'POST', '/webhooks', { url: rx.url, events: ['insert'] })).body;
    rx.secrets = [h.secret];
    expect((await call(p, 'POST', '/db/tables/notes/rows', { data: { n: 1 } })).status).toBe(201);
    await rx.waitFor(1, 10_000);
    const [first] = (await until(() => log(p, h.id), (l) => (l.deliveries[0]?.attempts ?? 0) >= 1)).deliveries;
    expect(first!.id).toBe(rx.received[0]!.headers['webhook-id']);
    const [d] = (await until(() => log(p, h.id), (l) => l.deliveries[0]?.status === 'delivered')).deliveries;
    expect(d).toMatchObject({ id: first!.id, attempts: 3, response_status: 200 });
    expect(rx.received).toHaveLength(3);
    expect(new Set(rx.received.map((r) => r.headers['webhook-id']))).toEqual(new Set([d!.id]));
    expect(new Set(rx.received.map((r) => r.body)).size).toBe(1);
    for (const r of rx.received) expect(r.verifyError).toBeNull();
    // A retry by request sends it again, still with its id.
    expect((await call(p, 'POST', `/webhooks/${h.id}/deliveries/${d!.id}/retry`)).status).toBe(202);
    await rx.waitFor(4, 10_000);
    expect(rx.received[3]!.headers['webhook-id']).toBe(d!.id);
    expect(rx.received[3]!.verifyError).toBeNull();
    await p.stop();
  });

  it('a webhook deleted while its deliveries wait for their first attempt takes them along; the others go on', async () => {
    const errors: string[] = [];
    const s = await startTestServer({ webhookConcurrency: 1, webhookRetryBaseMs: 20, webhookRetryCapMs: 60, webhookTimeoutMs: 20_000 }, { log: (msg) => errors.push(msg) });
    const slow = await startReceiver((n) => (n === 0 ? 'handled' : { status: 200 }));
    const gone = await startReceiver(() => ({ status: 204 }));
    const kept = await startReceiver(() => ({ status: 204 }));
    receivers.push(slow, gone, kept);
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await s.req(path, { method, key: s.keys.service, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null, text };
    };
    try {
      for (const name of ['slow', 'notes']) expect((await api('POST', '/db/tables', { name, type: 'document' })).status).toBe(201);
      await api('POST', '/webhooks', { url: slow.url, events: ['insert'], table: 'slow' });
      const g = (await api('POST', '/webhooks', { url: gone.url, events: ['insert'], table: 'notes' })).body;
      const k = (await api('POST', '/webhooks', { url: kept.url, events: ['insert'], table: 'notes' })).body;
      kept.secrets = [k.secret];
      expect((await api('POST', '/db/tables/slow/rows', { data: {} })).status).toBe(201);
      await slow.waitFor(1, 10_000);
      for (let i = 0; i < 3; i++) expect((await api('POST', '/db/tables/notes/rows', { data: { i } })).status).toBe(201);
      const pending = async (id: string) => ((await api('GET', `/webhooks/${id}/deliveries?status=pending`)).body.deliveries as Entry[]);
      await until(() => pending(g.id), (d) => d.length === 3);
      expect(await pending(k.id)).toHaveLength(3);
      expect((await api('DELETE', `/webhooks/${g.id}`)).status).toBe(204);
      expect((await api('GET', `/webhooks/${g.id}/deliveries`)).status).toBe(404);
      // The held attempt ends (its target answers nothing and is closed): the queue moves on.
      await slow.close();
      await kept.waitFor(3, 20_000);
      const log = await until(async () => (await api('GET', `/webhooks/${k.id}/deliveries`)).body.deliveries as Entry[], (d) => d.length === 3 && d.every((x) => x.status === 'delivered'));
      expect(new Set(kept.received.map((r) => r.headers['webhook-id']))).toEqual(new Set(log.map((d) => d.id)));
      for (const r of kept.received) expect(r.verifyError).toBeNull();
      expect(gone.received).toHaveLength(0);
      expect(errors).toEqual([]);
    } finally {
      await s.close();
    }
  });
});
