import { getIntrospectionQuery } from 'graphql';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// note: the abuse battery's cases get 60 s each: they share the cores with the API files (a
// 16 MiB GraphQL answer, a trickled body). vi.setConfig lasts for this file only.
vi.setConfig({ testTimeout: 60_000 });

// Issue 11, items 2, 3, 17 (GraphQL) and 19 (GraphQL): every cost of a GraphQL request
// that grows with its input is capped (docs/api.md "GraphQL"), introspection included, and
// scopes are checked per operation as REST checks them per route.

let s: TestServer;
const JSON_HEADERS = { 'content-type': 'application/json' };
type GqlError = { message: string; path?: string[]; extensions: { code: string } };
type Gql = { data?: Record<string, unknown> | null; errors?: GqlError[] };
const post = (body: unknown, key: string = s.keys.service): Promise<Response> =>
  s.req('/db/graphql', { method: 'POST', key, headers: JSON_HEADERS, body: JSON.stringify(body) });
const gql = async (query: string, variables?: unknown, key?: string): Promise<{ status: number; body: Gql }> => {
  const res = await post({ query, variables }, key);
  return { status: res.status, body: (await res.json()) as Gql };
};
/** A refusal before execution: HTTP 400 with one error carrying `invalid_request`. */
const refused = async (query: string, message: RegExp, key?: string): Promise<void> => {
  const r = await gql(query, undefined, key);
  expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(400);
  expect(r.body.data).toBeUndefined();
  expect(r.body.errors).toHaveLength(1);
  expect(r.body.errors![0]!.extensions.code).toBe('invalid_request');
  expect(r.body.errors![0]!.message).toMatch(message);
};
const sql = async (statement: string): Promise<void> => {
  const res = await s.req('/db/query', { method: 'POST', key: s.keys.service, headers: JSON_HEADERS, body: JSON.stringify({ sql: statement }) });
  expect(res.status, await res.clone().text()).toBe(200);
};
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

beforeAll(async () => {
  s = await startTestServer();
  for (const body of [
    { name: 'authors', type: 'relational', columns: [{ name: 'name', type: 'text', nullable: false }] },
    {
      name: 'books',
      type: 'relational',
      columns: [
        { name: 'title', type: 'text', nullable: false },
        { name: 'author_id', type: 'uuid', references: { table: 'authors', column: 'id', on_delete: 'cascade' } },
      ],
    },
  ]) {
    const res = await s.req('/db/tables', { method: 'POST', key: s.keys.service, headers: JSON_HEADERS, body: JSON.stringify(body) });
    expect(res.status).toBe(201);
  }
});
afterAll(() => s.close());

describe('introspection is capped like any other query (item 2)', () => {
  it('answers the standard client introspection query (graphql getIntrospectionQuery) with 200', async () => {
    for (const query of [getIntrospectionQuery(), getIntrospectionQuery({ descriptions: false, typeDepth: 7 })]) {
      const r = await gql(query, undefined, s.keys.publishable);
      expect(r.status).toBe(200);
      expect(r.body.errors).toBeUndefined();
      const schema = r.body.data!.__schema as { queryType: { name: string }; mutationType: { name: string }; types: { name: string }[] };
      expect(schema.queryType).toEqual({ name: 'Query', kind: 'OBJECT' });
      expect(schema.mutationType).toEqual({ name: 'Mutation', kind: 'OBJECT' });
      expect(schema.types.map((t) => t.name)).toEqual(expect.arrayContaining(['authors', 'books', 'books_where', 'Comparison', 'JSON', '__Schema']));
    }
  });

  it('answers a repeated introspection with the same bytes, and a new table shows at once', async () => {
    const body = { query: getIntrospectionQuery(), operationName: 'IntrospectionQuery' };
    const first = await (await post(body)).text();
    const second = await (await post(body)).text();
    expect(second).toBe(first);
    expect(first).not.toContain('"name":"shelves"');
    const res = await s.req('/db/tables', { method: 'POST', key: s.keys.service, headers: JSON_HEADERS, body: JSON.stringify({ name: 'shelves', type: 'document' }) });
    expect(res.status).toBe(201);
    const third = await (await post(body)).text();
    expect(third).toContain('"name":"shelves"');
  });

  it('refuses introspection nested past its depth cap (15) with 400 invalid_request', async () => {
    const ofType = (n: number): string => (n === 0 ? 'name' : `name ofType { ${ofType(n - 1)} }`);
    await refused(`{ __schema { types { fields { type { ${ofType(20)} } } } } }`, /^the query nests deeper than 15 levels$/);
    await refused(`{ __type(name: "books") { fields { type { ${ofType(16)} } } } }`, /^the query nests deeper than 15 levels$/);
  });

  it('refuses aliases inside introspection and a repeated __schema (the alias bomb)', async () => {
    // The reported bomb (380 aliases, 30 KB) is over the field cap; a smaller one is refused by the alias rule.
    const bomb = (n: number): string => `{ __schema { ${range(n).map((i) => `a${i}: types { name fields { name type { name } } }`).join(' ')} } }`;
    await refused(bomb(380), /^the query selects more than 500 fields$/, s.keys.publishable);
    await refused(bomb(50), /^aliases are not allowed inside __schema or __type$/, s.keys.publishable);
    await refused(`{ __schema { types { n: name } } }`, /^aliases are not allowed inside __schema or __type$/);
    await refused(`{ a: __schema { types { name } } b: __schema { types { name } } }`, /^__schema cannot be aliased; select it once$/);
    const types = await gql(`{ a: __type(name: "books") { name } b: __type(name: "authors") { name } }`);
    expect(types).toEqual({ status: 200, body: { data: { a: { name: 'books' }, b: { name: 'authors' } } } });
    await refused(`{ ${range(11).map((i) => `t${i}: __type(name: "books") { name }`).join(' ')} }`, /^the query selects __type more than 10 times$/);
  });
});

