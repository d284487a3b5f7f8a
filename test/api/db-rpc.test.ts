import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
  const res = await s.req('/db/tables', {
    method: 'POST',
    key: s.keys.service,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'items', type: 'relational', columns: [{ name: 'label', type: 'text' }, { name: 'qty', type: 'int8' }] }),
  });
  expect(res.status).toBe(201);
});
afterAll(() => s.close());

type Reply = { jsonrpc: string; id: unknown; result?: unknown; error?: { code: number; message: string; data?: { code: string; status: number } } };
const rpc = async (body: unknown, key: string | null = s.keys.service): Promise<{ status: number; body: Reply | Reply[] | null }> => {
  const res = await s.req('/db/rpc', { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Reply | Reply[]) : null };
};
const rest = async (method: string, path: string, key: string = s.keys.service): Promise<{ status: number; body: unknown }> => {
  const res = await s.req(path, { method, key });
  expect(res.status).toBe(200);
  return { status: res.status, body: await res.json() };
};
const call = async (method: string, params?: unknown, key?: string) => {
  const r = await rpc({ jsonrpc: '2.0', id: 1, method, params }, key);
  expect(r.status).toBe(200);
  return r.body as Reply;
};

describe('POST /db/rpc', () => {
  it('covers every method: insert, get, update, list, query, delete, tables, schema', async () => {
    const ins = await call('db.insert', { table: 'items', data: { label: 'apple', qty: 3 } });
    const row = ins.result as { id: string; data: Record<string, unknown>; created_at: string; updated_at: string };
    expect(ins).toEqual({ jsonrpc: '2.0', id: 1, result: { id: row.id, data: { label: 'apple', qty: 3 }, created_at: row.created_at, updated_at: row.created_at } });
    // the results are the REST bodies
    expect((await call('db.get', { table: 'items', id: row.id })).result).toEqual((await rest('GET', `/db/tables/items/rows/${row.id}`)).body);
    const upd = (await call('db.update', { table: 'items', id: row.id, data: { qty: 4 } })).result as typeof row;
    expect(upd).toEqual({ id: row.id, data: { label: 'apple', qty: 4 }, created_at: row.created_at, updated_at: upd.updated_at });
    await call('db.insert', { table: 'items', data: { label: 'pear', qty: 1 } });
    const list = (await call('db.list', { table: 'items', filter: 'qty.gt.1', order: 'label.asc', count: 'exact' })).result as { rows: { data: { label: string } }[]; total: number };
    expect(list.rows.map((r) => r.data.label)).toEqual(['apple']);
    expect(list.total).toBe(1);
    const q = (await call('db.query', { sql: 'select label from items where qty >= $1 order by label', params: [1] })).result;
    expect(q).toEqual({ command: 'SELECT', columns: [{ name: 'label', type: 'text' }], rows: [{ label: 'apple' }, { label: 'pear' }], row_count: 2 });
    expect((await call('db.delete', { table: 'items', id: row.id })).result).toEqual({ deleted: true });
    const gone = await call('db.get', { table: 'items', id: row.id });
    expect(gone.error?.data).toEqual({ code: 'not_found', status: 404 });
    expect(gone.error?.code).toBe(-32000);
    const tables = (await call('db.tables')).result as { tables: { name: string }[] };
    expect(tables.tables.map((t) => t.name).sort()).toEqual(['items', 'profiles']);
    expect(tables).toEqual((await rest('GET', '/db/tables')).body);
    expect((await call('db.schema')).result).toEqual((await rest('GET', '/db/schema')).body);
  });

  it('answers a batch in order, leaves notifications unanswered', async () => {
    const r = await rpc([
      { jsonrpc: '2.0', id: 'a', method: 'db.tables' },
      { jsonrpc: '2.0', method: 'db.insert', params: { table: 'items', data: { label: 'silent', qty: 0 } } },
      { jsonrpc: '2.0', id: 'b', method: 'db.nope' },
      { jsonrpc: '2.0', id: 'c', method: 'db.get', params: { table: 'items' } },
      { jsonrpc: '2.0', id: 'd', method: 'db.query', params: { sql: "select count(*) as n from items where label = 'silent'" } },
    ]);
    expect(r.status).toBe(200);
    const out = r.body as Reply[];
    expect(out.map((x) => x.id)).toEqual(['a', 'b', 'c', 'd']);
    expect(out[1]!.error?.code).toBe(-32601);
    expect(out[2]!.error?.code).toBe(-32602);
    expect((out[3]!.result as { rows: unknown[] }).rows).toEqual([{ n: 1 }]);
    const only = await rpc({ jsonrpc: '2.0', method: 'db.tables' });
    expect(only.status).toBe(204);
    expect(only.body).toBeNull();
  });

  it('uses the standard error codes', async () => {
    expect(((await rpc('{not json')).body as Reply).error?.code).toBe(-32700);
    expect(((await rpc({ id: 1, method: 'db.tables' })).body as Reply).error?.code).toBe(-32600);
    expect(((await rpc([])).body as Reply).error?.code).toBe(-32600);
    expect(((await rpc([1])).body as Reply[])[0]!.error?.code).toBe(-32600);
    expect(((await rpc({ jsonrpc: '2.0', id: 1, method: 'db.list', params: [1] })).body as Reply).error?.code).toBe(-32602);
    const bad = (await rpc({ jsonrpc: '2.0', id: 1, method: 'db.insert', params: { table: 'items', data: { nope: 1 } } })).body as Reply;
    expect(bad.error).toMatchObject({ code: -32000, data: { code: 'invalid_field', status: 400 } });
    const sql = (await rpc({ jsonrpc: '2.0', id: 2, method: 'db.query', params: { sql: 'pragma user_version' } })).body as Reply;
    expect(sql.error).toMatchObject({ code: -32000, data: { code: 'unsupported_sql' } });
  });

  it('caps batches at 100 calls: 100 are answered, 101 or 10,000 are refused as one invalid request', async () => {
    const calls = (n: number) => Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'db.tables' }));
    const hundred = await rpc(calls(100));
    expect(hundred.status).toBe(200);
    expect((hundred.body as Reply[]).map((x) => x.id)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    for (const n of [101, 10_000]) {
      const r = await rpc(calls(n));
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'invalid request: a batch holds at most 100 calls' } });
    }
  });

  it('applies the same scopes and RLS as REST', async () => {
    // The publishable key: read methods work; db.query only reads.
    expect((await call('db.tables', undefined, s.keys.publishable)).result).toEqual((await rest('GET', '/db/tables', s.keys.publishable)).body);
    const w = await call('db.query', { sql: "insert into items (id, label, created_at, updated_at) values ('x', 'y', 'z', 'z')" }, s.keys.publishable);
    expect(w.error?.data).toEqual({ code: 'missing_scope', status: 401, details: { scope: 'service_role' } });
    const rls = await s.req('/db/tables/items/rls', {
      method: 'PUT',
      key: s.keys.service,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ enabled: true, policies: { select: "label = 'pear'" } }),
    });
    expect(rls.status).toBe(200);
    const list = (await call('db.list', { table: 'items' }, s.keys.publishable)).result as { rows: { data: { label: string } }[] };
    expect(list.rows.map((r) => r.data.label)).toEqual(['pear']);
    const q = (await call('db.query', { sql: 'select label from items' }, s.keys.publishable)).result as { rows: unknown[] };
    expect(q.rows).toEqual([{ label: 'pear' }]);
    const res = await s.req('/db/rpc', { method: 'POST', key: null, body: '{}' });
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe('unauthorized');
  });
});
