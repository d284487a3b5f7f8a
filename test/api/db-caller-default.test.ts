import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventSource } from '../helpers/realtime.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// `default auth.uid()` (docs/sql.md "The caller in stored defaults"): a column's DEFAULT reads
// whoever writes the row, on every door; the service role and internal writes read NULL.

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };
const PASSWORD = 'correct horse battery staple 1';
type Who = { token: string } | 'service' | 'anon';
interface User {
  id: string;
  token: string;
}

async function call(method: string, path: string, body: unknown, who: Who) {
  const headers: Record<string, string> = body === undefined ? {} : { ...JSON_H };
  if (typeof who === 'object') headers.authorization = `Bearer ${who.token}`;
  const key = who === 'service' ? s.keys.service : s.keys.publishable;
  const res = await s.req(path, { method, key, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
const sql = async (text: string, who: Who = 'service', params: unknown[] = []) => {
  const r = await call('POST', '/db/query', { sql: text, params }, who);
  expect(r.status, `${text}: ${r.text}`).toBe(200);
  return r.body.rows as Record<string, unknown>[];
};
async function signUp(email: string): Promise<User> {
  const r = await call('POST', '/auth/register', { email, password: PASSWORD }, 'anon');
  expect(r.status, r.text).toBe(200);
  return { id: r.body.user.id, token: r.body.access_token };
}

let alice: User;
let bob: User;

beforeAll(async () => {
  s = await startTestServer();
  await sql(`
    create table public.entries (
      id uuid primary key default gen_random_uuid(),
      user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
      author_role text default auth.role(),
      author_email text default auth.jwt() ->> 'email',
      note text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    alter table public.entries enable row level security;
    create policy "own entries" on public.entries for all to authenticated
      using ((select auth.uid()) = user_id) with check ((select auth.uid()) = user_id);`);
  alice = await signUp('alice@example.com');
  bob = await signUp('bob@example.com');
});
afterAll(() => s.close());

describe('a DEFAULT naming the caller', () => {
  it('is the writing user\'s id, role and e-mail claim through the rows API and GraphQL', async () => {
    const r = await call('POST', '/db/tables/entries/rows', { data: { note: 'a' } }, alice);
    expect(r.status, r.text).toBe(201);
    expect(r.body.data).toEqual({ user_id: alice.id, author_role: 'authenticated', author_email: 'alice@example.com', note: 'a' });
    const g = await call('POST', '/db/graphql', { query: 'mutation { insert_entries(object: {note: "b"}) { user_id author_role author_email } }' }, bob);
    expect(g.body).toEqual({ data: { insert_entries: { user_id: bob.id, author_role: 'authenticated', author_email: 'bob@example.com' } } });
    const rpc = await call('POST', '/db/rpc', { jsonrpc: '2.0', id: 1, method: 'db.insert', params: { table: 'entries', data: { note: 'c' } } }, bob);
    expect(rpc.body.result.data, rpc.text).toMatchObject({ user_id: bob.id, note: 'c' });
  });

  it('is the importing user\'s for every row of an NDJSON import', async () => {
    const res = await s.req('/db/tables/entries/import', { method: 'POST', key: s.keys.publishable, headers: { authorization: `Bearer ${bob.token}`, 'content-type': 'application/x-ndjson' }, body: '{"data":{"note":"imported 1"}}\n{"data":{"note":"imported 2"}}\n' });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await res.json()).toEqual({ inserted: 2 });
    expect(await sql(`select distinct user_id from entries where note like 'imported %'`)).toEqual([{ user_id: bob.id }]);
  });

  it('is the invoking user\'s in a function\'s ctx.db.insert', async () => {
    const dep = await call('PUT', '/functions/jot', { source: 'export default async ({ note }, ctx) => (await ctx.db.insert(\'entries\', { note })).data;' }, 'service');
    expect(dep.status, dep.text).toBeLessThan(300);
    const r = await call('POST', '/functions/jot', { note: 'from a function' }, alice);
    expect(r.status, r.text).toBe(200);
    expect(r.body.result).toMatchObject({ user_id: alice.id, author_role: 'authenticated', note: 'from a function' });
  });

  it('is shown as written by information_schema.columns and GET /db/tables', async () => {
    const listed = await call('GET', '/db/tables', undefined, 'service');
    const cols = listed.body.tables.find((t: { name: string }) => t.name === 'entries').columns;
    expect(cols.find((c: { name: string }) => c.name === 'user_id')).toMatchObject({ type: 'uuid', default: 'auth.uid()' });
    expect(cols.find((c: { name: string }) => c.name === 'author_email')).toMatchObject({ default: "(auth.jwt() ->> 'email')" });
    expect(await sql(`select column_name, column_default from information_schema.columns where table_name = 'entries' and column_name in ('user_id', 'author_role', 'author_email') order by column_name`)).toEqual([
      { column_name: 'author_email', column_default: "(auth.jwt() ->> 'email')" },
      { column_name: 'author_role', column_default: 'auth.role()' },
      { column_name: 'user_id', column_default: 'auth.uid()' },
    ]);
  });

  it('is NULL for the service role: an omitted NOT NULL owner is Postgres\' 23502, on the rows API and in SQL', async () => {
    const msg = 'null value in column "user_id" of relation "entries" violates not-null constraint';
    const r = await call('POST', '/db/tables/entries/rows', { data: { note: 'by the service' } }, 'service');
    expect(r.status, r.text).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'invalid_field', message: msg, details: { sqlstate: '23502', column: 'user_id' } });
    const q = await call('POST', '/db/query', { sql: `insert into entries (note) values ('by the service')` }, 'service');
    expect(q.status, q.text).toBe(400);
    expect(q.body.error).toMatchObject({ message: msg, details: { sqlstate: '23502' } });
    // named explicitly, the service role writes for anyone; its role default is service_role, no e-mail claim
    expect(await sql(`insert into entries (user_id, note) values ($1, 'for alice') returning user_id, author_role, author_email`, 'service', [alice.id]))
      .toEqual([{ user_id: alice.id, author_role: 'service_role', author_email: null }]);
    expect(await sql(`select count(*) as n from entries where note = 'by the service'`)).toEqual([{ n: 0 }]);
  });

  it('cannot be forged: an explicit owner is the policy\'s to judge, and anon is refused before NOT NULL', async () => {
    const forged = await call('POST', '/db/tables/entries/rows', { data: { user_id: alice.id, note: 'forged' } }, bob);
    expect(forged.status, forged.text).toBe(403);
    expect(forged.body.error.code).toBe('rls_denied');
    const anon = await call('POST', '/db/tables/entries/rows', { data: { note: 'anon' } }, 'anon');
    expect(anon.status, anon.text).toBe(403);
    expect(anon.body.error.code).toBe('rls_denied');
    expect(await sql(`select count(*) as n from entries where note in ('forged', 'anon')`)).toEqual([{ n: 0 }]);
  });

  it('gives each of many concurrent inserts from two users its own writer', async () => {
    const writes = Array.from({ length: 40 }, (_, i) => {
      const who = i % 2 === 0 ? alice : bob;
      const note = `burst ${i}`;
      return i % 4 < 2
        ? call('POST', '/db/tables/entries/rows', { data: { note } }, who).then((r) => ({ who, r, got: r.body?.data?.user_id }))
        : call('POST', '/db/graphql', { query: `mutation { insert_entries(object: {note: "${note}"}) { user_id } }` }, who).then((r) => ({ who, r, got: r.body?.data?.insert_entries?.user_id }));
    });
    for (const { who, r, got } of await Promise.all(writes)) expect(got, r.text).toBe(who.id);
    expect(await sql(`select u.email, count(*) as n from entries e join auth.users u on u.id = e.user_id where e.note like 'burst %' group by u.email order by u.email`))
      .toEqual([{ email: 'alice@example.com', n: 20 }, { email: 'bob@example.com', n: 20 }]);
    expect(await sql(`select count(*) as n from entries where note like 'burst %' and user_id = auth.uid()`, alice)).toEqual([{ n: 20 }]);
  });

  it('reaches the change stream with the row as stored', async () => {
    const es = openEventSource(`${s.url}/realtime/stream?table=entries&apikey=${s.keys.service}`);
    try {
      await es.next((m) => m.event === 'ready');
      const r = await call('POST', '/db/tables/entries/rows', { data: { note: 'streamed' } }, alice);
      expect(r.status, r.text).toBe(201);
      expect((await es.next((m) => m.event === 'change')).data).toMatchObject({ op: 'insert', id: r.body.id, data: { user_id: alice.id, note: 'streamed' } });
    } finally {
      es.close();
    }
  });

  it('works in ALTER TABLE … ADD COLUMN and in a trigger body (new.owner := auth.uid())', async () => {
    await sql(`
      create table public.stickies (id serial primary key, body text not null);
      alter table public.stickies add column owner uuid default auth.uid();
      create table public.pins (id serial primary key, label text, pinned_by uuid);
      create function public.pin_owner() returns trigger language plpgsql as $$
      begin
        new.pinned_by := coalesce(new.pinned_by, auth.uid());
        return new;
      end;
      $$;
      create trigger pins_owner before insert on public.pins for each row execute function public.pin_owner();
      create table public.pin_log (id serial primary key, pin_id int, actor uuid default auth.uid());
      create function public.log_pin() returns trigger language plpgsql security definer as $$
      begin
        insert into public.pin_log (pin_id) values (new.id);
        return new;
      end;
      $$;
      create trigger pins_log after insert on public.pins for each row execute function public.log_pin();`);
    const st = await call('POST', '/db/tables/stickies/rows', { data: { body: 'hello' } }, bob);
    expect(st.body.data, st.text).toEqual({ body: 'hello', owner: bob.id });
    // a table with rows cannot take a column whose default is not a constant (SQLite fills existing rows)
    const full = await call('POST', '/db/query', { sql: 'alter table stickies add column editor uuid default auth.uid()' }, 'service');
    expect(full.status, full.text).toBe(400);
    expect(full.body.error.code).toBe('unsupported_sql');
    expect(full.body.error.message).toContain('on a table that has rows');
    const p = await call('POST', '/db/tables/pins/rows', { data: { label: 'x' } }, alice);
    expect(p.body.data, p.text).toEqual({ label: 'x', pinned_by: alice.id });
    expect(await sql(`insert into pins (label) values ('by the service') returning pinned_by`)).toEqual([{ pinned_by: null }]);
    // a trigger body's insert takes its defaults from the same writer (security definer too, as in Supabase)
    expect(await sql(`select actor from pin_log order by id`)).toEqual([{ actor: alice.id }, { actor: null }]);
  });
});

describe('a DEFAULT naming what it cannot', () => {
  it('answers 400 unsupported_sql naming the construct, and makes nothing', async () => {
    const other = await call('POST', '/db/query', { sql: 'create table t_email (id serial primary key, e text default auth.email())' }, 'service');
    expect(other.status, other.text).toBe(400);
    expect(other.body.error.code).toBe('unsupported_sql');
    expect(other.body.error.message).toContain('auth.email');
    const sub = await call('POST', '/db/query', { sql: 'create table t_sub (id serial primary key, u uuid default (select auth.uid()))' }, 'service');
    expect(sub.status, sub.text).toBe(400);
    expect(sub.body.error).toMatchObject({ code: 'unsupported_sql', message: 'cannot use subquery in DEFAULT expression', details: { sqlstate: '0A000' } });
    const check = await call('POST', '/db/query', { sql: 'create table t_check (id serial primary key, u uuid check (u = auth.uid()))' }, 'service');
    expect(check.status, check.text).toBe(400);
    expect(check.body.error.code).toBe('unsupported_sql');
    expect(await sql(`select count(*) as n from information_schema.tables where table_name in ('t_email', 't_sub', 't_check')`)).toEqual([{ n: 0 }]);
  });
});
