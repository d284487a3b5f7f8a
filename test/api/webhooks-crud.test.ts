import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let rx: Receiver;
const JSON_H = { 'content-type': 'application/json' };

async function call(method: string, path: string, body?: unknown, key: string | null = s.keys.service, server: TestServer = s) {
  const res = await server.req(path, { method, key, headers: body === undefined ? {} : JSON_H, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}

beforeAll(async () => {
  s = await startTestServer();
  rx = await startReceiver();
  const r = await call('POST', '/db/tables', { name: 'items', type: 'relational', columns: [{ name: 'title', type: 'text' }] });
  expect(r.status, r.text).toBe(201);
  expect((await call('POST', '/db/tables', { name: 'docs', type: 'document' })).status).toBe(201);
});
afterAll(async () => {
  await s.close();
  await rx.close();
});

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('CRUD', () => {
  it('creates, lists, reads, updates and deletes a webhook; the secret is shown once', async () => {
    const c = await call('POST', '/webhooks', { url: 'https://example.com/hook', events: ['insert', 'db.delete', 'insert'], table: 'items', description: 'mine' });
    expect(c.status, c.text).toBe(201);
    const { secret, ...record } = c.body;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64').length).toBe(32);
    expect(Object.keys(record).sort()).toEqual(
      ['created_at', 'description', 'disabled_reason', 'enabled', 'events', 'failure_count', 'filter', 'id', 'table', 'updated_at', 'url'].sort(),
    );
    expect(record).toMatchObject({
      url: 'https://example.com/hook',
      events: ['db.insert', 'db.delete'],
      table: 'items',
      filter: null,
      enabled: true,
      description: 'mine',
      failure_count: 0,
      disabled_reason: null,
    });
    expect(record.created_at).toMatch(ISO);
    const list = await call('GET', '/webhooks');
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ webhooks: [record] });
    expect((await call('GET', `/webhooks/${record.id}`)).body).toEqual(record);
    const p = await call('PATCH', `/webhooks/${record.id}`, { events: ['update'], filter: ['title.eq.x'], description: null });
    expect(p.status, p.text).toBe(200);
    expect(p.body).toMatchObject({ events: ['db.update'], filter: ['title.eq.x'], description: null, table: 'items' });
    expect(JSON.stringify(p.body)).not.toContain('whsec_');
    expect((await call('DELETE', `/webhooks/${record.id}`)).status).toBe(204);
    expect((await call('GET', `/webhooks/${record.id}`)).status).toBe(404);
    expect((await call('DELETE', `/webhooks/${record.id}`)).status).toBe(404);
    expect((await call('GET', '/webhooks')).body).toEqual({ webhooks: [] });
  });

  it('needs the service role: a publishable key is 403, no key 401', async () => {
    const pub = await call('GET', '/webhooks', undefined, s.keys.publishable);
    expect(pub.status).toBe(403);
    expect(pub.body.error.code).toBe('forbidden');
    expect((await call('POST', '/webhooks', { url: 'https://example.com', events: ['insert'] }, s.keys.publishable)).status).toBe(403);
    expect((await call('GET', '/webhooks', undefined, null)).status).toBe(401);
  });

  it('an operator session with X-Service-Project acts with the service role', async () => {
    const headers = { authorization: `Bearer ${s.operatorToken}`, 'x-service-project': s.projectId, 'content-type': 'application/json' };
    const c = await s.req('/webhooks', { method: 'POST', key: null, headers, body: JSON.stringify({ url: 'https://example.com/op', events: ['update'] }) });
    expect(c.status).toBe(201);
    const id = ((await c.json()) as { id: string }).id;
    const list = await s.req('/webhooks', { key: null, headers });
    expect(((await list.json()) as { webhooks: { id: string }[] }).webhooks.map((w) => w.id)).toEqual([id]);
    expect((await s.req(`/webhooks/${id}`, { method: 'DELETE', key: null, headers })).status).toBe(204);
  });

  it.each([
    [{ events: ['insert'] }, 'url'],
    [{ url: 'https://example.com' }, 'events'],
    [{ url: 'https://example.com', events: [] }, 'events'],
    [{ url: 'https://example.com', events: ['db.truncate'] }, 'events'],
    [{ url: 'https://example.com', events: ['INSERT'] }, 'events'],
    [{ url: 'https://example.com', events: 'insert' }, 'events'],
    [{ url: 'https://example.com', events: ['insert'], table: 'nope' }, 'table'],
    [{ url: 'https://example.com', events: ['insert'], table: '_svc_webhooks.webhooks' }, 'table'],
    [{ url: 'https://example.com', events: ['insert'], table: '_svc_meta.change_log' }, 'table'],
    [{ url: 'https://example.com', events: ['insert'], filter: ['title.eq.x'] }, 'filter'],
    [{ url: 'https://example.com', events: ['insert'], table: 'items', filter: ['nope.eq.x'] }, 'filter'],
    [{ url: 'https://example.com', events: ['insert'], table: 'items', filter: ['title.regex.x'] }, 'filter'],
    [{ url: 'https://example.com', events: ['insert'], table: 'items', filter: 'title.eq.x' }, 'filter'],
    [{ url: 'https://example.com', events: ['insert'], table: 'items', filter: 'title=eq.x' }, 'filter'],
    [{ url: 'https://example.com', events: ['insert'], table: 'items', filter: 'filter=title.eq.x&order=title' }, 'filter'],
    [{ url: 'https://example.com', events: ['insert'], table: 'items', filter: 'or=(title.eq.x,nope.eq.1)' }, 'filter'],
    [{ url: 'https://example.com', events: ['insert'], table: 'items', filter: 'filter=title.x.eq.1' }, 'filter'],
    [{ url: 'https://example.com', events: ['insert'], table: 'items', filter: 5 }, 'filter'],
    [{ url: 'https://example.com', events: ['insert'], description: 5 }, 'description'],
    [{ url: 'https://example.com', events: ['insert'], secret: 'whsec_AAAA' }, 'secret'],
  ])('refuses %j with 400 invalid_field naming %s', async (body, field) => {
    const r = await call('POST', '/webhooks', body);
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.code).toBe('invalid_field');
    expect(r.body.error.details).toEqual({ field });
  });

  it('a document table takes filters on any field path', async () => {
    const r = await call('POST', '/webhooks', { url: 'https://example.com', events: ['insert'], table: 'docs', filter: ['a.b.eq.1'] });
    expect(r.status, r.text).toBe(201);
    expect((await call('DELETE', `/webhooks/${r.body.id}`)).status).toBe(204);
  });

  it('the query-string form is kept and shown as given', async () => {
    const filter = 'filter=title.like.a*&or=(title.eq.x,id.gt.5)';
    const r = await call('POST', '/webhooks', { url: 'https://example.com', events: ['insert'], table: 'items', filter });
    expect(r.status, r.text).toBe(201);
    expect(r.body.filter).toBe(filter);
    expect((await call('GET', `/webhooks/${r.body.id}`)).body.filter).toBe(filter);
    expect((await call('PATCH', `/webhooks/${r.body.id}`, { filter: null })).body.filter).toBeNull();
    expect((await call('DELETE', `/webhooks/${r.body.id}`)).status).toBe(204);
  });

  it('PATCH checks like POST; unknown webhook 404; non-JSON 400', async () => {
    const c = await call('POST', '/webhooks', { url: 'https://example.com', events: ['insert'] });
    expect((await call('PATCH', `/webhooks/${c.body.id}`, { url: 'http://example.com' })).status).toBe(400);
    expect((await call('PATCH', `/webhooks/${c.body.id}`, { events: ['nope'] })).status).toBe(400);
    expect((await call('PATCH', `/webhooks/${c.body.id}`, { enabled: 'yes' })).status).toBe(400);
    expect((await call('PATCH', '/webhooks/nope', { enabled: false })).status).toBe(404);
    const raw = await s.req('/webhooks', { method: 'POST', key: s.keys.service, headers: JSON_H, body: '{"url":' });
    expect(raw.status).toBe(400);
    expect((await errorOf(raw)).code).toBe('invalid_body');
    const off = await call('PATCH', `/webhooks/${c.body.id}`, { enabled: false });
    expect(off.body).toMatchObject({ enabled: false, disabled_reason: 'disabled by request' });
    expect((await call('DELETE', `/webhooks/${c.body.id}`)).status).toBe(204);
  });
});