describe('every cost that grows with the input is capped (item 3)', () => {
  it('counts __typename in the 500-field cap, and fields after fragment expansion', async () => {
    await refused(`{ ${'__typename '.repeat(501)} }`, /^the query selects more than 500 fields$/);
    const ok = await gql(`{ ${'__typename '.repeat(500)} }`);
    expect(ok).toEqual({ status: 200, body: { data: { __typename: 'Query' } } });
    // 2^12 spreads of a fragment holding only __typename.
    const frags = range(12).map((i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`).join(' ');
    await refused(`{ ...F0 } ${frags} fragment F12 on Query { __typename }`, /^the query (selects more than 500 fields|expands more than 500 fragment spreads)$/);
    const spreads = range(12).map((i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`).join(' ');
    await refused(`{ ...F0 } ${spreads} fragment F12 on Query { ... on Query { __typename } }`, /^the query (selects more than 500 fields|expands more than 500 fragment spreads)$/);
  });

  it('caps aliases at 100 and directives at 50 per operation', async () => {
    await refused(`{ ${range(101).map((i) => `a${i}: authors(limit: 1) { id }`).join(' ')} }`, /^the query uses more than 100 aliases$/);
    const aliases = await gql(`{ ${range(100).map((i) => `a${i}: authors(limit: 1) { id }`).join(' ')} }`);
    expect(aliases.status).toBe(200);
    expect(Object.keys(aliases.body.data!)).toHaveLength(100);
    await refused(`{ authors { ${'name @include(if: true) '.repeat(51)} } }`, /^the query uses more than 50 directives$/);
    const directives = await gql(`{ authors { ${'name @include(if: true) '.repeat(50)} } }`);
    expect(directives).toEqual({ status: 200, body: { data: { authors: [] } } });
  });

  it('caps what a request reads at 10,000 rows, its values at 50,000 and its response at 16 MiB, never truncating', async () => {
    // 1000 rows with a 2,000-character title: 125 characters, doubled four times.
    await sql(`insert into books (id, title, created_at, updated_at) values ${range(1000).map(() => `(gen_random_uuid(), '${'x'.repeat(125)}', now(), now())`).join(', ')}`);
    for (let i = 0; i < 4; i++) await sql(`update books set title = title || title where title like 'x%'`);
    const count = await gql(`{ books(limit: 1000) { id } }`);
    expect((count.body.data!.books as unknown[]).length).toBe(1000);
    await refused(`{ ${range(11).map((i) => `a${i}: books(limit: 1000) { id }`).join(' ')} }`, /^the query reads more than 10000 rows; page with limit and offset$/);
    const ten = await gql(`{ ${range(10).map((i) => `a${i}: books(limit: 1000, offset: ${i}) { id }`).join(' ')} }`);
    expect(ten.status).toBe(200);
    expect((ten.body.data!.a9 as unknown[]).length).toBe(991);
    // Values: rows × the fields selected under the list.
    await refused(`{ books(limit: 1000) { ${range(51).map((i) => `i${i}: id`).join(' ')} } }`, /^the query returns more than 50000 values \(rows × fields\); select fewer rows or fields$/);
    const fifty = await gql(`{ books(limit: 1000) { ${range(48).map((i) => `i${i}: id`).join(' ')} author { id } } }`);
    expect(fifty.status).toBe(200);
    expect((fifty.body.data!.books as unknown[]).length).toBe(1000);
    // 1000 rows × 9 copies of a 2,000-character title: about 18 MB of JSON.
    const wide = await gql(`{ books(limit: 1000) { ${range(9).map((i) => `t${i}: title`).join(' ')} } }`);
    expect(wide.status).toBe(400);
    expect(wide.body).toEqual({ errors: [{ message: expect.stringMatching(/^the response would be \d+ bytes, more than the limit of 16777216; select fewer rows or fields$/) as unknown, extensions: { code: 'invalid_request' } }] });
    await sql(`delete from books where length(title) = 2000`);
  });

  it('answers a mutation whose response is over 16 MiB with 200 and says it was applied', async () => {
    const res = await s.req('/db/tables', { method: 'POST', key: s.keys.service, headers: JSON_HEADERS, body: JSON.stringify({ name: 'blobs', type: 'document' }) });
    expect(res.status).toBe(201);
    const big = await gql(`mutation($d: JSON!) { insert_blobs(data: $d) { ${range(30).map((i) => `d${i}: data`).join(' ')} } }`, { d: { s: 'x'.repeat(600_000) } });
    expect(big.status).toBe(200);
    expect(big.body).toEqual({
      data: null,
      errors: [{ message: expect.stringMatching(/^the mutation was applied, but the response would be \d+ bytes, more than the limit of 16777216; select fewer rows or fields$/) as unknown, extensions: { code: 'invalid_request' } }],
    });
    const stored = await s.req('/db/tables/blobs/rows?count=exact&limit=1&select=id', { key: s.keys.service });
    expect(stored.status).toBe(200);
    expect(((await stored.json()) as { total: number }).total).toBe(1);
  });

  it('caps the tokens of a query (10,000) and refuses an `in` list of more than 1000 values', async () => {
    const tokens = await gql(`{ authors(where: {name: {in: [${'"a",'.repeat(10_000)}]}}) { id } }`);
    expect(tokens.status).toBe(400);
    expect(tokens.body.errors![0]!.message).toBe('Syntax Error: Document contains more that 10000 tokens. Parsing aborted.');
    expect(tokens.body.errors![0]!.extensions.code).toBe('invalid_request');
    const list = await gql(`query($v: [JSON]) { authors(where: {name: {in: $v}}) { id } }`, { v: range(1001).map(String) });
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ data: null, errors: [{ message: 'in takes 1 to 1000 values', locations: [{ line: 1, column: 21 }], path: ['authors'], extensions: { code: 'invalid_request' } }] });
  });

  it('answers a query over 64 KiB with 413 payload_too_large (item 19), and a body over 1 MiB with 413', async () => {
    const long = await gql(`{ authors { id } } ${'#'.repeat(64 * 1024)}`);
    expect(long).toEqual({ status: 413, body: { errors: [{ message: 'query is longer than 65536 characters', extensions: { code: 'payload_too_large' } }] } });
    const body = await post({ query: '{ authors { id } }', variables: { big: 'x'.repeat(1024 * 1024) } });
    expect(body.status).toBe(413);
    expect((await errorOf(body)).code).toBe('payload_too_large');
  });
});

