import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventSource } from '../helpers/realtime.js';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// Data-modifying statements in WITH through POST /db/query (docs/sql.md "Data-modifying WITH").
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
  await ok(`create table orgs (id bigserial primary key, name text not null unique);
    create table members (id bigserial primary key, org_id bigint not null references orgs (id), user_id uuid not null, role text default 'member');
    create table items (id integer primary key, label text, qty int)`);
});
afterAll(() => s.close());

type Result = { command: string; columns: { name: string; type: string }[]; rows: Record<string, unknown>[]; row_count: number };
const post = (sql: string, params: unknown[] = [], key: string = s.keys.service) =>
  s.req('/db/query', { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql, params }) });
async function ok(sql: string, params: unknown[] = []): Promise<Result> {
  const res = await post(sql, params);
  const body = (await res.json()) as Result;
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
}
const rows = async (sql: string) => (await ok(sql)).rows;
const USER = '6f1c2d3e-4b5a-4c6d-8e7f-0123456789ab';

describe('data-modifying WITH', () => {
  it('inserts into two tables in one statement: the second reads the first one’s RETURNING', async () => {
    const r = await ok(`with ins as (insert into orgs (name) values ('acme') returning id) insert into members (org_id, user_id, role) select id, $1, 'owner' from ins returning org_id, role`, [USER]);
    expect(r.command).toBe('INSERT');
    expect(r.columns).toEqual([
      { name: 'org_id', type: 'int8' },
      { name: 'role', type: 'text' },
    ]);
    expect(r.rows).toEqual([{ org_id: 1, role: 'owner' }]);
    expect(await rows(`select o.name, m.user_id, m.role from members m join orgs o on o.id = m.org_id`)).toEqual([{ name: 'acme', user_id: USER, role: 'owner' }]);
  });

  it('answers the main query over DELETE … RETURNING and UPDATE … RETURNING', async () => {
    await ok(`insert into items (id, label, qty) values (1, 'a', 1), (2, 'b', 2), (3, 'c', 3), (4, 'd', null)`);
    const del = await ok(`with del as (delete from items where qty >= 2 returning *) select count(*) as n, sum(qty) as total from del`);
    expect(del.command).toBe('SELECT');
    expect(del.rows).toEqual([{ n: 2, total: 5 }]);
    expect(await rows(`select id from items order by id`)).toEqual([{ id: 1 }, { id: 4 }]);
    const up = await ok(`with u (item, before_label) as (update items set label = upper(label) where id = 1 returning id, label) select item, before_label from u`);
    expect(up.rows).toEqual([{ item: 1, before_label: 'A' }]);
  });

  it('runs several items in order, each naming the earlier ones, with an ordinary CTE among them', async () => {
    const r = await ok(`with a as (insert into items (id, label, qty) values (10, 'x', 5), (11, 'y', 6) returning id, qty),
      twice as (select id, qty * 2 as q from a),
      b as (update items set qty = twice.q from twice where items.id = twice.id returning items.id, items.qty),
      c as (delete from items where id = 4 returning id)
      select (select count(*) from a) as inserted, (select sum(qty) from b) as updated, (select count(*) from c) as deleted`);
    expect(r.rows).toEqual([{ inserted: 2, updated: 22, deleted: 1 }]);
    expect(await rows(`select id, qty from items order by id`)).toEqual([
      { id: 1, qty: 1 },
      { id: 10, qty: 10 },
      { id: 11, qty: 12 },
    ]);
    // an item without RETURNING still runs
    await ok(`with gone as (delete from items where id = 11) select 1 as one`);
    expect(await rows(`select count(*) as n from items where id = 11`)).toEqual([{ n: 0 }]);
    // ... and is not a name the main statement can read (nothing runs)
    const unnamed = await post(`with gone as (delete from items where id = 10) select * from gone`);
    expect(unnamed.status).toBe(400);
    const e = await errorOf(unnamed);
    expect(e.message).toBe('WITH query "gone" does not have a RETURNING clause');
    expect(e.details?.sqlstate).toBe('0A000');
    expect(await rows(`select count(*) as n from items where id = 10`)).toEqual([{ n: 1 }]);
  });

  it('rolls back the whole statement and script on any error, naming the failing statement', async () => {
    // the main INSERT fails (not null): the CTE's org is not kept
    const res = await post(`with ins as (insert into orgs (name) values ('ghost') returning id) insert into members (org_id, user_id) select id, null from ins`);
    expect(res.status).toBe(400);
    expect((await errorOf(res)).details?.sqlstate).toBe('23502');
    expect(await rows(`select count(*) as n from orgs where name = 'ghost'`)).toEqual([{ n: 0 }]);
    // the second statement of a script fails in its CTE (unique): the first one's write is undone too
    const script = await post(`insert into items (id, label) values (20, 'kept?');
      with dup as (insert into orgs (name) values ('acme') returning id) select id from dup`);
    expect(script.status).toBe(409);
    const e = await errorOf(script);
    expect(e.details).toMatchObject({ sqlstate: '23505', statement: 1 });
    expect(await rows(`select count(*) as n from items where id = 20`)).toEqual([{ n: 0 }]);
    // the TEMP tables are gone after success and after failure: the same statement runs again
    const again = await ok(`with ins as (insert into orgs (name) values ('beta') returning id, name) select name from ins`);
    expect(again.rows).toEqual([{ name: 'beta' }]);
    expect((await ok(`with ins as (insert into orgs (name) values ('gamma') returning id, name) select name from ins`)).rows).toEqual([{ name: 'gamma' }]);
  });

  it('refuses callers without the service role exactly as their plain writes, and applies GRANTs to each item', async () => {
    const plain = await post(`insert into orgs (name) values ('p')`, [], s.keys.publishable);
    const cte = await post(`with ins as (insert into orgs (name) values ('p') returning id) select id from ins`, [], s.keys.publishable);
    expect(cte.status).toBe(plain.status);
    expect((await errorOf(cte)).code).toBe((await errorOf(plain)).code);
    await ok(`revoke delete on items from service_role`);
    const denied = await post(`with d as (delete from items returning id) select count(*) from d`);
    expect(denied.status).toBe(403);
    expect((await errorOf(denied)).details?.sqlstate).toBe('42501');
    await ok(`grant delete on items to service_role`);
    expect(await rows(`select count(*) as n from items`)).toEqual([{ n: 2 }]);
  });

  it('refuses a data-modifying item below the top level as Postgres does', async () => {
    const res = await post(`select * from (with x as (delete from items returning id) select id from x) t`);
    expect(res.status).toBe(400);
    const e = await errorOf(res);
    expect(e.message).toBe('WITH clause containing a data-modifying statement must be at the top level');
    expect(e.details?.sqlstate).toBe('0A000');
  });

  it('emits change events for the rows the items write (realtime and the change log)', async () => {
    await ok(`create table notes (id integer primary key, body text)`);
    const es = openEventSource(`${s.url}/realtime/stream?table=notes&apikey=${s.keys.service}`);
    try {
      await es.next((m) => m.event === 'ready');
      await ok(`with a as (insert into notes (id, body) values (1, 'one'), (2, 'two') returning id), b as (delete from notes where id = 1 returning id) select (select count(*) from a) as n`);
      const seen = [await es.next((m) => m.event === 'change'), await es.next((m) => m.event === 'change'), await es.next((m) => m.event === 'change')];
      expect(seen.map((e) => e.data)).toMatchObject([
        { op: 'insert', table: 'notes', data: { body: 'one' } },
        { op: 'insert', table: 'notes', data: { body: 'two' } },
        { op: 'delete', table: 'notes' },
      ]);
    } finally {
      es.close();
    }
    const log = await s.readBackup((db) => db.prepare(`SELECT op, row_id FROM "_svc_meta.change_log" WHERE tbl = 'notes' ORDER BY seq`).all());
    expect(log).toEqual([
      { op: 'insert', row_id: '1' },
      { op: 'insert', row_id: '2' },
      { op: 'delete', row_id: '1' },
    ]);
  });

  it('takes an ordinary WITH on INSERT, UPDATE and DELETE', async () => {
    await ok(`with src (id, label) as (values (30, 'w'), (31, 'z')) insert into items (id, label) select id, label from src`);
    await ok(`with t as (select 30 as id) update items set qty = 7 where id in (select id from t)`);
    await ok(`with t as (select 31 as id) delete from items where id in (select id from t)`);
    expect(await rows(`select id, qty from items where id >= 30 order by id`)).toEqual([{ id: 30, qty: 7 }]);
  });
});
