import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventSource } from '../helpers/realtime.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// PL/pgSQL trigger functions compiled to SQLite triggers (docs/sql.md "Functions and triggers").

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };
async function call(method: string, path: string, body?: unknown, key: string = s.keys.service) {
  const res = await s.req(path, { method, key, headers: body === undefined ? {} : JSON_H, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
const q = (sql: string, params: unknown[] = []) => call('POST', '/db/query', { sql, params });
const ok = async (sql: string, params: unknown[] = []) => {
  const r = await q(sql, params);
  expect(r.status, `${sql}: ${r.text}`).toBe(200);
  return r.body as { rows: Record<string, unknown>[]; row_count: number; results?: Array<{ rows: Record<string, unknown>[] }> };
};
const OLD = '2020-01-01T00:00:00.000Z';

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

describe('BEFORE triggers that assign NEW fields', () => {
  it('keeps updated_at current (the Supabase moddatetime pattern)', async () => {
    await ok(`
      create table notes (id serial primary key, body text not null, updated_at timestamptz not null default now());
      create or replace function public.handle_updated_at() returns trigger language plpgsql security definer set search_path = '' as $$
      begin
        new.updated_at := now();
        return new;
      end;
      $$;
      create trigger notes_updated_at before update on notes for each row execute function public.handle_updated_at();`);
    await ok(`insert into notes (body, updated_at) values ('a', $1)`, [OLD]);
    const r = await ok(`update notes set body = 'b' where body = 'a'`);
    expect(r.row_count).toBe(1);
    const row = (await ok(`select body, updated_at from notes`)).rows[0]!;
    expect(row.body).toBe('b');
    expect(row.updated_at).not.toBe(OLD);
    expect(Date.now() - Date.parse(String(row.updated_at))).toBeLessThan(60_000);
  });

  it('normalises a field on insert and update, under IF/ELSIF/ELSE', async () => {
    await ok(`
      create table tags (id serial primary key, name text, slug text, kind text);
      create function tags_normalise() returns trigger language plpgsql as $$
      begin
        new.slug = lower(replace(trim(new.name), ' ', '-'));
        if new.name like '#%' then
          new.kind := 'hash';
        elsif tg_op = 'UPDATE' and old.kind is not null then
          new.kind := old.kind || '+';
        else
          new.kind := 'plain';
        end if;
        return new;
      end $$;
      create trigger tags_norm before insert or update of name on tags for each row execute procedure tags_normalise();`);
    await ok(`insert into tags (name) values ('  Hello World ')`);
    await ok(`insert into tags (name) values ('#Top')`);
    expect((await ok(`select name, slug, kind from tags order by id`)).rows).toEqual([
      { name: '  Hello World ', slug: 'hello-world', kind: 'plain' },
      { name: '#Top', slug: '#top', kind: 'hash' },
    ]);
    await ok(`update tags set name = 'Big Deal' where id = 1`);
    expect((await ok(`select slug, kind from tags where id = 1`)).rows).toEqual([{ slug: 'big-deal', kind: 'plain+' }]);
  });

  it('a body calling the server\'s own SQL functions (Unicode lower) fires from the rows API as from SQL', async () => {
    await ok(`
      create table posts (id uuid primary key default gen_random_uuid(), title text, slug text);
      create function posts_slugify() returns trigger language plpgsql as $$ begin new.slug := lower(new.title); return new; end $$;
      create trigger posts_slug before insert on posts for each row execute function posts_slugify();`);
    const w = await call('POST', '/db/tables/posts/rows', { data: { title: 'ÀBC Été' } });
    expect(w.status, w.text).toBe(201);
    expect(w.body.data).toMatchObject({ title: 'ÀBC Été', slug: 'àbc été' });
    await ok(`insert into posts (title) values ('ÉCOLE')`);
    expect((await ok(`select slug from posts order by slug`)).rows).toEqual([{ slug: 'àbc été' }, { slug: 'école' }]);
  });

  it('skips the row on RETURN NULL', async () => {
    await ok(`
      create table inbox (id serial primary key, msg text);
      create function drop_spam() returns trigger language plpgsql as $$
      begin
        if new.msg ilike '%spam%' then
          return null;
        end if;
        return new;
      end $$;
      create trigger no_spam before insert on inbox for each row execute function drop_spam();`);
    const r = await ok(`insert into inbox (msg) values ('hi'); insert into inbox (msg) values ('buy SPAM now'); select msg from inbox`);
    expect(r.results![2]!.rows).toEqual([{ msg: 'hi' }]);
  });
});

describe('AFTER triggers and RAISE', () => {
  it('writes an audit row into another table, with OLD and NEW', async () => {
    await ok(`
      create table accounts (id serial primary key, owner text, balance int not null default 0);
      create table audit (id serial primary key, tbl text, op text, account int, before int, after int);
      create function audit_accounts() returns trigger language plpgsql as $$
      begin
        if tg_op = 'DELETE' then
          insert into audit (tbl, op, account, before) values (tg_table_name, tg_op, old.id, old.balance);
          return old;
        end if;
        insert into audit (tbl, op, account, before, after) values (tg_table_name, tg_op, new.id, old.balance, new.balance);
        return new;
      end $$;
      create trigger accounts_audit after insert or update or delete on accounts for each row execute function audit_accounts();`);
    await ok(`insert into accounts (owner, balance) values ('ann', 10)`);
    await ok(`update accounts set balance = 25 where owner = 'ann'`);
    await ok(`delete from accounts where owner = 'ann'`);
    expect((await ok(`select tbl, op, account, before, after from audit order by id`)).rows).toEqual([
      { tbl: 'accounts', op: 'INSERT', account: 1, before: null, after: 10 },
      { tbl: 'accounts', op: 'UPDATE', account: 1, before: 10, after: 25 },
      { tbl: 'accounts', op: 'DELETE', account: 1, before: 25, after: null },
    ]);
  });

  it('RAISE EXCEPTION fails the statement with Postgres\' P0001 and its % arguments; nothing is written', async () => {
    await ok(`
      create table orders (id serial primary key, qty int);
      create function check_qty() returns trigger language plpgsql as $$
      begin
        if new.qty <= 0 then
          raise exception 'quantity must be positive, got % (order %)', new.qty, new.id;
        end if;
        return new;
      end $$;
      create trigger orders_qty before insert or update on orders for each row when (new.qty is not null) execute function check_qty();`);
    const bad = await q(`insert into orders (qty) values (5); insert into orders (id, qty) values (7, -2)`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toBe('quantity must be positive, got -2 (order 7)');
    expect(bad.body.error.details).toMatchObject({ sqlstate: 'P0001' });
    expect((await ok(`select count(*)::int as n from orders`)).rows).toEqual([{ n: 0 }]);
    await ok(`insert into orders (qty) values (null), (3)`);
    expect((await ok(`select count(*)::int as n from orders`)).rows).toEqual([{ n: 2 }]);
  });
});

describe('handle_new_user on auth.users', () => {
  it('fires on sign-up with new.id, new.email and new.raw_user_meta_data; the trigger\'s profiles row wins; one change event', async () => {
    const f = await call('PUT', '/auth/user-fields', { fields: [{ name: 'full_name', type: 'text', required: false, in_signup: false }, { name: 'avatar_url', type: 'text', required: false, in_signup: false }, { name: 'contact', type: 'text', required: false, in_signup: false }] });
    expect(f.status, f.text).toBe(200);
    await ok(`
      create function public.handle_new_user() returns trigger language plpgsql security definer set search_path = '' as $$
      begin
        insert into public.profiles (id, full_name, avatar_url, contact)
        values (new.id, new.raw_user_meta_data->>'full_name', new.raw_user_meta_data->>'avatar_url', new.email);
        return new;
      end;
      $$;
      create trigger on_auth_user_created after insert on auth.users for each row execute procedure public.handle_new_user();`);
    const es = openEventSource(`${s.url}/realtime/stream?table=profiles&apikey=${s.keys.service}`);
    try {
      await es.next((m) => m.event === 'ready');
      const reg = await call('POST', '/auth/register', { email: 'ada@example.com', password: 'correct horse battery', user_metadata: { full_name: 'Ada Lovelace', avatar_url: 'https://x.test/a.png' } }, s.keys.publishable);
      expect(reg.status, reg.text).toBe(200);
      const id = reg.body.user.id as string;
      const row = await call('GET', `/db/tables/profiles/rows/${id}`);
      expect(row.status).toBe(200);
      expect(row.body.data).toMatchObject({ full_name: 'Ada Lovelace', avatar_url: 'https://x.test/a.png', contact: 'ada@example.com' });
      const ev = await es.next((m) => m.event === 'change');
      expect(ev.data).toMatchObject({ op: 'insert', id, data: { full_name: 'Ada Lovelace', contact: 'ada@example.com' } });
      await es.quiet(300);
      // anonymous sign-up: no e-mail, no metadata
      const anon = await call('POST', '/auth/anonymous', undefined, s.keys.publishable);
      expect(anon.status, anon.text).toBe(200);
      const a = await call('GET', `/db/tables/profiles/rows/${anon.body.user.id}`);
      expect(a.body.data).toMatchObject({ full_name: null, contact: null });
    } finally {
      es.close();
    }
  });
});

describe('a RAISE in a trigger on auth.users', () => {
  it('fails the sign-up with 400 P0001 and makes nothing', async () => {
    await ok(`
      create function no_example_org() returns trigger language plpgsql as $$
      begin
        if new.email like '%@blocked.test' then raise exception 'sign-ups from % are closed', split_part(new.email, '@', 2); end if;
        return new;
      end $$;
      create trigger gate_signups before insert on auth.users for each row execute function no_example_org();`);
    const r = await call('POST', '/auth/register', { email: 'eve@blocked.test', password: 'correct horse battery' }, s.keys.publishable);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'invalid_request', message: 'sign-ups from blocked.test are closed', details: { sqlstate: 'P0001' } });
    expect((await ok(`select count(*)::int as n from auth.users where email = 'eve@blocked.test'`)).rows).toEqual([{ n: 0 }]);
    expect((await call('POST', '/auth/register', { email: 'fine@ok.test', password: 'correct horse battery' }, s.keys.publishable)).status).toBe(200);
    await ok(`drop trigger gate_signups on auth.users`);
  });
});

describe('change events of rows a trigger writes', () => {
  it('a row an AFTER trigger inserts is a change event, through SQL and through the rows API', async () => {
    expect((await call('POST', '/db/tables', { name: 'items', type: 'relational', columns: [{ name: 'title', type: 'text' }] })).status).toBe(201);
    expect((await call('POST', '/db/tables', { name: 'item_log', type: 'relational', columns: [{ name: 'item', type: 'text' }, { name: 'what', type: 'text' }] })).status).toBe(201);
    await ok(`
      create function log_item() returns trigger language plpgsql as $$
      begin
        insert into item_log (item, what) values (new.id, 'added ' || new.title);
        return new;
      end $$;
      create trigger items_log after insert on items for each row execute function log_item();`);
    const es = openEventSource(`${s.url}/realtime/stream?table=item_log&apikey=${s.keys.service}`);
    try {
      await es.next((m) => m.event === 'ready');
      const sql = await ok(`insert into items (title) values ('by sql') returning id`);
      const e1 = await es.next((m) => m.event === 'change');
      expect(e1.data).toMatchObject({ op: 'insert', table: 'item_log', data: { item: sql.rows[0]!.id, what: 'added by sql' } });
      const api = await call('POST', '/db/tables/items/rows', { data: { title: 'by api' } });
      expect(api.status).toBe(201);
      const e2 = await es.next((m) => m.event === 'change');
      expect(e2.data).toMatchObject({ op: 'insert', table: 'item_log', data: { item: api.body.id, what: 'added by api' } });
      // the script names the log table too: still one event per row
      await ok(`insert into items (title) values ('both'); select count(*) from item_log`);
      const e3 = await es.next((m) => m.event === 'change');
      expect(e3.data).toMatchObject({ data: { what: 'added both' } });
      expect(await es.quiet(300)).toEqual([]);
    } finally {
      es.close();
    }
    expect((await call('GET', '/db/tables/item_log/rows')).body.rows).toHaveLength(3);
  });

  it('rows a trigger updates or deletes in another table are change events too, with the row before (a counter cache, through the rows API and SQL)', async () => {
    expect((await call('POST', '/db/tables', { name: 'threads', type: 'relational', columns: [{ name: 'title', type: 'text' }, { name: 'replies', type: 'int8' }] })).status).toBe(201);
    expect((await call('POST', '/db/tables', { name: 'replies', type: 'relational', columns: [{ name: 'thread', type: 'text' }, { name: 'body', type: 'text' }] })).status).toBe(201);
    await ok(`
      create function count_replies() returns trigger language plpgsql as $$
      begin
        if tg_op = 'INSERT' then
          update threads set replies = coalesce(replies, 0) + 1 where id = new.thread::uuid;
        else
          update threads set replies = replies - 1 where id = old.thread::uuid;
          delete from threads where id = old.thread::uuid and replies = 0 and title = 'ephemeral';
        end if;
        return null;
      end $$;
      create trigger replies_count after insert or delete on replies for each row execute function count_replies();`);
    const th = (await call('POST', '/db/tables/threads/rows', { data: { title: 'ephemeral', replies: 0 } })).body;
    const es = openEventSource(`${s.url}/realtime/stream?table=threads&apikey=${s.keys.service}`);
    try {
      await es.next((m) => m.event === 'ready');
      const r1 = (await call('POST', '/db/tables/replies/rows', { data: { thread: th.id, body: 'first' } })).body;
      expect((await es.next((m) => m.event === 'change')).data).toMatchObject({ op: 'update', id: th.id, data: { replies: 1 }, old: { replies: 0 } });
      await ok(`insert into replies (thread, body) values ($1, 'second')`, [th.id]);
      expect((await es.next((m) => m.event === 'change')).data).toMatchObject({ op: 'update', id: th.id, data: { replies: 2 }, old: { replies: 1 } });
      expect((await call('DELETE', `/db/tables/replies/rows/${r1.id}`)).status).toBe(204);
      expect((await es.next((m) => m.event === 'change')).data).toMatchObject({ op: 'update', id: th.id, data: { replies: 1 } });
      await ok(`delete from replies where body = 'second'`);
      expect((await es.next((m) => m.event === 'change')).data).toMatchObject({ op: 'update', id: th.id, data: { replies: 0 } });
      expect((await es.next((m) => m.event === 'change')).data).toMatchObject({ op: 'delete', id: th.id, old: { title: 'ephemeral' } });
      expect(await es.quiet(300)).toEqual([]);
    } finally {
      es.close();
    }
  });

  it('RAISE EXCEPTION through the rows API is the same 400 P0001, nothing written', async () => {
    await ok(`
      create function no_empty_titles() returns trigger language plpgsql as $$
      begin
        if coalesce(new.title, '') = '' then raise exception 'title is required'; end if;
        return new;
      end $$;
      create trigger items_title before insert on items for each row execute function no_empty_titles();`);
    const r = await call('POST', '/db/tables/items/rows', { data: { title: '' } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'invalid_request', message: 'title is required', details: { sqlstate: 'P0001' } });
    expect((await ok(`select count(*)::int as n from items where title = ''`)).rows).toEqual([{ n: 0 }]);
  });
});

describe('refused and dropped', () => {
  const fn = (body: string) => `create function f_bad() returns trigger language plpgsql as $$ ${body} $$`;
  it.each([
    ['begin loop end loop; return new; end', 'LOOP'],
    ['begin while true loop end loop; return new; end', 'WHILE loops'],
    ['begin for i in 1..10 loop null; end loop; return new; end', 'FOR loops'],
    ["begin execute 'delete from x'; return new; end", 'EXECUTE (dynamic SQL)'],
    ['declare c cursor for select 1; begin open c; return new; end', 'cursors (OPEN)'],
    ['begin perform pg_sleep(1); return new; end', 'PERFORM'],
    ['begin return new; exception when others then return null; end', 'EXCEPTION blocks'],
    ['declare n int; begin n := 1; return new; end', 'local variables'],
  ])('%s is a 400 naming the construct', async (body, construct) => {
    const r = await q(fn(body));
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('unsupported_sql');
    expect(r.body.error.message).toContain(construct);
  });

  it('RETURN NULL through the rows API: nothing inserted, a 400', async () => {
    expect((await call('POST', '/db/tables', { name: 'gated', type: 'relational', columns: [{ name: 'ok', type: 'bool' }] })).status).toBe(201);
    await ok(`create function gate() returns trigger language plpgsql as $$ begin if not new.ok then return null; end if; return new; end $$;
      create trigger gate_t before insert on gated for each row execute function gate();`);
    expect((await call('POST', '/db/tables/gated/rows', { data: { ok: true } })).status).toBe(201);
    const r = await call('POST', '/db/tables/gated/rows', { data: { ok: false } });
    expect(r.status).toBe(400);
    expect((await call('GET', '/db/tables/gated/rows')).body.rows).toHaveLength(1);
  });

  it('DROP FUNCTION is refused while a trigger uses it (2BP01); DROP TRIGGER then DROP FUNCTION work; errors as Postgres', async () => {
    await ok(`create table d (id serial primary key, v text);
      create function d_fn() returns trigger language plpgsql as $$ begin new.v := upper(new.v); return new; end $$;
      create trigger d_t before insert on d for each row execute function d_fn();`);
    const dep = await q(`drop function d_fn`);
    expect(dep.status).toBe(400);
    expect(dep.body.error).toMatchObject({ message: 'cannot drop function d_fn() because other objects depend on it', details: { sqlstate: '2BP01' } });
    const again = await q(`create function d_fn() returns trigger language plpgsql as $$ begin return new; end $$`);
    expect(again.body.error.details.sqlstate).toBe('42723');
    const dup = await q(`create trigger d_t before insert on d for each row execute function d_fn()`);
    expect(dup.body.error).toMatchObject({ message: 'trigger "d_t" for relation "d" already exists', details: { sqlstate: '42710' } });
    // OR REPLACE recompiles the trigger
    await ok(`create or replace function d_fn() returns trigger language plpgsql as $$ begin new.v := lower(new.v); return new; end $$`);
    await ok(`insert into d (v) values ('MiXed')`);
    await ok(`drop trigger d_t on d; drop function d_fn(); insert into d (v) values ('KeEp')`);
    expect((await ok(`select v from d order by id`)).rows).toEqual([{ v: 'mixed' }, { v: 'KeEp' }]);
    expect((await q(`drop trigger d_t on d`)).body.error.details.sqlstate).toBe('42704');
    await ok(`drop trigger if exists d_t on d; drop function if exists d_fn`);
    expect((await q(`create trigger x after insert on d for each row execute function nope()`)).body.error.details.sqlstate).toBe('42883');
  });

  it('follows its table: a renamed table keeps its trigger (DROP TRIGGER and OR REPLACE find it), a dropped table takes it along', async () => {
    await ok(`create table r1 (id serial primary key, v text);
      create function r_fn() returns trigger language plpgsql as $$ begin new.v := upper(new.v); return new; end $$;
      create trigger r_t before insert on r1 for each row execute function r_fn();
      alter table r1 rename to r2;
      insert into r2 (v) values ('a')`);
    await ok(`create or replace function r_fn() returns trigger language plpgsql as $$ begin new.v := new.v || '!'; return new; end $$; insert into r2 (v) values ('b')`);
    expect((await ok(`select v from r2 order by id`)).rows).toEqual([{ v: 'A' }, { v: 'b!' }]);
    expect((await q(`drop function r_fn`)).body.error.details.sqlstate).toBe('2BP01');
    await ok(`drop trigger r_t on r2; create trigger r_t before insert on r2 for each row execute function r_fn(); drop table r2; drop function r_fn`);
  });

  it('a NEW field the table does not have is Postgres\' 42703 when the trigger is made', async () => {
    await ok(`create table e (id serial primary key, v text);
      create function e_fn() returns trigger language plpgsql as $$ begin new.nope := 1; return new; end $$;`);
    const r = await q(`create trigger e_t before insert on e for each row execute function e_fn()`);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ message: 'record "new" has no field "nope"', details: { sqlstate: '42703' } });
  });
});

