import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// Arrays of integers, numbers, booleans and uuids through every door (docs/sql.md "Arrays").
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
  await ok(`create table boxes (id serial primary key, sizes int[] not null default '{}', weights numeric[], flags boolean[], owners uuid[], big bigint[])`);
});
afterAll(() => s.close());

const JSON_HEADERS = { 'content-type': 'application/json' };
type Result = { command: string; columns: { name: string; type: string }[]; rows: Record<string, unknown>[] };
const post = (sql: string, params: unknown[] = []) => s.req('/db/query', { method: 'POST', key: s.keys.service, headers: JSON_HEADERS, body: JSON.stringify({ sql, params }) });
async function ok(sql: string, params: unknown[] = []): Promise<Result> {
  const res = await post(sql, params);
  const body = (await res.json()) as Result;
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
}
const call = async (method: string, path: string, body?: unknown) => {
  const res = await s.req(path, { method, key: s.keys.service, headers: JSON_HEADERS, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (res.status === 204 ? null : await res.json()) as Record<string, unknown> };
};
const U1 = '0b8c7a3e-1d2f-4a5b-8c6d-7e8f90a1b2c3';

describe('int[], numeric[], boolean[], uuid[] and bigint[] columns', () => {
  it('are written and read by SQL as JSON arrays of numbers, booleans and strings, typed', async () => {
    const ins = await ok(`insert into boxes (sizes, weights, flags, owners, big) values ('{1,2,NULL}', array[1.5, 2], '{t,f}', $1, '{9007199254740991}') returning sizes, weights, flags, owners, big`, [[U1.toUpperCase()]]);
    expect(ins.columns.map((c) => c.type)).toEqual(['int4[]', 'numeric[]', 'bool[]', 'uuid[]', 'int8[]']);
    expect(ins.rows).toEqual([{ sizes: [1, 2, null], weights: [1.5, 2], flags: [true, false], owners: [U1], big: [9007199254740991] }]);
    const sel = await ok(`select id, sizes[2] as second, array_length(sizes, 1) as n, 2 = any(sizes) as has2, sizes @> array[1] as has1, array_append(sizes, 3) as more from boxes`);
    expect(sel.rows).toEqual([{ id: 1, second: 2, n: 3, has2: true, has1: true, more: [1, 2, null, 3] }]);
    expect((await ok(`select array_agg(s order by s) as all_sizes from boxes, unnest(sizes) s where s is not null`)).rows).toEqual([{ all_sizes: [1, 2] }]);
  });

  it('checks each element on every write path: 22P02 as Postgres words it, nothing written', async () => {
    const bad = await post(`insert into boxes (sizes) values ('{1,x}')`);
    expect(bad.status).toBe(400);
    const e = await errorOf(bad);
    expect(e.message).toBe('invalid input syntax for type integer: "x"');
    expect(e.details?.sqlstate).toBe('22P02');
    expect((await errorOf(await post(`select '{1,2'::int[]`))).message).toBe('malformed array literal: "{1,2"');
    expect((await errorOf(await post(`insert into boxes (sizes) values ($1)`, [[1, 'two']]))).message).toBe('invalid input syntax for type integer: "two"');
    // the rows API and GraphQL write the same table: a non-integer element is refused by the column's check
    const viaRows = await call('POST', '/db/tables/boxes/rows', { data: { sizes: [1, 'two'] } });
    expect(viaRows.status).toBe(400);
    const viaFloat = await call('POST', '/db/tables/boxes/rows', { data: { sizes: [1.5] } });
    expect(viaFloat.status).toBe(400);
    expect((await ok(`select count(*) as n from boxes`)).rows).toEqual([{ n: 1 }]);
  });

  it('are JSON arrays of numbers (not strings) through the rows API and GraphQL', async () => {
    const created = await call('POST', '/db/tables/boxes/rows', { data: { sizes: [5, 6], flags: [true], weights: [0.25] } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.data).toMatchObject({ sizes: [5, 6], flags: [true], weights: [0.25] });
    const got = await call('GET', '/db/tables/boxes/rows/1');
    expect(got.body.data).toMatchObject({ sizes: [1, 2, null], weights: [1.5, 2], flags: [true, false], owners: [U1] });
    const gql = await call('POST', '/db/graphql', { query: '{ boxes(order: "id.asc") { id sizes flags } }' });
    expect(gql.body).toEqual({ data: { boxes: [{ id: '1', sizes: [1, 2, null], flags: [true, false] }, { id: '2', sizes: [5, 6], flags: [true] }] } });
    expect((await ok(`select id from boxes where 6 = any(sizes)`)).rows).toEqual([{ id: 2 }]);
    // a GraphQL insert writes numbers, and a string element is refused there too
    const gIns = await call('POST', '/db/graphql', { query: 'mutation($o: boxes_insert_input!) { insert_boxes(object: $o) { id sizes } }', variables: { o: { sizes: [7, null] } } });
    expect(gIns.body).toEqual({ data: { insert_boxes: { id: '3', sizes: [7, null] } } });
    const gBad = await call('POST', '/db/graphql', { query: 'mutation($o: boxes_insert_input!) { insert_boxes(object: $o) { id } }', variables: { o: { sizes: ['x'] } } });
    expect(JSON.stringify(gBad.body)).toContain('malformed array literal');
    expect((await ok(`select sizes from boxes where id = 3`)).rows).toEqual([{ sizes: [7, null] }]);
    await ok(`delete from boxes where id = 3`);
  });

  it('works in ALTER TABLE … ADD COLUMN and shows in information_schema', async () => {
    await ok(`alter table boxes add column scores integer[] default '{0}'`);
    expect((await ok(`select scores from boxes where id = 1`)).rows).toEqual([{ scores: [0] }]);
    const cols = await ok(`select column_name, data_type, udt_name from information_schema.columns where table_name = 'boxes' and column_name in ('sizes', 'flags', 'scores') order by ordinal_position`);
    expect(cols.rows).toEqual([
      { column_name: 'sizes', data_type: 'ARRAY', udt_name: '_int4' },
      { column_name: 'flags', data_type: 'ARRAY', udt_name: '_bool' },
      { column_name: 'scores', data_type: 'ARRAY', udt_name: '_int4' },
    ]);
    const badDefault = await post(`alter table boxes add column more int[] default '{a}'`);
    expect(badDefault.status).toBe(400);
    expect((await errorOf(badDefault)).details?.sqlstate).toBe('22P02');
  });
});