describe('reverse relations under the caps (issue 17 item 11)', () => {
  it('counts children against the 10,000-row cap (refused whole) and needs data:read', async () => {
    for (const body of [
      { name: 'owners', type: 'relational', columns: [{ name: 'name', type: 'text', nullable: false }] },
      { name: 'items', type: 'relational', columns: [{ name: 'n', type: 'int8' }, { name: 'owner_id', type: 'uuid', references: { table: 'owners', column: 'id', on_delete: 'cascade' } }] },
    ]) {
      const res = await s.req('/db/tables', { method: 'POST', key: s.keys.service, headers: JSON_HEADERS, body: JSON.stringify(body) });
      expect(res.status).toBe(201);
    }
    await sql(`insert into owners (id, name, created_at, updated_at) with recursive r(i) as (select 1 union all select i + 1 from r where i < 11) select gen_random_uuid(), 'o' || i, now(), now() from r`);
    await sql(`insert into items (id, n, owner_id, created_at, updated_at) with recursive r(i) as (select 1 union all select i + 1 from r where i < 1000) select gen_random_uuid(), i, o.id, now(), now() from r cross join owners o`);
    // 10 owners × 1000 items: 10,010 rows, past the cap; refused whole with 400.
    await refused(`{ owners(limit: 10) { items(limit: 1000) { n } } }`, /reads more than 10000 rows/);
    const ok = await gql(`{ owners(limit: 9) { items(limit: 1000) { n } } }`);
    expect(ok.status).toBe(200);
    expect((ok.body.data!.owners as { items: unknown[] }[]).map((o) => o.items.length)).toEqual(range(9).map(() => 1000));
    // Written with data:write alone, the row answers; its children are another read.
    const wo = s.createKey(['data:write'], { name: 'wo-reverse' }).secret;
    const ins = await gql(`mutation { insert_owners(object: {name: "new"}) { name items { n } } }`, undefined, wo);
    expect(ins.status).toBe(200);
    expect(ins.body.data).toEqual({ insert_owners: { name: 'new', items: null } });
    expect(ins.body.errors?.map((e) => [e.extensions.code, e.path])).toEqual([['missing_scope', ['insert_owners', 'items']]]);
  });
});

