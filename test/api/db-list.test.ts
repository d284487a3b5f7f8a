import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };

async function call(method: string, path: string, body?: unknown, key?: string | null) {
  const res = await s.req(path, { method, key, headers: body === undefined ? {} : JSON_H, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
type Row = { id: string; data: Record<string, unknown> };
const list = async (t: string, qs: string) => {
  const r = await call('GET', `/db/tables/${t}/rows?${qs}`);
  return r;
};
const names = (r: { body: { rows: Row[] } }) => r.body.rows.map((x) => x.data.name);

const PEOPLE = [
  { name: 'ann', age: 31, address: { city: 'Paris' }, tags: ['a', 'b'], active: true, nick: null },
  { name: 'bob', age: 25, address: { city: 'Berlin' }, tags: ['b'], active: false, nick: 'bobby' },
  { name: 'cid', age: 40, address: { city: 'Paris' }, tags: [], active: true },
  { name: 'dee', age: 25, address: { city: 'Rome' }, tags: ['a', 'c'], active: false, nick: 'D' },
  { name: 'Eve', age: 52, address: { city: 'paris' }, tags: ['c'], active: true, nick: '100%_x' },
];

beforeAll(async () => {
  s = await startTestServer();
  const svc = s.keys.service;
  expect((await call('POST', '/db/tables', { name: 'people', indexes: [{ columns: ['address.city'] }] }, svc)).status).toBe(201);
  for (const p of PEOPLE) expect((await call('POST', '/db/tables/people/rows', { data: p })).status).toBe(201);
  const t = await call(
    'POST',
    '/db/tables',
    {
      name: 'prods',
      type: 'relational',
      columns: [
        { name: 'name', type: 'text' },
        { name: 'qty', type: 'int8' },
        { name: 'price', type: 'float8' },
        { name: 'on_sale', type: 'bool' },
        { name: 'due', type: 'timestamptz' },
        { name: 'meta', type: 'jsonb' },
      ],
    },
    svc,
  );
  expect(t.status, t.text).toBe(201);
  const prods = [
    { name: 'p1', qty: 1, price: 1.5, on_sale: true, due: '2026-01-01T00:00:00Z', meta: { tags: ['x'] } },
    { name: 'p2', qty: 2, price: 2.5, on_sale: false, due: '2026-02-01T00:00:00Z', meta: { tags: ['x', 'y'] } },
    { name: 'p3', qty: 3, price: null, on_sale: null, due: null, meta: null },
  ];
  for (const p of prods) expect((await call('POST', '/db/tables/prods/rows', { data: p })).status).toBe(201);
  expect((await call('POST', '/db/tables', { name: 'many' }, svc)).status).toBe(201);
  // note: 50 at a time, as a client pool would (one address may hold at most 1024 connections).
  for (let i = 0; i < 1100; i += 50) {
    const batch = await Promise.all(Array.from({ length: 50 }, (_, j) => call('POST', '/db/tables/many/rows', { data: { i: i + j } })));
    expect(batch.map((r) => r.status)).toEqual(Array(50).fill(201));
  }
});
afterAll(() => s.close());

describe('list envelope', () => {
  it('defaults: limit 100, offset 0, ordered by id (insert order)', async () => {
    const r = await list('people', '');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ limit: 100, offset: 0, next_offset: null });
    expect(r.body.total).toBeUndefined();
    expect(names(r)).toEqual(['ann', 'bob', 'cid', 'dee', 'Eve']);
  });

  it('limit/offset/next_offset and count=exact', async () => {
    const a = await list('people', 'limit=2&count=exact');
    expect(a.body).toMatchObject({ limit: 2, offset: 0, next_offset: 2, total: 5 });
    expect(names(a)).toEqual(['ann', 'bob']);
    const b = await list('people', 'limit=2&offset=4');
    expect(b.body).toMatchObject({ next_offset: null });
    expect(names(b)).toEqual(['Eve']);
  });

  it('without limit answers 100 rows of 1100, and next_offset 100', async () => {
    const r = await list('many', 'count=exact');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ limit: 100, offset: 0, next_offset: 100, total: 1100 });
    expect(r.body.rows).toHaveLength(100);
  });

  it('caps limit 100000 to 1000', async () => {
    const r = await list('many', 'limit=100000&count=exact');
    expect(r.status).toBe(200);
    expect(r.body.limit).toBe(1000);
    expect(r.body.rows).toHaveLength(1000);
    expect(r.body.next_offset).toBe(1000);
    expect(r.body.total).toBe(1100);
  });

  it.each(['limit=-1', 'limit=abc', 'offset=-5', 'offset=1.5', 'count=planned', 'bogus=1'])('%s → 400', async (qs) => {
    const r = await list('people', qs);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_request');
  });
});

