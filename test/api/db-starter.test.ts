import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Supabase's user-management starter (its profiles table, RLS and policies; not its storage part
// nor the handle_new_user trigger) through POST /db/query, then used by users through the rows
// API, GraphQL and SQL (docs/sql.md "The profiles table").

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };
interface Caller {
  key?: string | null;
  token?: string;
}
async function call(method: string, path: string, body?: unknown, who: Caller = {}) {
  const headers: Record<string, string> = body === undefined ? {} : { ...JSON_H };
  if (who.token) headers.authorization = `Bearer ${who.token}`;
  const res = await s.req(path, { method, key: who.key, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
const svc = (): Caller => ({ key: s.keys.service });
const sql = (q: string, params: unknown[] = [], who: Caller = svc()) => call('POST', '/db/query', { sql: q, params }, who);

interface User {
  id: string;
  token: string;
}
async function register(email: string): Promise<User> {
  const r = await call('POST', '/auth/register', { email, password: 'correct horse battery staple 1' });
  expect(r.status, r.text).toBe(200);
  return { id: r.body.user.id, token: r.body.access_token };
}

// As https://supabase.com/docs/guides/getting-started/tutorials/with-react (user management starter) writes it.
const STARTER = `-- Create a table for public profiles
create table profiles (
  id uuid references auth.users on delete cascade not null primary key,
  updated_at timestamp with time zone,
  username text unique,
  full_name text,
  avatar_url text,
  website text,

  constraint username_length check (char_length(username) >= 3)
);
-- Set up Row Level Security (RLS)
-- See https://supabase.com/docs/guides/database/postgres/row-level-security for more details.
alter table profiles
  enable row level security;

create policy "Public profiles are viewable by everyone." on profiles
  for select using (true);

create policy "Users can insert their own profile." on profiles
  for insert with check ((select auth.uid()) = id);

create policy "Users can update own profile." on profiles
  for update using ((select auth.uid()) = id);
`;

let ada: User;
let alan: User;

beforeAll(async () => {
  s = await startTestServer();
  // a user from before the migration keeps their profile row
  ada = await register('ada@example.com');
});
afterAll(() => s.close());

describe('the user-management starter', () => {
  it('runs unchanged: profiles is adopted, its columns become user fields, RLS and the policies apply', async () => {
    const r = await sql(STARTER);
    expect(r.status, r.text).toBe(200);
    const results = r.body.results as Array<{ command: string; notices?: string[] }>;
    expect(results.map((x) => x.command)).toEqual(['CREATE TABLE', 'ALTER TABLE', 'CREATE POLICY', 'CREATE POLICY', 'CREATE POLICY']);
    expect(results[0]!.notices).toEqual(['profiles exists (one row per user): adopted, with username (text), full_name (text), avatar_url (text), website (text) as user fields']);
    // stored: the user fields, the columns with the unique index and the named check
    const fields = await call('GET', '/auth/user-fields', undefined, svc());
    expect(fields.body.fields).toEqual(
      ['username', 'full_name', 'avatar_url', 'website'].map((name) => ({ name, type: 'text', required: false, in_signup: false })),
    );
    const stored = await s.readBackup((db) => ({
      sql: (db.prepare(`select sql from sqlite_schema where name = 'profiles'`).get() as { sql: string }).sql,
      index: db.prepare(`select name from sqlite_schema where type = 'index' and name = 'profiles_username_key'`).all(),
    }));
    expect(stored.sql).toContain('CONSTRAINT "username_length" CHECK');
    expect(stored.index).toEqual([{ name: 'profiles_username_key' }]);
    const rls = await call('GET', '/db/tables/profiles/rls', undefined, svc());
    expect(rls.body).toMatchObject({ table: 'profiles', enabled: true, policies: { select: 'true', insert: '(select auth.uid()) = id', update: '(select auth.uid()) = id' } });
    const table = (await call('GET', '/db/tables', undefined, svc())).body.tables.find((t: { name: string }) => t.name === 'profiles');
    expect(table.columns.map((c: { name: string; type: string }) => `${c.name}:${c.type}`)).toEqual(
      expect.arrayContaining(['id:uuid', 'username:text', 'full_name:text', 'avatar_url:text', 'website:text']),
    );
  });

  it('a user signs up and reads and updates their profile through the rows API', async () => {
    alan = await register('alan@example.com');
    const own = await call('GET', `/db/tables/profiles/rows/${alan.id}`, undefined, { token: alan.token });
    expect(own.status, own.text).toBe(200);
    expect(own.body.data).toMatchObject({ username: null, full_name: null, website: null });
    const upd = await call('PATCH', `/db/tables/profiles/rows/${alan.id}`, { data: { username: 'alan_t', full_name: 'Alan Turing' } }, { token: alan.token });
    expect(upd.status, upd.text).toBe(200);
    expect(upd.body.data).toMatchObject({ username: 'alan_t', full_name: 'Alan Turing' });
    // public profiles are viewable by everyone, also without a user
    const anon = await call('GET', `/db/tables/profiles/rows?filter=username.eq.alan_t`);
    expect(anon.body.rows.map((x: { id: string }) => x.id)).toEqual([alan.id]);
    // but only your own is yours to update
    const other = await call('PATCH', `/db/tables/profiles/rows/${alan.id}`, { data: { website: 'https://evil.example' } }, { token: ada.token });
    expect(other.status).toBe(403);
    // the check and the unique key hold, with Postgres' names
    const short = await call('PATCH', `/db/tables/profiles/rows/${ada.id}`, { data: { username: 'ad' } }, { token: ada.token });
    expect(short.status).toBe(400);
    expect(short.body.error.details).toMatchObject({ sqlstate: '23514', constraint: 'username_length' });
    const taken = await call('PATCH', `/db/tables/profiles/rows/${ada.id}`, { data: { username: 'alan_t' } }, { token: ada.token });
    expect(taken.status).toBe(409);
    expect(taken.body.error.message).toBe('duplicate key value violates unique constraint "profiles_username_key"');
    // PATCH /auth/me writes the same fields
    const me = await call('PATCH', '/auth/me', { website: 'https://ada.example' }, { token: ada.token });
    expect(me.status, me.text).toBe(200);
  });

  it('through GraphQL and SQL', async () => {
    const gq = await call('POST', '/db/graphql', { query: `mutation($id: ID!) { update_profiles(id: $id, set: {avatar_url: "a.png"}) { id username avatar_url } }`, variables: { id: alan.id } }, { token: alan.token });
    expect(gq.body, gq.text).toEqual({ data: { update_profiles: { id: alan.id, username: 'alan_t', avatar_url: 'a.png' } } });
    const list = await call('POST', '/db/graphql', { query: `{ profiles(order: "username.asc") { id username website } }` }, { token: ada.token });
    expect(list.body.data.profiles).toEqual(
      expect.arrayContaining([
        { id: alan.id, username: 'alan_t', website: null },
        { id: ada.id, username: null, website: 'https://ada.example' },
      ]),
    );
    const mine = await sql(`select username, full_name, avatar_url from profiles where id = (select auth.uid())`, [], { token: alan.token });
    expect(mine.body.rows).toEqual([{ username: 'alan_t', full_name: 'Alan Turing', avatar_url: 'a.png' }]);
    const upd = await sql(`update profiles set website = $1, updated_at = now() where id = $2 returning username, website`, ['https://turing.example', alan.id]);
    expect(upd.body.rows).toEqual([{ username: 'alan_t', website: 'https://turing.example' }]);
    const bad = await sql(`update profiles set username = 'x' where id = $1`, [alan.id]);
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toBe('new row for relation "profiles" violates check constraint "username_length"');
    // deleting the user deletes the profile, as on delete cascade says
    expect((await call('DELETE', `/auth/users/${alan.id}`, undefined, svc())).status).toBe(204);
    expect((await sql(`select count(*)::int as n from profiles where id = $1`, [alan.id])).body.rows).toEqual([{ n: 0 }]);
  });

  it('running it again keeps what is there: every column is already a field', async () => {
    const again = await sql(STARTER.split('-- Set up')[0]!);
    expect(again.status, again.text).toBe(200);
    expect(again.body.notices[0]).toBe('profiles exists (one row per user): adopted, every column was already there');
  });
});

describe('the adopted fields are user fields', () => {
  it('PUT /auth/user-fields can remove them, with their unique index', async () => {
    const fields = (await call('GET', '/auth/user-fields', undefined, svc())).body.fields as Array<{ name: string }>;
    const keep = fields.filter((f) => f.name !== 'username' && f.name !== 'bio' && f.name !== 'age');
    const put = await call('PUT', '/auth/user-fields', { fields: keep }, svc());
    expect(put.status, put.text).toBe(200);
    const idx = await s.readBackup((db) => db.prepare(`select name from sqlite_schema where type = 'index' and tbl_name = 'profiles' and sql is not null`).all());
    expect(idx).toEqual([]);
    expect((await sql(`select username from profiles`)).status).toBe(400);
    // and the starter adopts it again
    const again = await sql(STARTER.split('-- Set up')[0]!);
    expect(again.status, again.text).toBe(200);
    expect(again.body.notices[0]).toBe('profiles exists (one row per user): adopted, with username (text) as user fields');
  });
});

describe('what adoption refuses', () => {
  it('a column whose type clashes with a field is a 400 naming it, and nothing changes', async () => {
    const r = await sql(`create table profiles (id uuid primary key references auth.users, username int, nickname text)`);
    expect(r.status).toBe(400);
    expect(r.body.error.message).toBe('column "username" of profiles: it exists as text, this statement declares int4');
    expect(r.body.error.details).toEqual({ sqlstate: '42804', table: 'profiles', column: 'username' });
    const t2 = await sql(`create table profiles (id uuid primary key references auth.users, created_at int)`);
    expect(t2.status).toBe(400);
    expect(t2.body.error.details.column).toBe('created_at');
    const jsonb = await sql(`create table profiles (id uuid primary key references auth.users, prefs jsonb)`);
    expect(jsonb.status).toBe(400);
    expect(jsonb.body.error.message).toMatch(/"prefs".*no user-field counterpart/);
    const reserved = await sql(`create table profiles (id uuid primary key references auth.users, email text)`);
    expect(reserved.status).toBe(400);
    const fields = await call('GET', '/auth/user-fields', undefined, svc());
    expect(fields.body.fields.map((f: { name: string }) => f.name)).toEqual(['full_name', 'avatar_url', 'website', 'username']);
  });

  it('a profiles table that is not keyed to auth.users is the table that already exists (42P07)', async () => {
    for (const q of [`create table profiles (id uuid primary key, bio text)`, `create table profiles (id text primary key references auth.users, bio text)`, `create table public.profiles (id uuid references auth.users, bio text)`]) {
      const r = await sql(q);
      expect(r.status, q).toBe(400);
      expect(r.body.error.message, q).toBe('relation "profiles" already exists');
      expect(r.body.error.details, q).toEqual({ sqlstate: '42P07' });
    }
    const skip = await sql(`create table if not exists profiles (id uuid primary key, bio text)`);
    expect(skip.body.notices).toEqual(['relation "profiles" already exists, skipping']);
  });

  it('says what the user-field model does not keep', async () => {
    const r = await sql(`create table profiles (id uuid not null references auth.users (id) on delete cascade, bio text not null default 'hi', age int check (age > 0), constraint pk primary key (id), constraint two check (bio <> website))`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.notices).toEqual([
      'profiles exists (one row per user): adopted, with bio (text), age (int8) as user fields',
      'column "bio": NOT NULL is not kept (user fields are nullable: every user has a profiles row before any value)',
      'column "bio": its DEFAULT is not kept (user fields have none)',
      'CHECK two is not kept: it does not name exactly one new column',
    ]);
    const neg = await sql(`update profiles set age = -1`);
    expect(neg.status).toBe(400);
    expect(neg.body.error.details.sqlstate).toBe('23514');
  });
});