describe('a BEFORE trigger\'s assignments as each door shows them', () => {
  it('the rows API answers and announces the row as stored; SQL stores it, announces insert then update, and RETURNING shows the row as stored (as Postgres)', async () => {
    expect((await call('POST', '/db/tables', { name: 'pages', type: 'relational', columns: [{ name: 'title', type: 'text' }, { name: 'slug', type: 'text' }] })).status).toBe(201);
    await ok(`
      create function slugify() returns trigger language plpgsql as $$ begin new.slug := lower(replace(new.title, ' ', '-')); return new; end $$;
      create trigger pages_slug before insert or update on pages for each row execute function slugify();`);
    const es = openEventSource(`${s.url}/realtime/stream?table=pages&apikey=${s.keys.service}`);
    try {
      await es.next((m) => m.event === 'ready');
      const api = await call('POST', '/db/tables/pages/rows', { data: { title: 'By API' } });
      expect(api.body.data).toEqual({ title: 'By API', slug: 'by-api' });
      expect((await es.next((m) => m.event === 'change')).data).toMatchObject({ op: 'insert', data: { slug: 'by-api' } });
      const patched = await call('PATCH', `/db/tables/pages/rows/${api.body.id}`, { data: { title: 'New Title' } });
      expect(patched.body.data).toEqual({ title: 'New Title', slug: 'new-title' });
      expect((await es.next((m) => m.event === 'change')).data).toMatchObject({ op: 'update', data: { slug: 'new-title' } });
      const sql = await ok(`insert into pages (title) values ('By SQL') returning title, slug`);
      expect(sql.rows).toEqual([{ title: 'By SQL', slug: 'by-sql' }]);
      expect((await es.next((m) => m.event === 'change')).data).toMatchObject({ op: 'insert', data: { slug: null } });
      expect((await es.next((m) => m.event === 'change')).data).toMatchObject({ op: 'update', data: { slug: 'by-sql' } });
      expect(await es.quiet(300)).toEqual([]);
    } finally {
      es.close();
    }
    expect((await ok(`select slug from pages order by slug`)).rows).toEqual([{ slug: 'by-sql' }, { slug: 'new-title' }]);
  });
});