describe('filters on document tables', () => {
  it.each([
    ['filter=name.eq.bob', ['bob']],
    ['filter=age.eq.25', ['bob', 'dee']],
    ['filter=age.neq.25', ['ann', 'cid', 'Eve']],
    ['filter=age.gt.31', ['cid', 'Eve']],
    ['filter=age.gte.31', ['ann', 'cid', 'Eve']],
    ['filter=age.lt.31', ['bob', 'dee']],
    ['filter=age.lte.31', ['ann', 'bob', 'dee']],
    ['filter=name.like.*e*', ['dee', 'Eve']],
    ['filter=name.like.%25v%25', ['Eve']], ['filter=name.like.E*', ['Eve']], ['filter=name.like.e*', []],
    ['filter=name.ilike.e*', ['Eve']],
    ['filter=name.like.b_b', ['bob']],
    ['filter=name.in.(ann,cid,zed)', ['ann', 'cid']],
    ['filter=age.in.(25,52)', ['bob', 'dee', 'Eve']],
    ['filter=nick.is.null', ['ann', 'cid']],
    ['filter=active.is.true', ['ann', 'cid', 'Eve']],
    ['filter=active.is.false', ['bob', 'dee']],
    ['filter=active.eq.true', ['ann', 'cid', 'Eve']],
    ['filter=tags.contains.["a"]', ['ann', 'dee']],
    ['filter=tags.contains.["a","c"]', ['dee']],
    ['filter=tags.contains.b', ['ann', 'bob']],
    ['filter=address.city.eq.Paris', ['ann', 'cid']],
    ['filter=data.address.city.eq.Paris', ['ann', 'cid']],
    ['filter=address.city.eq.Paris&filter=age.gt.35', ['cid']],
    ['or=(age.eq.25,address.city.eq.Rome)', ['bob', 'dee']],
    ['or=(name.eq.ann,name.eq.Eve)&filter=active.is.true', ['ann', 'Eve']],
    ['or=(name.in.(ann,bob),age.gt.50)', ['ann', 'bob', 'Eve']],
    ['filter=nick.eq."100%_x"', ['Eve']],
    ['filter=nick.eq.100%25_x', ['Eve']],
    ['filter=name.eq.nobody', []],
  ])('%s', async (qs, expected) => {
    const r = await list('people', qs);
    expect(r.status, r.text).toBe(200);
    expect(names(r)).toEqual(expected);
  });

  it('order asc/desc with nulls and a tie-break', async () => {
    expect(names(await list('people', 'order=age.desc'))).toEqual(['Eve', 'cid', 'ann', 'bob', 'dee']);
    expect(names(await list('people', 'order=age.asc,name.desc'))).toEqual(['dee', 'bob', 'ann', 'cid', 'Eve']);
    expect(names(await list('people', 'order=nick.asc.nullslast')).slice(-2)).toEqual(['ann', 'cid']);
    expect(names(await list('people', 'order=nick.desc.nullsfirst')).slice(0, 2)).toEqual(['ann', 'cid']);
    expect(names(await list('people', 'order=address.city.desc&limit=1'))).toEqual(['Eve']);
  });

  it('select picks data fields; id and timestamps stay', async () => {
    const r = await list('people', 'select=name,address.city&filter=name.eq.ann');
    expect(r.body.rows[0]).toEqual({ id: expect.any(String), data: { name: 'ann', 'address.city': 'Paris' }, created_at: expect.any(String), updated_at: expect.any(String) });
    const t = await list('people', 'select=tags&filter=name.eq.ann');
    expect(t.body.rows[0].data).toEqual({ tags: ['a', 'b'] });
  });

  it('filters by id and created_at', async () => {
    const all = await list('people', '');
    const id = all.body.rows[1].id;
    expect(names(await list('people', `filter=id.eq.${id}`))).toEqual(['bob']);
    // Eve was inserted last; rows inserted in the same millisecond as hers come along
    const since = all.body.rows[4].created_at as string;
    const expected = (all.body.rows as { data: { name: string }; created_at: string }[]).filter((r) => r.created_at >= since).map((r) => r.data.name);
    expect(expected).toContain('Eve');
    expect(names(await list('people', `filter=created_at.gte.${since}`))).toEqual(expected);
  });
});