describe('URL rule (SSRF)', () => {
  it.each([
    'https://example.com/hook',
    'https://example.com:8443/a?b=c',
    'http://127.0.0.1:9/hook',
    'http://localhost:9/hook',
    'http://[::1]:9/hook',
    'https://localhost/hook',
  ])('accepts %s', async (url) => {
    const r = await call('POST', '/webhooks', { url, events: ['insert'] });
    expect(r.status, r.text).toBe(201);
    expect(r.body.url).toBe(url);
    expect((await call('DELETE', `/webhooks/${r.body.id}`)).status).toBe(204);
  });

  it.each([
    'http://example.com/hook',
    'ftp://example.com/x',
    'javascript:alert(1)',
    'file:///etc/passwd',
    '//example.com/x',
    'example.com',
    'http://127.1/',
    'http://2130706433/',
    'http://0x7f.0.0.1/',
    'http://0177.0.0.1/',
    'http://127.0.0.2/',
    'http://0.0.0.0/',
    'https://0.0.0.0/',
    'http://[::ffff:127.0.0.1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://[::ffff:7f00:1]/',
    'http://%6c%6fcalhost/',
    'http://LOCALHOST./',
    'https://localhost./',
    'https://foo.localhost/',
    'https://10.0.0.1/',
    'https://172.16.5.4/',
    'https://192.168.1.1/',
    'https://100.64.0.1/',
    'https://169.254.169.254/latest/meta-data/',
    'https://[fd00::1]/',
    'https://[fe80::1]/',
    'https://[::]/',
    'https://[64:ff9b::a9fe:a9fe]/',
    'https://[2002:7f00:1::]/',
    'https://user:pw@example.com/',
    'https://example.com@127.0.0.1/',
    'https://exa mple.com/',
    'https://example.com\\@127.0.0.1/',
    'https://224.0.0.1/',
    'https://255.255.255.255/',
  ])('refuses %s with 400 invalid_field url', async (url) => {
    const r = await call('POST', '/webhooks', { url, events: ['insert'] });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'invalid_field', details: { field: 'url' } });
  });
});