describe('scopes per operation, as REST (item 17)', () => {
  it('a data:write-only key inserts, updates and deletes, and cannot read', async () => {
    const wo = s.createKey(['data:write'], { name: 'wo' }).secret;
    const ins = await gql(`mutation { insert_authors(data: {name: "Write Only"}) { id name } }`, undefined, wo);
    expect(ins.status).toBe(200);
    const row = ins.body.data!.insert_authors as { id: string; name: string };
    expect(row.name).toBe('Write Only');
    const stored = await s.req(`/db/tables/authors/rows/${row.id}`, { key: s.keys.service });
    expect(((await stored.json()) as { data: { name: string } }).data).toEqual({ name: 'Write Only' });
    const upd = await gql(`mutation($id: ID!) { update_authors(id: $id, data: {name: "W.O."}) { name } }`, { id: row.id }, wo);
    expect(upd).toEqual({ status: 200, body: { data: { update_authors: { name: 'W.O.' } } } });
    // A nested foreign key reads another table: that needs data:read.
    const book = await gql(`mutation($a: JSON!) { insert_books(data: {title: "T", author_id: $a}) { title author { name } } }`, { a: row.id }, wo);
    expect(book.status).toBe(200);
    expect(book.body.data).toEqual({ insert_books: { title: 'T', author: null } });
    expect(book.body.errors?.map((e) => [e.extensions.code, e.path])).toEqual([['missing_scope', ['insert_books', 'author']]]);
    const read = await gql(`{ authors { id } }`, undefined, wo);
    expect(read.status).toBe(401);
    expect(read.body).toEqual({ error: { code: 'missing_scope', message: 'this request needs the "data:read" scope', details: { scope: 'data:read' } } });
    const intro = await gql(`{ __schema { queryType { name } } }`, undefined, wo);
    expect(intro.status).toBe(401);
    const del = await gql(`mutation($id: ID!) { delete_authors(id: $id) }`, { id: row.id }, wo);
    expect(del).toEqual({ status: 200, body: { data: { delete_authors: true } } });
    expect((await s.req(`/db/tables/authors/rows/${row.id}`, { key: s.keys.service })).status).toBe(404);
  });

  it('a data:read-only key reads and gets 401 missing_scope for a mutation, which writes nothing', async () => {
    const ro = s.createKey(['data:read'], { name: 'ro' }).secret;
    const read = await gql(`{ authors(where: {name: {eq: "Nobody"}}) { id } }`, undefined, ro);
    expect(read).toEqual({ status: 200, body: { data: { authors: [] } } });
    const ins = await gql(`mutation { insert_authors(data: {name: "Nobody"}) { id } }`, undefined, ro);
    expect(ins.status).toBe(401);
    expect(ins.body).toEqual({ error: { code: 'missing_scope', message: 'this request needs the "data:write" scope', details: { scope: 'data:write' } } });
    const after = await gql(`{ authors(where: {name: {eq: "Nobody"}}) { id } }`);
    expect(after.body.data).toEqual({ authors: [] });
    // GET runs queries with the same scope rule.
    const get = await s.req(`/db/graphql?query=${encodeURIComponent('{ authors { id } }')}`, { key: ro });
    expect(get.status).toBe(200);
  });
});
