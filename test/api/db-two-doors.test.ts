import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// One table, two doors: a table made through the rows API takes SQL as a table made by SQL
// does (docs/sql.md "One table, two doors").

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };
async function call(method: string, path: string, body?: unknown, key: string = s.keys.service) {
  const res = await s.req(path, { method, key, headers: body === undefined ? {} : JSON_H, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
const ok = async (sql: string, params: unknown[] = []) => {
  const r = await call('POST', '/db/query', { sql, params });
  expect(r.status, `${sql}: ${r.text}`).toBe(200);
  return r.body as { rows: Record<string, unknown>[]; row_count: number };
};
const UUID7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const OLD = '2020-01-01T00:00:00.000Z';

beforeAll(async () => {
  s = await startTestServer();
  expect((await call('POST', '/db/tables', { name: 'posts', type: 'relational', columns: [{ name: 'title', type: 'text' }, { name: 'n', type: 'int8' }] })).status).toBe(201);
  expect((await call('POST', '/db/tables', { name: 'docs' })).status).toBe(201);
});
afterAll(() => s.close());

describe('a rows-API table through SQL', () => {
  it('takes an INSERT that leaves out id, created_at and updated_at: a UUIDv7 and the time, as the rows API gives', async () => {
    const ins = await ok(`insert into posts (title, n) values ('a', 1), ('b', 2) returning id, title, created_at, updated_at`);
    expect(ins.row_count).toBe(2);
    const [a, b] = ins.rows as Array<{ id: string; title: string; created_at: string; updated_at: string }>;
    for (const r of [a!, b!]) {
      expect(r.id).toMatch(UUID7);
      expect(r.created_at).toMatch(ISO);
      expect(r.updated_at).toBe(r.created_at);
    }
    expect(a!.id).not.toBe(b!.id);
    // the rows API and GraphQL read them as their own
    const row = await call('GET', `/db/tables/posts/rows/${a!.id}`);
    expect(row.body).toEqual({ id: a!.id, data: { title: 'a', n: 1 }, created_at: a!.created_at, updated_at: a!.created_at });
    const gql = await call('POST', '/db/graphql', { query: '{ posts(order: "n.asc") { id title n } }' });
    expect(gql.body).toEqual({ data: { posts: [{ id: a!.id, title: 'a', n: 1 }, { id: b!.id, title: 'b', n: 2 }] } });
  });

  it('fills what a shorter VALUES list, INSERT … SELECT and JSON-RPC leave out', async () => {
    const id = '0190a8b2-7c1d-7e3f-8a4b-5c6d7e8f9a0b';
    const pos = await ok(`insert into posts values ($1, 'positional', 3) returning id, n, created_at = updated_at as same`, [id]);
    expect(pos.rows).toEqual([{ id, n: 3, same: true }]);
    const sel = await ok(`insert into posts (title, n) select title || '2', n + 10 from posts where n < 3 returning title, n, id is not null as has_id, created_at is not null as stamped`);
    expect(sel.rows.sort((x, y) => Number(x.n) - Number(y.n))).toEqual([
      { title: 'a2', n: 11, has_id: true, stamped: true },
      { title: 'b2', n: 12, has_id: true, stamped: true },
    ]);
    const rpc = await call('POST', '/db/rpc', { jsonrpc: '2.0', id: 1, method: 'db.query', params: { sql: `insert into posts (title, n) values ('rpc', 20) returning n` } });
    expect(rpc.body).toEqual({ jsonrpc: '2.0', id: 1, result: { command: 'INSERT', columns: [{ name: 'n', type: 'int8' }], rows: [{ n: 20 }], row_count: 1 } });
    expect((await call('GET', '/db/tables/posts/rows?filter=n.eq.20')).body.rows).toHaveLength(1);
  });

  it('keeps updated_at current on UPDATE and upsert, unless the statement sets it; created_at stays', async () => {
    const [r] = (await ok(`insert into posts (title, n, created_at, updated_at) values ('old', 100, $1, $1) returning id, created_at, updated_at`, [OLD])).rows as Array<{ id: string; created_at: string; updated_at: string }>;
    expect(r).toEqual({ id: r!.id, created_at: OLD, updated_at: OLD });
    const up = await ok(`update posts set n = 101 where id = $1 returning created_at, updated_at`, [r!.id]);
    const after = up.rows[0] as { created_at: string; updated_at: string };
    expect(after.created_at).toBe(OLD);
    expect(after.updated_at).toMatch(ISO);
    expect(after.updated_at > OLD).toBe(true);
    // a statement that sets it keeps its value
    expect((await ok(`update posts set n = 102, updated_at = $2 where id = $1 returning updated_at`, [r!.id, OLD])).rows).toEqual([{ updated_at: OLD }]);
    const upsert = await ok(`insert into posts (id, title, n) values ($1, 'old', 103) on conflict (id) do update set n = excluded.n returning n, created_at, updated_at > created_at as touched`, [r!.id]);
    expect(upsert.rows).toEqual([{ n: 103, created_at: OLD, touched: true }]);
    const rows = await call('GET', `/db/tables/posts/rows/${r!.id}`);
    expect(rows.body.data).toEqual({ title: 'old', n: 103 });
    expect(rows.body.created_at).toBe(OLD);
    expect(rows.body.updated_at > OLD).toBe(true);
  });

  it('takes an INSERT into a document table with only its data', async () => {
    const ins = await ok(`insert into docs (data) values ('{"k":1}') returning id, data, created_at = updated_at as same`);
    const row = ins.rows[0] as { id: string };
    expect(row.id).toMatch(UUID7);
    expect(ins.rows).toEqual([{ id: row.id, data: { k: 1 }, same: true }]);
    expect((await call('GET', `/db/tables/docs/rows/${row.id}`)).body.data).toEqual({ k: 1 });
  });

  it('leaves a table made by SQL to Postgres rules: its own defaults, updated_at untouched by UPDATE', async () => {
    await ok(`create table notes (id uuid primary key default gen_random_uuid(), body text, created_at timestamptz not null default now(), updated_at timestamptz not null default now())`);
    const [r] = (await ok(`insert into notes (body, updated_at) values ('x', $1) returning id`, [OLD])).rows as Array<{ id: string }>;
    expect((await ok(`update notes set body = 'y' where id = $1 returning updated_at`, [r!.id])).rows).toEqual([{ updated_at: OLD }]);
    // and a key without a default is required, as in Postgres
    await ok(`create table plain (id text primary key, created_at timestamptz, updated_at timestamptz)`);
    const bad = await call('POST', '/db/query', { sql: `insert into plain (created_at) values (now())` });
    expect(bad.status).toBe(400);
  });
});
