import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
const JSON_HEADERS = { 'content-type': 'application/json' };
const createTable = async (body: unknown) => {
  const res = await s.req('/db/tables', { method: 'POST', key: s.keys.service, headers: JSON_HEADERS, body: JSON.stringify(body) });
  expect(res.status).toBeLessThan(300);
};
type Gql = { data?: Record<string, unknown> | null; errors?: { message: string; extensions: { code: string } }[] };
const gql = async (query: string, variables?: unknown, key: string = s.keys.service): Promise<{ status: number; body: Gql }> => {
  const res = await s.req('/db/graphql', { method: 'POST', key, headers: JSON_HEADERS, body: JSON.stringify({ query, variables }) });
  return { status: res.status, body: (await res.json()) as Gql };
};

// Every SQL statement the server runs on project databases, to count what GraphQL costs.
const traced: string[] = [];
beforeAll(async () => {
  s = await startTestServer({ sqlTrace: (sql) => traced.push(sql) });
  await createTable({ name: 'authors', type: 'relational', columns: [{ name: 'name', type: 'text', nullable: false }] });
  await createTable({
    name: 'books',
    type: 'relational',
    columns: [
      { name: 'title', type: 'text', nullable: false },
      { name: 'pages', type: 'int8' },
      { name: 'author_id', type: 'uuid', references: { table: 'authors', column: 'id', on_delete: 'cascade' } },
    ],
  });
});
afterAll(() => s.close());