describe('filters on relational tables', () => {
  const pn = (r: { body: { rows: Row[] } }) => r.body.rows.map((x) => x.data.name);
  it.each([
    ['filter=qty.eq.2', ['p2']],
    ['filter=qty.gte.2', ['p2', 'p3']],
    ['filter=price.lt.2', ['p1']],
    ['filter=on_sale.is.true', ['p1']],
    ['filter=on_sale.eq.false', ['p2']],
    ['filter=on_sale.is.null', ['p3']],
    ['filter=due.gt.2026-01-15T00:00:00Z', ['p2']],
    ['filter=due.lt.2026-01-15', ['p1']],
    ['filter=name.in.(p1,p3)', ['p1', 'p3']],
    ['filter=name.contains.2', ['p2']],
    ['filter=meta.tags.contains.["y"]', ['p2']],
    ['filter=meta.contains.x', []],
    ['or=(qty.eq.1,qty.eq.3)', ['p1', 'p3']],
    ['order=qty.desc', ['p3', 'p2', 'p1']],
  ])('%s', async (qs, expected) => {
    const r = await list('prods', qs);
    expect(r.status, r.text).toBe(200);
    expect(pn(r)).toEqual(expected);
  });

  it('select returns only the named columns', async () => {
    const r = await list('prods', 'select=name,qty&filter=qty.eq.1');
    expect(r.body.rows[0].data).toEqual({ name: 'p1', qty: 1 });
  });

  it.each([
    'filter=nope.eq.1',
    'filter=qty.eq.abc',
    'filter=qty.eq.1.5',
    'filter=price.gt.cheap',
    'filter=on_sale.eq.maybe',
    'filter=due.gt.notadate',
    'filter=name.is.maybe',
    'filter=name.in.1,2',
    'filter=name.eq',
    'select=name,nope',
    'order=nope.desc',
    'filter=qty.contains.1',
    'filter=name.sub.eq.1',
  ])('%s → 400', async (qs) => {
    const r = await list('prods', qs);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_request');
  });
});

// note: each payload gives exactly its answer on both tables: an empty 200 (null) or 400 invalid_request with this message;
// and the tables stay intact.
const INJECTION: [string, string | null][] = [
  ["filter=name.eq.' OR '1'='1", null],
  ["filter=name.eq.x' OR 1=1 --", null],
  ['filter=name.eq.1; DROP TABLE people', null],
  ["filter=name.eq.'); DROP TABLE people; --", null],
  ['filter=name.in.(a) OR 1=1', 'in takes a list: in.(a,b,c)'],
  ["filter=name.in.('a'),('b')", null],
  ['filter=name.like.%25\' OR \'\'=\'', null],
  ['filter=name;DROP TABLE people.eq.1', 'invalid field name "name;DROP TABLE people"'],
  ['filter=name) OR (1=1.eq.1', 'invalid field name "name) OR (1=1"'],
  ['filter=name"--.eq.1', 'invalid field name "name"--"'],
  ["filter=name'.eq.1", 'invalid field name "name\'"'],
  ['filter=address.city\') OR 1=1 --.eq.x', 'invalid field name "address.city\') OR 1=1 --"'],
  ['filter=address.`city`.eq.x', 'invalid field name "address.`city`"'],
  ['filter=a b.eq.1', 'invalid field name "a b"'],
  ['filter=1=1.eq.1', 'invalid field name "1=1"'],
  ['filter=*.eq.1', 'invalid field name "*"'],
  ['filter=name.eq.1 UNION SELECT * FROM sqlite_master', null],
  ['filter=name.eq.\\x00', null],
  ['filter=name.eq.%00', null],
  ['or=(name.eq.a) OR (1=1)', null],
  ["or=(name.eq.a,name.eq.b')--", 'or takes a list: or=(f.op.v,g.op.v)'],
  ['or=(1=1)', 'filter "1=1" must look like <field>.<op>.<value> with op one of eq, neq, gt, gte, lt, lte, like, ilike, in, is, contains'],
  ['order=name; DROP TABLE people', 'invalid field name "name; DROP TABLE people"'],
  ['order=(SELECT 1)', 'invalid field name "(SELECT 1)"'],
  ['order=name.desc,1', 'invalid field name "1"'],
  ['order=name.asc--', 'invalid field name "name.asc--"'],
  ['order=random()', 'invalid field name "random()"'],
  ['order=CASE WHEN 1 THEN name END', 'invalid field name "CASE WHEN 1 THEN name END"'],
  ['select=*,sqlite_version()', 'invalid field name "*"'],
  ['select=name FROM sqlite_master --', 'invalid field name "name FROM sqlite_master --"'],
  ['select=(SELECT password_hash FROM "_svc_auth.users")', 'invalid field name "(SELECT password_hash FROM "_svc_auth.users")"'],
  ['select=name,"id"', 'invalid field name ""id""'],
  ["select=name'", 'invalid field name "name\'"'],
  ['limit=1;DROP TABLE people', 'limit must be a non-negative integer'],
  ['offset=0 OR 1=1', 'offset must be a non-negative integer'],
  ['count=exact; DROP TABLE people', 'count must be "exact"'],
  ['filter=data->>\'name\'.eq.ann', 'invalid field name "data->>\'name\'"'],
  ['filter=json_extract(data,\'$.name\').eq.ann', 'invalid field name "json_extract(data,\'$.name\')"'],
];

