import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };

async function call(method: string, path: string, body?: unknown, key?: string | null, headers: Record<string, string> = {}) {
  const res = await s.req(path, {
    method,
    key,
    headers: { ...(body === undefined ? {} : JSON_H), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}

const createTable = (def: unknown) => call('POST', '/db/tables', def, s.keys.service);

beforeAll(async () => {
  s = await startTestServer();
  expect((await createTable({ name: 'notes', type: 'document', indexes: [{ columns: ['owner'] }] })).status).toBe(201);
  const r = await createTable({
    name: 'items',
    type: 'relational',
    columns: [
      { name: 'title', type: 'text', nullable: false },
      { name: 'qty', type: 'int8', default: 1 },
      { name: 'price', type: 'float8' },
      { name: 'done', type: 'bool', default: false },
      { name: 'due', type: 'timestamptz' },
      { name: 'meta', type: 'jsonb' },
      { name: 'ref', type: 'uuid' },
      { name: 'blob', type: 'bytea' },
      { name: 'sku', type: 'text', unique: true },
    ],
    indexes: [{ columns: ['qty'] }],
  });
  expect(r.status, r.text).toBe(201);
});
afterAll(() => s.close());

describe('tables', () => {
  it('lists tables with kind and columns, including profiles', async () => {
    const r = await call('GET', '/db/tables');
    expect(r.status).toBe(200);
    const names = r.body.tables.map((t: { name: string }) => t.name);
    expect([...names].sort()).toEqual(['items', 'notes', 'profiles']);
    const items = r.body.tables.find((t: { name: string }) => t.name === 'items');
    expect(items.type).toBe('relational');
    expect(items.columns.map((c: { name: string }) => c.name)).toEqual([
      'id', 'title', 'qty', 'price', 'done', 'due', 'meta', 'ref', 'blob', 'sku', 'created_at', 'updated_at',
    ]);
    const profiles = r.body.tables.find((t: { name: string }) => t.name === 'profiles');
    expect(profiles).toMatchObject({ type: 'relational', rls_enabled: true });
    expect(profiles.columns.map((c: { name: string }) => c.name)).toEqual(['id', 'name', 'created_at', 'updated_at']);
  });

  it('creating a table needs the service role', async () => {
    const r = await call('POST', '/db/tables', { name: 'x1' });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('forbidden');
  });

  it('operator session may create and drop', async () => {
    const h = { authorization: `Bearer ${s.operatorToken}`, 'x-service-project': s.projectId };
    expect((await call('POST', '/db/tables', { name: 'op_t' }, null, h)).status).toBe(201);
    expect((await call('DELETE', '/db/tables/op_t', undefined, null, h)).status).toBe(204);
  });

  it('rejects a duplicate table with 409', async () => {
    const r = await createTable({ name: 'notes' });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('conflict');
  });

  it.each([
    [{ name: 'Bad' }, 'name'],
    [{ name: '_svc_meta' }, 'name'],
    [{ name: 'sqlite_x' }, 'name'],
    [{ name: 'a'.repeat(64) }, 'name'],
    [{ name: 'pg_x' }, 'name'],
    [{ name: '_svcx' }, 'name'],
    [{ name: '1abc' }, 'name'],
    [{ name: 'ok1', type: 'graph' }, 'type'],
    [{ name: 'ok1', type: 'relational', columns: [{ name: 'id', type: 'text' }] }, 'columns[0].name'],
    [{ name: 'ok1', type: 'relational', columns: [{ name: 'x', type: 'varchar' }] }, 'columns[0].type'],
    [{ name: 'ok1', type: 'relational', columns: [{ name: 'x', type: 'int8', default: 'abc' }] }, 'columns[0].default'],
    [{ name: 'ok1', type: 'relational', columns: [{ name: 'x', type: 'uuid', references: { table: 'nope' } }] }, 'columns[0].references.table'],
    [{ name: 'ok1', type: 'relational', columns: [{ name: 'x', type: 'text' }], indexes: [{ columns: ['y'] }] }, 'indexes[0].columns'],
    [{ name: 'ok1', type: 'document', columns: [{ name: 'x', type: 'text' }] }, 'columns'],
  ])('invalid table body %j → 400 naming %s', async (body, field) => {
    const r = await createTable(body);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_field');
    expect(r.body.error.details.field).toBe(field);
  });

  it('takes a name of 63 characters, and names that only contain the reserved prefixes', async () => {
    for (const name of ['t'.repeat(63), '_x', 'a_svc', 'my_pg_t', 'sqlite']) {
      const r = await createTable({ name });
      expect(r.status, `${name}: ${r.text}`).toBe(201);
      expect(r.body.name).toBe(name);
    }
  });

  it('drops a table (service only) and 404s afterwards', async () => {
    expect((await createTable({ name: 'tmp_drop' })).status).toBe(201);
    expect((await call('DELETE', '/db/tables/tmp_drop')).status).toBe(403);
    const d = await call('DELETE', '/db/tables/tmp_drop', undefined, s.keys.service);
    expect(d.status).toBe(204);
    expect(d.text).toBe('');
    expect((await call('GET', '/db/tables/tmp_drop/rows')).status).toBe(404);
    expect((await call('DELETE', '/db/tables/tmp_drop', undefined, s.keys.service)).status).toBe(404);
  });

  it('profiles cannot be dropped', async () => {
    expect((await call('DELETE', '/db/tables/profiles', undefined, s.keys.service)).status).toBe(403);
  });
});

describe('document rows', () => {
  it('CRUD round trip', async () => {
    const c = await call('POST', '/db/tables/notes/rows', { data: { title: 'a', n: 1, tags: ['x'] } });
    expect(c.status).toBe(201);
    expect(c.body).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), data: { title: 'a', n: 1, tags: ['x'] }, created_at: expect.any(String), updated_at: expect.any(String) });
    expect(c.body.id[14]).toBe('7');
    const g = await call('GET', `/db/tables/notes/rows/${c.body.id}`);
    expect(g.body).toEqual(c.body);
    const p = await call('PATCH', `/db/tables/notes/rows/${c.body.id}`, { data: { n: 2, title: null, extra: { a: 1 } } });
    expect(p.status).toBe(200);
    expect(p.body.data).toEqual({ n: 2, tags: ['x'], extra: { a: 1 } });
    const d = await call('DELETE', `/db/tables/notes/rows/${c.body.id}`);
    expect(d.status).toBe(204);
    expect(d.text).toBe('');
    expect((await call('GET', `/db/tables/notes/rows/${c.body.id}`)).status).toBe(404);
    expect((await call('PATCH', `/db/tables/notes/rows/${c.body.id}`, { data: {} })).status).toBe(404);
    expect((await call('DELETE', `/db/tables/notes/rows/${c.body.id}`)).status).toBe(404);
  });

  it('data must be an object', async () => {
    for (const data of [[1], 'x', 3, null]) {
      const r = await call('POST', '/db/tables/notes/rows', { data });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('invalid_field');
    }
    expect((await call('POST', '/db/tables/notes/rows', {})).status).toBe(400);
  });

  it('unknown table → 404, invalid table name → 400', async () => {
    expect((await call('GET', '/db/tables/nope/rows')).status).toBe(404);
    expect((await call('POST', '/db/tables/nope/rows', { data: {} })).status).toBe(404);
    expect((await call('GET', `/db/tables/${encodeURIComponent('notes;drop')}/rows`)).status).toBe(400);
  });
});