describe('POST /db/graphql', () => {
  let ada = '';
  it('inserts through mutations and reads lists with nested foreign keys', async () => {
    const a = await gql(`mutation($d: JSON!) { insert_authors(data: $d) { id name } }`, { d: { name: 'Ada' } });
    expect(a.status).toBe(200);
    ada = (a.body.data!.insert_authors as { id: string }).id;
    const b = await gql(`mutation { insert_authors(data: {name: "Alan"}) { id } }`);
    const alan = (b.body.data!.insert_authors as { id: string }).id;
    for (const [title, pages, author] of [
      ['Notes', 120, ada],
      ['Numbers', 36, alan],
      ['Machinery', 27, alan],
    ] as const) {
      const r = await gql(`mutation($d: JSON!) { insert_books(data: $d) { title } }`, { d: { title, pages, author_id: author } });
      expect(r.body.errors).toBeUndefined();
    }
    const list = await gql(`{ books(order: "title.asc") { title pages author { name } } }`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      data: {
        books: [
          { title: 'Machinery', pages: 27, author: { name: 'Alan' } },
          { title: 'Notes', pages: 120, author: { name: 'Ada' } },
          { title: 'Numbers', pages: 36, author: { name: 'Alan' } },
        ],
      },
    });
  });

  it('reads 50 rows with a nested relation in at most 2 SQL statements (batched per level)', async () => {
    for (let i = 0; i < 47; i++) {
      const r = await gql(`mutation($d: JSON!) { insert_books(data: $d) { title } }`, { d: { title: `Extra ${i}`, pages: i, author_id: ada } });
      expect(r.body.errors).toBeUndefined();
    }
    await gql(`{ books(limit: 1) { title } }`); // warm the schema and catalog caches
    traced.length = 0;
    const r = await gql(`{ books(limit: 50, order: "title.asc") { title author { name } } }`);
    expect((r.body.data!.books as unknown[]).length).toBe(50);
    const touching = traced.filter((sql) => /"?(books|authors)"?/.test(sql) && !/_svc_meta/.test(sql));
    expect(touching.length).toBeGreaterThan(0);
    expect(touching.length).toBeLessThanOrEqual(2);
    const cleanup = await s.req('/db/query', { method: 'POST', key: s.keys.service, headers: JSON_HEADERS, body: JSON.stringify({ sql: "delete from books where title like 'Extra %'" }) });
    expect(cleanup.status).toBe(200);
  });

  it('filters with the rows API operators, orders, limits, and reads by id', async () => {
    const r = await gql(`{ books(where: {pages: {gt: 30}, title: {ilike: "n%"}}, order: "pages.desc", limit: 1) { title } }`);
    expect(r.body.data).toEqual({ books: [{ title: 'Notes' }] });
    const inList = await gql(`{ books(where: {title: {in: ["Notes", "Machinery"]}}, order: "title.asc") { title } }`);
    expect(inList.body.data).toEqual({ books: [{ title: 'Machinery' }, { title: 'Notes' }] });
    const one = await gql(`query($id: ID!) { authors_by_id(id: $id) { name } }`, { id: ada });
    expect(one.body.data).toEqual({ authors_by_id: { name: 'Ada' } });
    const none = await gql(`{ authors_by_id(id: "00000000-0000-0000-0000-000000000000") { name } }`);
    expect(none.body.data).toEqual({ authors_by_id: null });
  });

  it('updates and deletes, with our error code in extensions.code', async () => {
    const u = await gql(`mutation($id: ID!) { update_authors(id: $id, data: {name: "Ada L."}) { name } }`, { id: ada });
    expect(u.body.data).toEqual({ update_authors: { name: 'Ada L.' } });
    const bad = await gql(`mutation($id: ID!) { update_authors(id: $id, data: {nope: 1}) { name } }`, { id: ada });
    expect(bad.status).toBe(200);
    expect(bad.body.errors?.[0]?.extensions.code).toBe('invalid_field');
    const missing = await gql(`mutation { delete_authors(id: "00000000-0000-0000-0000-000000000000") }`);
    expect(missing.body.errors?.[0]?.extensions.code).toBe('not_found');
    const invalid = await gql(`{ books { nope } }`);
    expect(invalid.status).toBe(400);
    expect(invalid.body.errors?.[0]?.extensions.code).toBe('invalid_request');
  });

  it('supports introspection, so standard clients load the schema', async () => {
    const r = await gql(`{ __schema { queryType { name } mutationType { name } types { name } } }`);
    expect(r.status).toBe(200);
    const names = ((r.body.data!.__schema as { types: { name: string }[] }).types).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['authors', 'books', 'books_where', 'Comparison', 'JSON']));
  });

  it('rebuilds the schema when tables change', async () => {
    await createTable({ name: 'tags', type: 'document' });
    await gql(`mutation { insert_tags(data: {label: "x"}) { id } }`);
    const r = await gql(`{ tags { data } }`);
    expect(r.body.data).toEqual({ tags: [{ data: { label: 'x' } }] });
  });

  it('refuses queries past the depth and field limits with 400', async () => {
    // A self-referencing table (made by raw DDL) allows a valid query of any depth.
    const ddl = await s.req('/db/query', {
      method: 'POST',
      key: s.keys.service,
      headers: JSON_HEADERS,
      body: JSON.stringify({ sql: 'create table nodes (id uuid primary key, parent_id uuid references nodes (id), created_at timestamptz not null, updated_at timestamptz not null)' }),
    });
    expect(ddl.status).toBe(200);
    const nested = (n: number): string => (n === 0 ? 'id' : `id parent { ${nested(n - 1)} }`);
    const ok = await gql(`{ nodes { ${nested(5)} } }`);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const deep = await gql(`{ nodes { ${nested(12)} } }`);
    expect(deep.status).toBe(400);
    expect(deep.body.errors?.[0]?.extensions.code).toBe('invalid_request');
    expect(deep.body.errors?.[0]?.message).toMatch(/deeper/);
    const wide = await gql(`{ ${Array.from({ length: 600 }, (_, i) => `a${i}: books { title }`).join(' ')} }`);
    expect(wide.status).toBe(400);
    expect(wide.body.errors?.[0]?.message).toMatch(/more than/);
  });

  it('applies RLS as the caller and scopes for mutations', async () => {
    const rls = await s.req('/db/tables/books/rls', {
      method: 'PUT',
      key: s.keys.service,
      headers: JSON_HEADERS,
      body: JSON.stringify({ enabled: true, policies: { select: 'pages > 30' } }),
    });
    expect(rls.status).toBe(200);
    const r = await gql(`{ books(order: "title.asc") { title } }`, undefined, s.keys.publishable);
    expect(r.body.data).toEqual({ books: [{ title: 'Notes' }, { title: 'Numbers' }] });
    const svc = await gql(`{ books { title } }`);
    expect((svc.body.data!.books as unknown[]).length).toBe(3);
    const ins = await gql(`mutation { insert_books(data: {title: "Short", pages: 1}) { title } }`, undefined, s.keys.publishable);
    expect(ins.body.errors?.[0]?.extensions.code).toBe('rls_denied');
  });
});

describe('GET /db/graphql', () => {
  it('runs queries and refuses mutations', async () => {
    const q = encodeURIComponent('query($n: Int) { authors(limit: $n, order: "name.asc") { name } }');
    const res = await s.req(`/db/graphql?query=${q}&variables=${encodeURIComponent('{"n":1}')}`, { key: s.keys.service });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { authors: [{ name: 'Ada L.' }] } });
    const m = encodeURIComponent('mutation { delete_authors(id: "x") }');
    const res2 = await s.req(`/db/graphql?query=${m}`, { key: s.keys.service });
    expect(res2.status).toBe(405);
  });
});
