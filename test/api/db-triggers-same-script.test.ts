import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventSource } from '../helpers/realtime.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Rows a trigger writes are change events when the trigger was created in the same script as the
// tables it names (docs/sql.md "Functions and triggers"): on the main thread's paths (the rows API)
// as when the tables and the trigger came in separate scripts.

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };
async function call(method: string, path: string, body?: unknown) {
  const res = await s.req(path, { method, key: s.keys.service, headers: body === undefined ? {} : JSON_H, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
const ok = async (sql: string) => {
  const r = await call('POST', '/db/query', { sql, params: [] });
  expect(r.status, `${sql}: ${r.text}`).toBe(200);
};

/** The change events of `table` the durable change log replays from the start (?since=0). */
async function replayed(table: string, n: number) {
  const es = openEventSource(`${s.url}/realtime/stream?table=${table}&since=0&apikey=${s.keys.service}`);
  try {
    const out = [];
    for (let i = 0; i < n; i++) out.push((await es.next((m) => m.event === 'change')).data);
    expect((await es.quiet(300)).filter((m) => m.event === 'change')).toEqual([]);
    return out;
  } finally {
    es.close();
  }
}

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

describe('a trigger made in the same script as its tables', () => {
  it('tables, function and trigger in one script: a rows-API insert logs the audit row (live and in the change log), and an update of a counter', async () => {
    await ok(`
      create table audit (id uuid primary key default gen_random_uuid(), item uuid, what text);
      create table tallies (id text primary key, n int not null default 0);
      insert into tallies (id) values ('items');
      create table items (id uuid primary key default gen_random_uuid(), title text);
      create function log_item() returns trigger language plpgsql as $$
      begin
        insert into audit (item, what) values (new.id, 'added ' || new.title);
        update tallies set n = n + 1 where id = 'items';
        return new;
      end $$;
      create trigger items_audit after insert on items for each row execute function log_item();`);
    const live = openEventSource(`${s.url}/realtime/stream?table=audit&apikey=${s.keys.service}`);
    const tallies = openEventSource(`${s.url}/realtime/stream?table=tallies&apikey=${s.keys.service}`);
    let id: string;
    try {
      await live.next((m) => m.event === 'ready');
      await tallies.next((m) => m.event === 'ready');
      const r = await call('POST', '/db/tables/items/rows', { data: { title: 'first' } });
      expect(r.status).toBe(201);
      id = r.body.id as string;
      expect((await live.next((m) => m.event === 'change')).data).toMatchObject({ op: 'insert', table: 'audit', data: { item: id, what: 'added first' } });
      expect((await tallies.next((m) => m.event === 'change')).data).toMatchObject({ op: 'update', table: 'tallies', id: 'items', data: { n: 1 }, old: { n: 0 } });
    } finally {
      live.close();
      tallies.close();
    }
    expect(await replayed('audit', 1)).toMatchObject([{ op: 'insert', data: { item: id, what: 'added first' } }]);
  });

  it('a rows-API table altered in the script that makes the trigger: the event carries the new column', async () => {
    expect((await call('POST', '/db/tables', { name: 'notes', type: 'relational', columns: [{ name: 'body', type: 'text' }] })).status).toBe(201);
    expect((await call('POST', '/db/tables', { name: 'posts', type: 'relational', columns: [{ name: 'title', type: 'text' }] })).status).toBe(201);
    await ok(`
      alter table notes add column tag text;
      create function note_post() returns trigger language plpgsql as $$
      begin
        insert into notes (body, tag) values ('post ' || new.title, 'auto');
        return new;
      end $$;
      create trigger posts_note after insert on posts for each row execute function note_post();`);
    expect((await call('POST', '/db/tables/posts/rows', { data: { title: 'hello' } })).status).toBe(201);
    expect(await replayed('notes', 1)).toMatchObject([{ op: 'insert', table: 'notes', data: { body: 'post hello', tag: 'auto' } }]);
    // a column added after the trigger compiled: CREATE OR REPLACE FUNCTION recompiles it (docs/sql.md)
    await ok(`alter table notes add column extra text default 'x'`);
    await ok(`
      create or replace function note_post() returns trigger language plpgsql as $$
      begin
        insert into notes (body, tag) values ('post ' || new.title, 'auto');
        return new;
      end $$;`);
    expect((await call('POST', '/db/tables/posts/rows', { data: { title: 'again' } })).status).toBe(201);
    expect((await replayed('notes', 2))[1]).toMatchObject({ op: 'insert', data: { body: 'post again', tag: 'auto', extra: 'x' } });
  });

  it('a table dropped and made again in the script: the trigger logs rows of the new one', async () => {
    expect((await call('POST', '/db/tables', { name: 'events', type: 'relational', columns: [{ name: 'old_col', type: 'text' }] })).status).toBe(201);
    await ok(`
      drop table events;
      create table events (id uuid primary key default gen_random_uuid(), kind text);
      create table orders (id uuid primary key default gen_random_uuid(), total int);
      create function order_event() returns trigger language plpgsql as $$
      begin
        insert into events (kind) values ('order ' || new.total);
        return new;
      end $$;
      create trigger orders_event after insert on orders for each row execute function order_event();
      insert into orders (total) values (5);`);
    expect((await call('POST', '/db/tables/orders/rows', { data: { total: 7 } })).status).toBe(201);
    // the script's own insert (SQL worker) is logged too
    expect(await replayed('events', 2)).toMatchObject([
      { op: 'insert', table: 'events', data: { kind: 'order 5' } },
      { op: 'insert', table: 'events', data: { kind: 'order 7' } },
    ]);
  });
});

describe('the Supabase starter in one script', () => {
  it('profiles adopted with new columns, handle_new_user on auth.users: a sign-up announces the profile with them', async () => {
    await ok(`
      create table public.profiles (id uuid not null references auth.users on delete cascade primary key, nickname text, website text);
      create function public.handle_new_user() returns trigger language plpgsql security definer set search_path = '' as $$
      begin
        insert into public.profiles (id, nickname, website) values (new.id, new.raw_user_meta_data->>'nickname', 'https://x.test');
        return new;
      end;
      $$;
      create trigger on_auth_user_created after insert on auth.users for each row execute procedure public.handle_new_user();`);
    const reg = await s.req('/auth/register', { method: 'POST', key: s.keys.publishable, headers: JSON_H, body: JSON.stringify({ email: 'ada@example.com', password: 'correct horse battery', user_metadata: { nickname: 'ada' } }) });
    expect(reg.status).toBe(200);
    const id = ((await reg.json()) as { user: { id: string } }).user.id;
    expect(await replayed('profiles', 1)).toMatchObject([{ op: 'insert', table: 'profiles', id, data: { nickname: 'ada', website: 'https://x.test' } }]);
  });
});