describe('relational rows', () => {
  const full = {
    title: 'Widget',
    qty: 3,
    price: 9.5,
    done: true,
    due: '2026-01-02T03:04:05.000Z',
    meta: { a: [1, 2], b: 'x' },
    ref: '0190a0e0-0000-7000-8000-000000000001',
    blob: Buffer.from([0, 1, 2, 255]).toString('base64'),
    sku: 'W-1',
  };

  it('round-trips every column type wrapped as data', async () => {
    const c = await call('POST', '/db/tables/items/rows', { data: full });
    expect(c.status, c.text).toBe(201);
    expect(c.body.data).toEqual(full);
    const g = await call('GET', `/db/tables/items/rows/${c.body.id}`);
    expect(g.body).toEqual(c.body);
  });

  it('applies column defaults and nulls', async () => {
    const c = await call('POST', '/db/tables/items/rows', { data: { title: 'Defaults' } });
    expect(c.status).toBe(201);
    expect(c.body.data).toMatchObject({ title: 'Defaults', qty: 1, done: false, price: null, meta: null, sku: null });
  });

  it('PATCH merges only the given columns', async () => {
    const c = await call('POST', '/db/tables/items/rows', { data: { title: 'P', qty: 5, sku: 'P-1' } });
    const p = await call('PATCH', `/db/tables/items/rows/${c.body.id}`, { data: { qty: 6 } });
    expect(p.status).toBe(200);
    expect(p.body.data).toMatchObject({ title: 'P', qty: 6, sku: 'P-1' });
    expect(p.body.updated_at >= c.body.updated_at).toBe(true);
    expect(p.body.created_at).toBe(c.body.created_at);
  });

  it.each([
    [{ title: 5 }, 'title'],
    [{ title: 'x', qty: 1.5 }, 'qty'],
    [{ title: 'x', qty: '3' }, 'qty'],
    [{ title: 'x', price: 'cheap' }, 'price'],
    [{ title: 'x', done: 'yes' }, 'done'],
    [{ title: 'x', due: 'tomorrow' }, 'due'],
    [{ title: 'x', ref: 'not-a-uuid' }, 'ref'],
    [{ title: 'x', blob: '***' }, 'blob'],
    [{ title: null }, 'title'],
    [{ qty: 1 }, 'title'],
    [{ title: 'x', nope: 1 }, 'nope'],
    [{ title: 'x', id: 'abc' }, 'id'],
    [{ title: 'x\ud800' }, 'title'],
  ])('typed validation %j → 400 invalid_field %s', async (data, field) => {
    const before = await call('GET', '/db/tables/items/rows?count=exact&limit=0');
    const r = await call('POST', '/db/tables/items/rows', { data });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_field');
    expect(r.body.error.details.field).toBe(field);
    expect((await call('GET', '/db/tables/items/rows?count=exact&limit=0')).body.total).toBe(before.body.total);
  });

  it('a unique violation is 409 and changes nothing', async () => {
    const a = await call('POST', '/db/tables/items/rows', { data: { title: 'U1', sku: 'U-1' } });
    const b = await call('POST', '/db/tables/items/rows', { data: { title: 'U2', sku: 'U-2' } });
    const dup = await call('POST', '/db/tables/items/rows', { data: { title: 'U3', sku: 'U-1' } });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('conflict');
    const upd = await call('PATCH', `/db/tables/items/rows/${b.body.id}`, { data: { sku: 'U-1', title: 'changed' } });
    expect(upd.status).toBe(409);
    expect((await call('GET', `/db/tables/items/rows/${b.body.id}`)).body).toEqual(b.body);
    expect((await call('GET', `/db/tables/items/rows/${a.body.id}`)).body).toEqual(a.body);
    expect((await call('GET', '/db/tables/items/rows?filter=title.eq.U3')).body.rows).toEqual([]);
  });

  it('foreign keys: reference, cascade, and the schema graph edge', async () => {
    expect((await createTable({ name: 'authors', type: 'relational', columns: [{ name: 'name', type: 'text' }] })).status).toBe(201);
    const bt = await createTable({
      name: 'books',
      type: 'relational',
      columns: [{ name: 'author_id', type: 'uuid', nullable: false, references: { table: 'authors', column: 'id', on_delete: 'cascade' } }],
    });
    expect(bt.status, bt.text).toBe(201);
    const a = await call('POST', '/db/tables/authors/rows', { data: { name: 'A' } });
    const bad = await call('POST', '/db/tables/books/rows', { data: { author_id: '0190a0e0-0000-7000-8000-000000000009' } });
    expect(bad.status).toBe(409);
    const b = await call('POST', '/db/tables/books/rows', { data: { author_id: a.body.id } });
    expect(b.status).toBe(201);
    const g = await call('GET', '/db/schema');
    expect(g.status).toBe(200);
    expect(g.body.edges).toContainEqual({ from: { table: 'books', column: 'author_id' }, to: { table: 'authors', column: 'id' }, on_delete: 'cascade' });
    const books = g.body.tables.find((t: { name: string }) => t.name === 'books');
    expect(books.primary_key).toEqual(['id']);
    expect(books.columns).toContainEqual({ name: 'author_id', type: 'uuid', nullable: false, primary_key: false });
    // the schema lists exactly the tables GET /db/tables does
    const listed = (await call('GET', '/db/tables')).body.tables.map((t: { name: string }) => t.name).sort();
    expect(listed).toEqual(expect.arrayContaining(['authors', 'books', 'profiles']));
    expect(g.body.tables.map((t: { name: string }) => t.name).sort()).toEqual(listed);
    expect((await call('DELETE', '/db/tables/authors', undefined, s.keys.service)).status).toBe(409);
    expect((await call('DELETE', `/db/tables/authors/rows/${a.body.id}`)).status).toBe(204);
    expect((await call('GET', `/db/tables/books/rows/${b.body.id}`)).status).toBe(404);
  });
});