describe('secret rotation', () => {
  it('signs with both secrets during the overlap; each verifies with standardwebhooks', async () => {
    rx.received.length = 0;
    const c = await call('POST', '/webhooks', { url: rx.url, events: ['insert'], table: 'items' });
    const old = c.body.secret as string;
    const rot = await call('POST', `/webhooks/${c.body.id}/rotate-secret`);
    expect(rot.status, rot.text).toBe(200);
    const fresh = rot.body.secret as string;
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(old);
    expect(rot.body.id).toBe(c.body.id);
    expect((await call('POST', '/db/tables/items/rows', { data: { title: 'r' } })).status).toBe(201);
    const [got] = await rx.waitFor(1);
    const headers = got!.headers as Record<string, string>;
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new Webhook(fresh).verify(got!.body, headers)).toMatchObject({ type: 'db.insert', table: 'items' });
    expect(new Webhook(old).verify(got!.body, headers)).toMatchObject({ type: 'db.insert', table: 'items' });
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(got!.body, headers)).toThrow();
    expect((await call('POST', '/webhooks/nope/rotate-secret')).status).toBe(404);
    expect((await call('DELETE', `/webhooks/${c.body.id}`)).status).toBe(204);
  });

  it('after the overlap only the new secret signs', async () => {
    const t = await startTestServer({ webhookSecretOverlapS: 0 });
    try {
      rx.received.length = 0;
      expect((await call('POST', '/db/tables', { name: 'items', type: 'document' }, t.keys.service, t)).status).toBe(201);
      const c = await call('POST', '/webhooks', { url: rx.url, events: ['insert'] }, t.keys.service, t);
      const old = c.body.secret as string;
      const fresh = (await call('POST', `/webhooks/${c.body.id}/rotate-secret`, undefined, t.keys.service, t)).body.secret as string;
      expect((await call('POST', '/db/tables/items/rows', { data: {} }, t.keys.service, t)).status).toBe(201);
      const [got] = await rx.waitFor(1);
      const headers = got!.headers as Record<string, string>;
      expect(headers['webhook-signature']!.split(' ')).toHaveLength(1);
      expect(new Webhook(fresh).verify(got!.body, headers)).toMatchObject({ type: 'db.insert' });
      expect(() => new Webhook(old).verify(got!.body, headers)).toThrow();
    } finally {
      await t.close();
    }
  });
});

describe('reserved _svc_webhooks schema', () => {
  it('is out of reach of the rows API and SQL, even with the service key', async () => {
    const c = await call('POST', '/webhooks', { url: 'https://example.com', events: ['insert'] });
    expect(c.status).toBe(201);
    for (const path of ['/db/tables/_svc_webhooks.webhooks/rows', '/db/tables/"_svc_webhooks.webhooks"/rows', '/db/tables/_svc_webhooks.deliveries/rows']) {
      const r = await call('GET', path);
      expect(r.status, path).toBe(400);
    }
    expect((await call('POST', '/db/tables', { name: '_svc_webhooks.x', type: 'document' })).status).toBe(400);
    const tables = (await call('GET', '/db/tables')).body.tables.map((t: { name: string }) => t.name);
    expect(tables.some((n: string) => n.includes('webhook'))).toBe(false);
    for (const sql of [
      'select * from _svc_webhooks.webhooks',
      'select secret from "_svc_webhooks.webhooks"',
      'select * from "_svc_webhooks"."deliveries"',
      `insert into _svc_webhooks.webhooks (id) values ('x')`,
      'delete from _svc_webhooks.deliveries',
      'drop table _svc_webhooks.webhooks',
    ]) {
      for (const key of [s.keys.service, s.keys.publishable]) {
        const r = await call('POST', '/db/query', { sql }, key);
        expect([400, 401], `${sql}: ${r.text}`).toContain(r.status);
        expect(r.text).not.toContain('whsec_');
      }
    }
    const gql = await call('POST', '/db/graphql', { query: '{ __schema { queryType { fields { name } } } }' });
    expect(gql.status, gql.text).toBe(200);
    expect(gql.text).not.toMatch(/webhook/i);
    expect((await call('GET', '/webhooks')).body.webhooks).toHaveLength(1);
    expect((await call('DELETE', `/webhooks/${c.body.id}`)).status).toBe(204);
  });
});
