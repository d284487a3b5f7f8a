import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// CREATE FUNCTION … LANGUAGE sql, inlined where called (docs/sql.md "Functions and triggers").

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };
async function call(method: string, path: string, body?: unknown, key: string = s.keys.service) {
  const res = await s.req(path, { method, key, headers: body === undefined ? {} : JSON_H, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
const q = (sql: string, params: unknown[] = [], key?: string) => call('POST', '/db/query', { sql, params }, key);
const ok = async (sql: string, params: unknown[] = [], key?: string) => {
  const r = await q(sql, params, key);
  expect(r.status, `${sql}: ${r.text}`).toBe(200);
  return r.body as { rows: Record<string, unknown>[]; results?: Array<{ rows: Record<string, unknown>[] }> };
};

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

describe('LANGUAGE sql functions', () => {
  it('an expression function is inlined, in the script that creates it and after; named and positional parameters', async () => {
    const r = await ok(`
      create function add_one(x int) returns int language sql immutable as $$ select x + 1 $$;
      create function public.greet(text, text) returns text language sql as $$ select $1 || ', ' || $2 || '!' $$;
      select add_one(41) as a, greet('hello', 'world') as g`);
    expect(r.results![2]!.rows).toEqual([{ a: 42, g: 'hello, world!' }]);
    expect((await ok(`select add_one(n) as v from (values (1), (2)) as t(n) order by v`)).rows).toEqual([{ v: 2 }, { v: 3 }]);
    expect((await ok(`select add_one($1) as v`, [9])).rows).toEqual([{ v: 10 }]);
  });

  it('a function over a table, used in WHERE; OR REPLACE changes what the same query answers; DROP FUNCTION ends it', async () => {
    await ok(`
      create table members (id serial primary key, org text not null, who text not null);
      insert into members (org, who) values ('a', 'ann'), ('a', 'bob'), ('b', 'cy');
      create function org_size(o text) returns bigint language sql stable as $$ select count(*) from members where org = o $$;`);
    const sql = `select distinct org, org_size(org) as n from members where org_size(org) > 1`;
    expect((await ok(sql)).rows).toEqual([{ org: 'a', n: 2 }]);
    await ok(`create or replace function org_size(o text) returns bigint language sql stable as $$ select count(*) * 10 from members where org = o $$`);
    expect((await ok(`${sql} order by org`)).rows).toEqual([{ org: 'a', n: 20 }, { org: 'b', n: 10 }]);
    await ok(`drop function org_size`);
    const gone = await q(sql);
    expect(gone.status).toBe(400);
    expect(gone.body.error.code).toBe('unsupported_sql');
  });

  it('SECURITY DEFINER reads without the caller\'s RLS; an invoker function with it', async () => {
    await ok(`create table vault (id uuid primary key default gen_random_uuid(), secret text not null, shown boolean not null default false,
        created_at timestamptz not null default now(), updated_at timestamptz not null default now());
      insert into vault (secret, shown) values ('a', true), ('b', false), ('c', false);
      create function vault_total() returns bigint language sql stable security definer set search_path = '' as $$ select count(*) from public.vault $$;
      create function vault_visible() returns bigint language sql stable as $$ select count(*) from vault $$;`);
    const rls = await call('PUT', '/db/tables/vault/rls', { enabled: true, policies: { select: 'shown = true' } });
    expect(rls.status, rls.text).toBe(200);
    expect((await ok(`select vault_total() as total, vault_visible() as visible`, [], s.keys.publishable)).rows).toEqual([{ total: 3, visible: 1 }]);
    expect((await ok(`select vault_total() as total, vault_visible() as visible`)).rows).toEqual([{ total: 3, visible: 3 }]);
  });

  it('is inlined in a trigger body too', async () => {
    await ok(`
      create table words (id serial primary key, w text, n int);
      create function wlen(t text) returns int language sql immutable as $$ select length(t) $$;
      create function words_len() returns trigger language plpgsql as $$ begin new.n := wlen(new.w) * 2; return new; end $$;
      create trigger words_len before insert on words for each row execute function words_len();
      insert into words (w) values ('hello')`);
    expect((await ok(`select w, n from words`)).rows).toEqual([{ w: 'hello', n: 10 }]);
  });

  it('refuses what it cannot inline, by name', async () => {
    for (const [sql, construct] of [
      [`create function f1() returns setof int language sql as $$ select 1 $$`, 'SETOF'],
      [`create function f2(x int default 1) returns int language sql as $$ select x $$`, 'defaults'],
      [`create function f3() returns int language sql as $$ delete from members returning id $$`, 'not one SELECT'],
      [`create function f4() returns int language plv8 as $$ return 1 $$`, 'LANGUAGE plv8'],
      [`create function f5() returns int language plpgsql as $$ begin return 1; end $$`, 'PL/pgSQL functions other than trigger functions'],
    ]) {
      const r = await q(sql!);
      expect(r.status, sql).toBe(400);
      expect(r.body.error.message).toContain(construct);
    }
    expect((await q(`create function add_one(x int) returns int language sql as $$ select x $$`)).body.error.details.sqlstate).toBe('42723');
  });
});
