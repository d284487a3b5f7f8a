import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// Retries in milliseconds, not seconds: the backoff's base and cap are settings.
let s: TestServer;
let rx: Receiver;
const JSON_H = { 'content-type': 'application/json' };

async function call(method: string, path: string, body?: unknown, key: string | null = s.keys.service, server: TestServer = s) {
  const res = await server.req(path, { method, key, headers: body === undefined ? {} : JSON_H, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}

async function hook(body: Record<string, unknown>) {
  const r = await call('POST', '/webhooks', body);
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; secret: string };
}

async function deliveries(id: string, q = '') {
  const r = await call('GET', `/webhooks/${id}/deliveries${q}`);
  expect(r.status, r.text).toBe(200);
  return r.body.deliveries as { id: string; type: string; status: string; attempts: number; response_status: number | null; error: string | null }[];
}

/** Polls the delivery log until `ok` holds (deliveries are asynchronous). */
async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 8000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`condition not met: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

beforeAll(async () => {
  s = await startTestServer({ webhookRetryBaseMs: 20, webhookRetryCapMs: 60, webhookTimeoutMs: 500 });
  rx = await startReceiver();
  for (const def of [
    { name: 'notes', type: 'document' },
    { name: 'items', type: 'relational', columns: [{ name: 'title', type: 'text' }, { name: 'qty', type: 'int8' }] },
  ]) {
    const r = await call('POST', '/db/tables', def);
    expect(r.status, r.text).toBe(201);
  }
});
// note: a test that fails leaves no webhook behind to disturb the next one.
afterEach(async () => {
  for (const w of (await call('GET', '/webhooks')).body.webhooks as { id: string }[]) await call('DELETE', `/webhooks/${w.id}`);
});
afterAll(async () => {
  await s.close();
  await rx.close();
});

describe('delivery', () => {
  it('delivers insert, update and delete with the DESIGN.md body and signatures standardwebhooks verifies', async () => {
    rx.received.length = 0;
    rx.behaviour = () => ({ status: 204 });
    const h = await hook({ url: rx.url, events: ['insert', 'db.update', 'delete'], table: 'items' });
    rx.secrets = [h.secret];
    const ins = await call('POST', '/db/tables/items/rows', { data: { title: 'a', qty: 2 } });
    expect(ins.status, ins.text).toBe(201);
    const row = ins.body;
    const upd = await call('PATCH', `/db/tables/items/rows/${row.id}`, { data: { qty: 3 } });
    expect(upd.status, upd.text).toBe(200);
    expect((await call('DELETE', `/db/tables/items/rows/${row.id}`)).status).toBe(204);
    // A change of another table does not reach a webhook of `items`.
    expect((await call('POST', '/db/tables/notes/rows', { data: { x: 1 } })).status).toBe(201);
    const got = await rx.waitFor(3);
    for (const r of got) expect(r.verifyError).toBeNull();
    const bodies = got.map((r) => JSON.parse(r.body));
    expect(bodies.map((b) => b.type)).toEqual(['db.insert', 'db.update', 'db.delete']);
    expect(bodies[0]).toEqual({
      id: got[0]!.headers['webhook-id'],
      type: 'db.insert',
      table: 'items',
      record: { id: row.id, data: { title: 'a', qty: 2 }, created_at: row.created_at, updated_at: row.updated_at },
      old_record: null,
      occurred_at: row.created_at,
    });
    expect(bodies[1].record).toEqual({ ...upd.body });
    expect(bodies[1].old_record).toEqual({ id: row.id, data: { title: 'a', qty: 2 }, created_at: row.created_at, updated_at: row.updated_at });
    expect(bodies[2].record).toBeNull();
    expect(bodies[2].old_record).toEqual(upd.body);
    expect(got[0]!.verified).toEqual(bodies[0]);
    expect(got[0]!.headers['content-type']).toBe('application/json');
    expect(got[0]!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    const log = await until(() => deliveries(h.id), (d) => d.length === 3 && d.every((x) => x.status === 'delivered'));
    expect(log.map((d) => d.type)).toEqual(['db.delete', 'db.update', 'db.insert']);
    expect(log[0]).toMatchObject({ attempts: 1, response_status: 204, error: null });
    expect(new Set(log.map((d) => d.id))).toEqual(new Set(got.map((r) => r.headers['webhook-id'])));
    expect((await call('DELETE', `/webhooks/${h.id}`)).status).toBe(204);
  });

  it('a target down until the fifth attempt gets the delivery once more, with the same webhook-id', async () => {
    rx.received.length = 0;
    rx.behaviour = (n) => (n < 4 ? { status: 503 } : { status: 200, body: 'ok' });
    const h = await hook({ url: rx.url, events: ['insert'], table: 'notes' });
    rx.secrets = [h.secret];
    expect((await call('POST', '/db/tables/notes/rows', { data: { n: 5 } })).status).toBe(201);
    const got = await rx.waitFor(5);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(new Set(got.map((r) => r.body)).size).toBe(1);
    for (const r of got) expect(r.verifyError).toBeNull();
    const [d] = await until(() => deliveries(h.id), (d) => d[0]?.status === 'delivered');
    expect(d).toMatchObject({ status: 'delivered', attempts: 5, response_status: 200, error: null });
    await new Promise((r) => setTimeout(r, 200));
    expect(rx.received.length).toBe(5);
    expect((await call('DELETE', `/webhooks/${h.id}`)).status).toBe(204);
  });

  it('a delivery that fails every attempt is dead; 410 disables the webhook at once', async () => {
    rx.received.length = 0;
    rx.behaviour = () => ({ status: 500 });
    const h = await hook({ url: rx.url, events: ['insert'], table: 'notes' });
    expect((await call('POST', '/db/tables/notes/rows', { data: { n: 1 } })).status).toBe(201);
    const [d] = await until(() => deliveries(h.id), (d) => d[0]?.status === 'dead');
    expect(d).toMatchObject({ status: 'dead', attempts: 10, response_status: 500, error: 'the target answered 500' });
    expect((await call('GET', `/webhooks/${h.id}`)).body).toMatchObject({ enabled: true, failure_count: 1 });
    rx.behaviour = () => ({ status: 410 });
    expect((await call('POST', '/db/tables/notes/rows', { data: { n: 2 } })).status).toBe(201);
    const d2 = await until(() => deliveries(h.id), (d) => d.length === 2 && d[0]!.status !== 'pending');
    expect(d2[0]).toMatchObject({ status: 'failed', attempts: 1, response_status: 410 });
    expect((await call('GET', `/webhooks/${h.id}`)).body).toMatchObject({ enabled: false, disabled_reason: 'the target answered 410 Gone' });
    // Disabled: changes no longer make deliveries.
    const before = rx.received.length;
    expect((await call('POST', '/db/tables/notes/rows', { data: { n: 3 } })).status).toBe(201);
    await new Promise((r) => setTimeout(r, 150));
    expect((await deliveries(h.id)).length).toBe(2);
    expect(rx.received.length).toBe(before);
    expect((await call('DELETE', `/webhooks/${h.id}`)).status).toBe(204);
  });

  it('five dead deliveries in a row disable the webhook', async () => {
    rx.received.length = 0;
    rx.behaviour = () => ({ status: 500 });
    const h = await hook({ url: rx.url, events: ['insert'], table: 'notes' });
    for (let i = 0; i < 5; i++) expect((await call('POST', '/db/tables/notes/rows', { data: { i } })).status).toBe(201);
    const w = await until(() => call('GET', `/webhooks/${h.id}`), (r) => r.body.enabled === false, 15_000);
    expect(w.body).toMatchObject({ enabled: false, failure_count: 5, disabled_reason: '5 deliveries in a row failed every attempt' });
    expect((await deliveries(h.id, '?status=dead')).length).toBe(5);
    // Enabling again clears the count; a retried delivery goes out again.
    rx.behaviour = () => ({ status: 200 });
    const on = await call('PATCH', `/webhooks/${h.id}`, { enabled: true });
    expect(on.body).toMatchObject({ enabled: true, failure_count: 0, disabled_reason: null });
    const dead = (await deliveries(h.id, '?status=dead'))[0]!;
    const retry = await call('POST', `/webhooks/${h.id}/deliveries/${dead.id}/retry`);
    expect(retry.status, retry.text).toBe(202);
    expect(retry.body).toMatchObject({ id: dead.id, status: 'pending', attempts: 0 });
    const n = rx.received.length;
    await rx.waitFor(n + 1);
    expect(rx.received[n]!.headers['webhook-id']).toBe(dead.id);
    await until(() => deliveries(h.id, '?status=delivered'), (d) => d.length === 1);
    expect((await call('DELETE', `/webhooks/${h.id}`)).status).toBe(204);
  });

  it('Retry-After is honoured (up to the cap)', async () => {
    rx.received.length = 0;
    rx.behaviour = (n) => (n === 0 ? { status: 429, headers: { 'retry-after': '3600' } } : { status: 200 });
    const h = await hook({ url: rx.url, events: ['insert'], table: 'notes' });
    expect((await call('POST', '/db/tables/notes/rows', { data: {} })).status).toBe(201);
    // The cap is 60 ms here: an hour's Retry-After waits 60 ms, then the second attempt succeeds.
    await rx.waitFor(2);
    const [d] = await until(() => deliveries(h.id), (d) => d[0]?.status === 'delivered');
    expect(d).toMatchObject({ attempts: 2, response_status: 200 });
    expect((await call('DELETE', `/webhooks/${h.id}`)).status).toBe(204);
  });

  it('filters on the row: a delete is matched on the old row', async () => {
    rx.received.length = 0;
    rx.behaviour = () => ({ status: 200 });
    const h = await hook({ url: rx.url, events: ['insert', 'delete'], table: 'items', filter: ['qty.gte.10', 'title.like.big*'] });
    rx.secrets = [h.secret];
    const a = (await call('POST', '/db/tables/items/rows', { data: { title: 'big one', qty: 10 } })).body;
    await call('POST', '/db/tables/items/rows', { data: { title: 'big two', qty: 9 } });
    await call('POST', '/db/tables/items/rows', { data: { title: 'small', qty: 50 } });
    expect((await call('DELETE', `/db/tables/items/rows/${a.id}`)).status).toBe(204);
    const got = await rx.waitFor(2);
    await new Promise((r) => setTimeout(r, 100));
    expect(rx.received.length).toBe(2);
    expect(got.map((r) => [JSON.parse(r.body).type, (JSON.parse(r.body).record ?? JSON.parse(r.body).old_record).data.title])).toEqual([
      ['db.insert', 'big one'],
      ['db.delete', 'big one'],
    ]);
    expect((await call('DELETE', `/webhooks/${h.id}`)).status).toBe(204);
  });
});

describe('filter: the rows API grammar, as on a list', () => {
  it('takes the query-string form with or= and a JSON path, and matches what the same list returns', async () => {
    rx.received.length = 0;
    rx.behaviour = () => ({ status: 200 });
    const filter = 'filter=meta.kind.eq.a&or=(n.gt.5,tag.eq.x%20y)';
    const h = await hook({ url: rx.url, events: ['insert'], table: 'notes', filter });
    rx.secrets = [h.secret];
    const rows = [
      { meta: { kind: 'a' }, n: 9, tag: 'no', name: 'r1' }, // kind a, n > 5: yes
      { meta: { kind: 'a' }, n: 1, tag: 'x y', name: 'r2' }, // kind a, tag: yes
      { meta: { kind: 'a' }, n: 1, tag: 'no', name: 'r3' }, // neither or member
      { meta: { kind: 'b' }, n: 9, tag: 'x y', name: 'r4' }, // kind b
      { meta: 'a', n: 9, name: 'r5' }, // no meta.kind
    ];
    for (const data of rows) expect((await call('POST', '/db/tables/notes/rows', { data })).status).toBe(201);
    const got = await rx.waitFor(2);
    await new Promise((r) => setTimeout(r, 100));
    expect(rx.received.length).toBe(2);
    expect(got.map((r) => JSON.parse(r.body).record.data.name)).toEqual(['r1', 'r2']);
    const list = await call('GET', `/db/tables/notes/rows?${filter}&filter=name.like.r*`);
    expect(list.status, list.text).toBe(200);
    expect(list.body.rows.map((r: { data: { name: string } }) => r.data.name)).toEqual(['r1', 'r2']);
  });

  it('an update is matched on the new row; PATCH of the filter applies to later changes', async () => {
    rx.received.length = 0;
    rx.behaviour = () => ({ status: 200 });
    const h = await hook({ url: rx.url, events: ['update'], table: 'items', filter: 'or=(qty.eq.1,title.is.null)' });
    rx.secrets = [h.secret];
    const a = (await call('POST', '/db/tables/items/rows', { data: { title: 't', qty: 5 } })).body;
    expect((await call('PATCH', `/db/tables/items/rows/${a.id}`, { data: { qty: 1 } })).status).toBe(200); // yes
    expect((await call('PATCH', `/db/tables/items/rows/${a.id}`, { data: { qty: 2 } })).status).toBe(200); // no
    expect((await call('PATCH', `/db/tables/items/rows/${a.id}`, { data: { title: null } })).status).toBe(200); // yes
    const got = await rx.waitFor(2);
    expect(got.map((r) => JSON.parse(r.body).record.data)).toEqual([
      { title: 't', qty: 1 },
      { title: null, qty: 2 },
    ]);
    const p = await call('PATCH', `/webhooks/${h.id}`, { filter: ['qty.eq.7'] });
    expect(p.status, p.text).toBe(200);
    expect(p.body.filter).toEqual(['qty.eq.7']);
    expect((await call('PATCH', `/db/tables/items/rows/${a.id}`, { data: { qty: 1 } })).status).toBe(200); // no longer
    expect((await call('PATCH', `/db/tables/items/rows/${a.id}`, { data: { qty: 7 } })).status).toBe(200); // yes
    const more = await rx.waitFor(3);
    await new Promise((r) => setTimeout(r, 100));
    expect(rx.received.length).toBe(3);
    expect(JSON.parse(more[2]!.body).record.data).toEqual({ title: null, qty: 7 });
  });
});

describe('test delivery', () => {
  it('POST /webhooks/dispatch sends one signed attempt with "test": true and answers the delivery entry', async () => {
    rx.received.length = 0;
    rx.behaviour = () => ({ status: 200 });
    const h = await hook({ url: rx.url, events: ['insert'] });
    rx.secrets = [h.secret];
    const r = await call('POST', '/webhooks/dispatch', { webhook_id: h.id });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ type: 'db.insert', status: 'delivered', attempts: 1, response_status: 200, error: null });
    expect(rx.received.length).toBe(1);
    const body = JSON.parse(rx.received[0]!.body);
    expect(body).toEqual({ id: r.body.id, type: 'db.insert', table: 'test', record: {}, old_record: null, occurred_at: body.occurred_at, test: true });
    expect(rx.received[0]!.verifyError).toBeNull();
    const custom = await call('POST', '/webhooks/dispatch', { webhook_id: h.id, type: 'delete', table: 'items', record: { a: 1 } });
    expect(custom.body.type).toBe('db.delete');
    expect(JSON.parse(rx.received[1]!.body)).toMatchObject({ type: 'db.delete', table: 'items', record: { a: 1 }, test: true });
    // A failing target shows in the entry; the test delivery is not retried and changes nothing.
    rx.behaviour = () => ({ status: 410 });
    const bad = await call('POST', '/webhooks/dispatch', { webhook_id: h.id });
    expect(bad.status).toBe(200);
    expect(bad.body).toMatchObject({ status: 'failed', attempts: 1, response_status: 410, error: 'the target answered 410' });
    expect((await call('GET', `/webhooks/${h.id}`)).body).toMatchObject({ enabled: true, failure_count: 0 });
    // Test deliveries are in the log, and are not retried.
    const log = await deliveries(h.id);
    expect(log.map((d) => d.id)).toEqual([bad.body.id, custom.body.id, r.body.id]);
    const again = await call('POST', `/webhooks/${h.id}/deliveries/${bad.body.id}/retry`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');
    expect((await call('POST', '/webhooks/dispatch', { webhook_id: 'nope' })).status).toBe(404);
    const unknownType = await call('POST', '/webhooks/dispatch', { webhook_id: h.id, type: 'db.truncate' });
    expect(unknownType.status).toBe(400);
    expect((await errorOf(await s.req('/webhooks/dispatch', { method: 'POST', key: s.keys.publishable, headers: JSON_H, body: '{}' }))).code).toBe('forbidden');
    expect((await call('DELETE', `/webhooks/${h.id}`)).status).toBe(204);
  });
});

describe('bad targets', () => {
  it('a target that hangs times out (the attempt limit is a setting) and is retried; the next answer delivers', async () => {
    rx.received.length = 0;
    // The first request never gets an answer (a target hanging for 30 s and more).
    rx.behaviour = (n) => (n === 0 ? 'handled' : { status: 200 });
    const h = await hook({ url: rx.url, events: ['insert'], table: 'notes' });
    expect((await call('POST', '/db/tables/notes/rows', { data: {} })).status).toBe(201);
    const got = await rx.waitFor(2);
    expect(got[1]!.headers['webhook-id']).toBe(got[0]!.headers['webhook-id']);
    const [d] = await until(() => deliveries(h.id), (d) => d[0]?.status === 'delivered');
    expect(d).toMatchObject({ attempts: 2, response_status: 200, error: null });
    expect((await call('DELETE', `/webhooks/${h.id}`)).status).toBe(204);
  });

  it('the log shows the timeout while the delivery waits for its next attempt', async () => {
    rx.received.length = 0;
    rx.behaviour = () => 'handled';
    const t = await startTestServer({ webhookRetryBaseMs: 60_000, webhookRetryCapMs: 60_000, webhookTimeoutMs: 200 });
    try {
      expect((await call('POST', '/db/tables', { name: 'n', type: 'document' }, t.keys.service, t)).status).toBe(201);
      const h = (await call('POST', '/webhooks', { url: rx.url, events: ['insert'] }, t.keys.service, t)).body;
      expect((await call('POST', '/db/tables/n/rows', { data: {} }, t.keys.service, t)).status).toBe(201);
      const log = await until(
        async () => (await call('GET', `/webhooks/${h.id}/deliveries`, undefined, t.keys.service, t)).body.deliveries,
        (d: { attempts: number; next_attempt_at: string; created_at: string }[]) => d[0]?.attempts === 1,
      );
      expect(log[0]).toMatchObject({ status: 'pending', attempts: 1, response_status: null, error: 'provider_timeout: the request took longer than 200 ms' });
      expect(Date.parse(log[0]!.next_attempt_at) - Date.parse(log[0]!.created_at)).toBeGreaterThanOrEqual(60_000);
    } finally {
      await t.close();
    }
  });

  it('a 10 MB answer is read up to the cap: the status counts and the delivery is done', async () => {
    rx.received.length = 0;
    rx.behaviour = (_n, _r, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(10 * 1024 * 1024) });
      const chunk = Buffer.alloc(64 * 1024, 120);
      let sent = 0;
      const more = (): void => {
        while (sent < 160) {
          sent++;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      res.on('error', () => {});
      more();
      return 'handled';
    };
    const h = await hook({ url: rx.url, events: ['insert'], table: 'notes' });
    expect((await call('POST', '/db/tables/notes/rows', { data: {} })).status).toBe(201);
    const [d] = await until(() => deliveries(h.id), (d) => d[0]?.status !== undefined && d[0].status !== 'pending');
    expect(d).toMatchObject({ status: 'delivered', attempts: 1, response_status: 200, error: null });
    expect(rx.received.length).toBe(1);
    expect((await call('DELETE', `/webhooks/${h.id}`)).status).toBe(204);
  });

  it('a TLS failure is retried and shown in the log', async () => {
    rx.received.length = 0;
    rx.behaviour = () => ({ status: 200 });
    // https:// to a plain-HTTP port: the handshake fails.
    const h = await hook({ url: `https://127.0.0.1:${rx.port}/hook`, events: ['insert'], table: 'notes' });
    expect((await call('POST', '/db/tables/notes/rows', { data: {} })).status).toBe(201);
    const [d] = await until(() => deliveries(h.id), (d) => (d[0]?.attempts ?? 0) >= 2);
    expect(d!.error).toMatch(/^provider_unreachable: the TLS handshake with 127\.0\.0\.1 failed/);
    expect(d!.response_status).toBeNull();
    expect((await call('DELETE', `/webhooks/${h.id}`)).status).toBe(204);
  });

  it('a redirect is not followed: it counts as a failed attempt', async () => {
    rx.received.length = 0;
    rx.behaviour = (n) => (n === 0 ? { status: 302, headers: { location: `${rx.url}?moved` } } : { status: 200 });
    const h = await hook({ url: rx.url, events: ['insert'], table: 'notes' });
    expect((await call('POST', '/db/tables/notes/rows', { data: {} })).status).toBe(201);
    const got = await rx.waitFor(2);
    expect(got.map((r) => r.headers['webhook-id'])).toEqual([got[0]!.headers['webhook-id'], got[0]!.headers['webhook-id']]);
    const [d] = await until(() => deliveries(h.id), (d) => d[0]?.status === 'delivered');
    expect(d).toMatchObject({ attempts: 2 });
    expect((await call('DELETE', `/webhooks/${h.id}`)).status).toBe(204);
  });

  it('the delivery log pages and filters by status', async () => {
    rx.received.length = 0;
    rx.behaviour = () => ({ status: 200 });
    const h = await hook({ url: rx.url, events: ['insert'], table: 'notes' });
    for (let i = 0; i < 3; i++) expect((await call('POST', '/db/tables/notes/rows', { data: { i } })).status).toBe(201);
    await until(() => deliveries(h.id, '?status=delivered'), (d) => d.length === 3);
    const page = await call('GET', `/webhooks/${h.id}/deliveries?limit=2`);
    expect(page.body).toMatchObject({ limit: 2, offset: 0, next_offset: 2 });
    expect(page.body.deliveries).toHaveLength(2);
    const rest = await call('GET', `/webhooks/${h.id}/deliveries?limit=2&offset=2`);
    expect(rest.body).toMatchObject({ limit: 2, offset: 2, next_offset: null });
    expect(rest.body.deliveries).toHaveLength(1);
    expect((await call('GET', `/webhooks/${h.id}/deliveries?status=dead`)).body.deliveries).toEqual([]);
    expect((await call('GET', `/webhooks/${h.id}/deliveries?status=nope`)).status).toBe(400);
    expect((await call('GET', `/webhooks/${h.id}/deliveries?limit=5000`)).status).toBe(400);
    expect((await call('GET', '/webhooks/nope/deliveries')).status).toBe(404);
    expect((await call('POST', `/webhooks/${h.id}/deliveries/nope/retry`)).status).toBe(404);
    expect((await call('DELETE', `/webhooks/${h.id}`)).status).toBe(204);
  });
});

describe('other write paths', () => {
  it('changes made by raw SQL are delivered like rows-API changes', async () => {
    rx.received.length = 0;
    rx.behaviour = () => ({ status: 200 });
    const h = await hook({ url: rx.url, events: ['insert', 'update'], table: 'items' });
    rx.secrets = [h.secret];
    const id = '0193a000-0000-7000-8000-000000000001';
    const at = '2026-01-02T03:04:05.006Z';
    const q = await call('POST', '/db/query', { sql: `insert into items (id, title, qty, created_at, updated_at) values ($1, 'sql', 7, $2, $2)`, params: [id, at] });
    expect(q.status, q.text).toBe(200);
    const [got] = await rx.waitFor(1);
    expect(got!.verifyError).toBeNull();
    const body = JSON.parse(got!.body);
    expect(body).toMatchObject({ type: 'db.insert', table: 'items', record: { id, data: { title: 'sql', qty: 7 }, created_at: at, updated_at: at }, old_record: null });
    expect((await call('DELETE', `/webhooks/${h.id}`)).status).toBe(204);
  });
});