describe('scopes', () => {
  it('a read-only key can read but not write (401 missing_scope); a write-only key cannot read', async () => {
    const ro = s.createKey(['data:read'], { name: 'ro' }).secret;
    const wo = s.createKey(['data:write'], { name: 'wo' }).secret;
    expect((await call('GET', '/db/tables/notes/rows', undefined, ro)).status).toBe(200);
    expect((await call('GET', '/db/schema', undefined, ro)).status).toBe(200);
    const w = await call('POST', '/db/tables/notes/rows', { data: {} }, ro);
    expect(w.status).toBe(401);
    expect(w.body.error).toMatchObject({ code: 'missing_scope', details: { scope: 'data:write' } });
    expect((await call('PATCH', '/db/tables/notes/rows/x', { data: {} }, ro)).status).toBe(401);
    expect((await call('DELETE', '/db/tables/notes/rows/x', undefined, ro)).status).toBe(401);
    expect((await call('GET', '/db/tables/notes/rows', undefined, wo)).status).toBe(401);
    expect((await call('POST', '/db/tables/notes/rows', { data: { w: 1 } }, wo)).status).toBe(201);
  });

  it('reads need data:read and writes data:write; no key → 401', async () => {
    expect((await call('GET', '/db/tables/notes/rows', undefined, null)).status).toBe(401);
    expect((await call('POST', '/db/tables/notes/rows', { data: {} }, null)).status).toBe(401);
    expect((await call('GET', '/db/schema', undefined, 'svc_live_bogus')).status).toBe(401);
  });
});