describe('SQL injection corpus', () => {
  it.each(INJECTION)('%s → exactly its answer', async (payload, error) => {
    const qs = payload.replace(/[^=&]+=(.*)/, (m, v: string) => m.slice(0, m.length - v.length) + encodeURIComponent(v));
    for (const t of ['people', 'prods']) {
      const r = await list(t, qs);
      if (error === null) {
        expect(r.status, t).toBe(200);
        expect(r.body.rows, t).toEqual([]);
      } else {
        expect(r.status, t).toBe(400);
        expect(r.body.error, t).toEqual({ code: 'invalid_request', message: error });
      }
    }
  });

  it.each([
    ['people; DROP TABLE people', 400, 'invalid_request', 'invalid table name'],
    ["people'--", 400, 'invalid_request', 'invalid table name'],
    ['people"', 400, 'invalid_request', 'invalid table name'],
    ['sqlite_master', 400, 'invalid_request', 'invalid table name'],
    ['_svc_meta.tables', 400, 'invalid_request', 'invalid table name'],
    ['"_svc_auth.users"', 400, 'invalid_request', 'invalid table name'],
    ['..', 404, 'not_found', 'route "GET /db/rows" not found'],
    ['PEOPLE', 400, 'invalid_request', 'invalid table name'],
  ] as [string, number, string, string][])('table name %s → %i %s', async (name, status, code, message) => {
    const r = await call('GET', `/db/tables/${encodeURIComponent(name)}/rows`);
    expect(r.status).toBe(status);
    expect(r.body.error).toEqual({ code, message });
  });

  it('column names in a table body are validated', async () => {
    for (const name of ['a; drop', 'a"b', "a'b", 'A', '1a', 'rowid']) {
      const r = await call('POST', '/db/tables', { name: 'inj', type: 'relational', columns: [{ name, type: 'text' }] }, s.keys.service);
      expect(r.status).toBe(400);
    }
    const r = await call('POST', '/db/tables', { name: 'inj', type: 'relational', columns: [{ name: 'c', type: 'text', default: "x'); DROP TABLE people; --" }] }, s.keys.service);
    expect(r.status).toBe(201);
    const row = await call('POST', '/db/tables/inj/rows', { data: {} });
    expect(row.body.data.c).toBe("x'); DROP TABLE people; --");
  });

  it('the tables are intact afterwards', async () => {
    expect(names(await list('people', ''))).toEqual(['ann', 'bob', 'cid', 'dee', 'Eve']);
    expect((await list('prods', 'count=exact')).body.total).toBe(3);
  });
});
