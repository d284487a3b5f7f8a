import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Views (docs/sql.md "Views", docs/api.md "Views"): CREATE [OR REPLACE] VIEW / DROP VIEW through
// /db/query; a view always reads its tables with the caller's RLS (Postgres' security_invoker);
// listed in /db/schema and /db/tables, readable through the rows API's list and GraphQL.

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };

interface Caller {
  key?: string | null;
  token?: string;
}
async function call(method: string, path: string, body?: unknown, who: Caller = { key: null }) {
  const headers: Record<string, string> = body === undefined ? {} : { ...JSON_H };
  if (who.token) headers.authorization = `Bearer ${who.token}`;
  const res = await s.req(path, { method, key: who.key ?? s.keys.publishable, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
const svc = (): Caller => ({ key: s.keys.service });
const sql = (text: string, who: Caller = svc(), params?: unknown[]) => call('POST', '/db/query', params ? { sql: text, params } : { sql: text }, who);
async function ok(text: string, who: Caller = svc()) {
  const r = await sql(text, who);
  expect(r.status, `${text}: ${r.text}`).toBe(200);
  return r.body;
}
async function fails(text: string, status: number, sqlstate: string | null, message?: RegExp, who: Caller = svc()) {
  const r = await sql(text, who);
  expect(r.status, `${text}: ${r.text}`).toBe(status);
  if (sqlstate) expect(r.body.error.details?.sqlstate, r.text).toBe(sqlstate);
  if (message) expect(r.body.error.message).toMatch(message);
  return r.body;
}

interface User {
  id: string;
  token: string;
}
async function register(email: string): Promise<User> {
  const r = await call('POST', '/auth/register', { email, password: 'correct horse battery staple 1' });
  expect(r.status, r.text).toBe(200);
  return { id: r.body.user.id, token: r.body.access_token };
}

let alice: User;
let bob: User;

beforeAll(async () => {
  s = await startTestServer();
  alice = await register('alice@example.com');
  bob = await register('bob@example.com');
  await ok(`create table notes (
    id uuid primary key default gen_random_uuid(),
    owner uuid not null references auth.users on delete cascade,
    title text not null,
    stars int not null default 0,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  );
  alter table notes enable row level security;
  create policy "own notes" on notes for all to authenticated using (owner = auth.uid());`);
  await ok(`insert into notes (owner, title, stars) values ('${alice.id}', 'alice one', 3), ('${alice.id}', 'alice two', 5), ('${bob.id}', 'bob one', 1)`);
});
afterAll(() => s.close());

describe('CREATE VIEW and reading it through SQL', () => {
  it('a view reads like its SELECT, with column aliases and WITH (security_invoker)', async () => {
    const made = await ok(`create view starred (note_id, title, stars) with (security_invoker = true) as
      select id, title, stars from public.notes where stars >= 3`);
    expect(made.command).toBe('CREATE VIEW');
    const r = await ok(`select title, stars from starred order by stars desc`);
    expect(r.rows).toEqual([
      { title: 'alice two', stars: 5 },
      { title: 'alice one', stars: 3 },
    ]);
    // note: typed exactly as the same columns read from the table.
    expect(r.columns).toEqual((await ok(`select title, stars from notes limit 0`)).columns);
    const joined = await ok(`select s.title, n.owner = '${alice.id}' as mine from starred s join notes n on n.id = s.note_id order by 1`);
    expect(joined.rows).toEqual([
      { title: 'alice one', mine: true },
      { title: 'alice two', mine: true },
    ]);
  });

  it("a view always reads its tables with the caller's RLS (two users)", async () => {
    await ok(`create view note_stats as select owner, count(*) as n, sum(stars) as total from notes group by owner`);
    const asAlice = await ok(`select n, total from note_stats`, { token: alice.token });
    expect(asAlice.rows).toEqual([{ n: 2, total: 8 }]);
    const asBob = await ok(`select n, total from note_stats`, { token: bob.token });
    expect(asBob.rows).toEqual([{ n: 1, total: 1 }]);
    // note: anon has no policy on notes (TO authenticated): the view shows nothing of it.
    expect((await ok(`select * from note_stats`, { key: null })).rows).toEqual([]);
    expect((await ok(`select title from starred`, { token: bob.token })).rows).toEqual([]);
    const svcRows = await ok(`select count(*)::int as c from note_stats`);
    expect(svcRows.rows).toEqual([{ c: 2 }]);
  });

  it('views over views, in subqueries, CTEs and joins, keep RLS at every level', async () => {
    await ok(`create view top_starred as select title from starred where stars = (select max(stars) from starred)`);
    expect((await ok(`select * from top_starred`)).rows).toEqual([{ title: 'alice two' }]);
    expect((await ok(`with x as (select * from top_starred) select count(*) as c from x`, { token: bob.token })).rows).toEqual([{ c: 0 }]);
    expect((await ok(`select (select count(*) from top_starred) as c`, { token: alice.token })).rows).toEqual([{ c: 1 }]);
  });

  it('auth.uid() inside a view is the caller; a view keeps its columns when its table gains one', async () => {
    await ok(`create table pins (id bigserial primary key, label text)`);
    await ok(`insert into pins (label) values ('p')`);
    await ok(`create view pin_all as select * from pins`);
    await ok(`alter table pins add column extra int default 7`);
    expect((await ok(`select * from pin_all`)).rows).toEqual([{ id: 1, label: 'p' }]);
    await ok(`create view my_notes as select title, auth.uid() = owner as mine from notes where owner = auth.uid()`);
    expect((await ok(`select title, mine from my_notes order by title`, { token: alice.token })).rows).toEqual([
      { title: 'alice one', mine: true },
      { title: 'alice two', mine: true },
    ]);
    expect((await ok(`select title from my_notes`, { token: bob.token })).rows).toEqual([{ title: 'bob one' }]);
    expect((await ok(`select title from my_notes`)).rows).toEqual([]);
  });

  it('a view in a script with other statements, rolled back whole on failure', async () => {
    const r = await sql(`create view tmp_v as select title from notes; select * from tmp_v order by title; select * from missing_table`);
    expect(r.status, r.text).toBe(400);
    await fails(`select * from tmp_v`, 400, null, /tmp_v/);
    const both = await ok(`create view tmp_v as select title from notes where stars > 1; select count(*)::int as c from tmp_v; drop view tmp_v`);
    expect(both.results[1].rows).toEqual([{ c: 2 }]);
    await fails(`select * from tmp_v`, 400, null);
  });

  it('CREATE VIEW on a taken name is 42P07; OR REPLACE keeps the columns as Postgres does (42P16)', async () => {
    await fails(`create view starred as select 1 as x`, 400, '42P07', /relation "starred" already exists/);
    await fails(`create view notes as select 1 as x`, 400, '42P07', /relation "notes" already exists/);
    await fails(`create or replace view notes as select 1 as x`, 400, '42809', /"notes" is not a view/);
    await fails(`create or replace view starred as select id as note_id, title from notes`, 400, '42P16', /cannot drop columns from view/);
    await fails(`create or replace view starred as select id as note_id, title as name, stars from notes`, 400, '42P16', /cannot change name of view column "title" to "name"/);
    await fails(`create or replace view starred as select id as note_id, title, stars::text as stars from notes`, 400, '42P16', /cannot change data type of view column "stars"/);
    await ok(`create or replace view starred (note_id, title, stars) as select id, title, stars from notes where stars >= 1`);
    expect((await ok(`select count(*)::int as c from starred`)).rows).toEqual([{ c: 3 }]);
    await ok(`create or replace view starred (note_id, title, stars) as select id, title, stars, owner from notes where stars >= 3`);
    expect((await ok(`select note_id, title, stars, owner from starred order by stars`)).rows.map((x: { owner: string }) => x.owner)).toEqual([alice.id, alice.id]);
  });

  it('ALTER VIEW … SET (security_invoker = on) is accepted (every view is); other ALTER VIEW refused by name', async () => {
    expect((await ok(`alter view public.starred set (security_invoker = on)`)).command).toBe('ALTER VIEW');
    await ok(`alter view if exists nothing_here set (security_invoker)`);
    await fails(`alter view nothing_here set (security_invoker = true)`, 400, '42P01');
    await fails(`alter view notes set (security_invoker = true)`, 400, '42809');
    await fails(`alter view starred set (security_invoker = false)`, 400, null, /security_invoker/);
    await fails(`alter view starred owner to postgres`, 400, null, /ALTER VIEW … CHANGE OWNER/);
  });

  it('writes into a view are refused with Postgres words', async () => {
    await fails(`insert into starred (title) values ('x')`, 400, '55000', /cannot insert into view "starred"/);
    await fails(`update starred set title = 'x'`, 400, '55000', /cannot update view "starred"/);
    await fails(`delete from public.starred`, 400, '55000', /cannot delete from view "starred"/);
    await fails(`create index on starred (title)`, 400, '42809');
    await fails(`alter table starred add column z int`, 400, '42809');
    // nothing changed
    expect((await ok(`select count(*)::int as c from notes`)).rows).toEqual([{ c: 3 }]);
  });

  it('a view in UPDATE … FROM and INSERT … SELECT', async () => {
    await ok(`create table scores (id bigserial primary key, title text, stars int)`);
    await ok(`insert into scores (title, stars) select title, stars from starred`);
    await ok(`update scores set stars = s.stars * 10 from starred s where s.title = scores.title and s.stars = 5`);
    expect((await ok(`select title, stars from scores order by title`)).rows).toEqual([
      { title: 'alice one', stars: 3 },
      { title: 'alice two', stars: 50 },
    ]);
  });

  it('a publishable caller cannot create or drop views', async () => {
    const r = await sql(`create view mine as select * from notes`, { token: alice.token });
    expect(r.status).toBe(401);
    expect((await sql(`drop view top_starred`, { token: alice.token })).status).toBe(401);
  });
});

describe('DROP VIEW and dependencies', () => {
  it('DROP TABLE of a table a view reads needs CASCADE (2BP01), which drops the views too', async () => {
    await ok(`create table tags (id bigserial primary key, label text not null)`);
    await ok(`insert into tags (label) values ('a'), ('b')`);
    await ok(`create view tag_labels as select label from tags`);
    await ok(`create view tag_count as select count(*) as n from tag_labels`);
    const r = await fails(`drop table tags`, 400, '2BP01', /cannot drop table tags because other objects depend on it/);
    expect(r.error.details.detail).toMatch(/view tag_labels depends on table tags/);
    await fails(`drop view tag_labels`, 400, '2BP01', /cannot drop view tag_labels because other objects depend on it/);
    await fails(`alter table tags drop column label`, 400, '2BP01');
    expect((await ok(`select n from tag_count`)).rows).toEqual([{ n: 2 }]);
    await ok(`drop table tags cascade`);
    await fails(`select * from tag_count`, 400, null);
    await fails(`select * from tag_labels`, 400, null);
    // the names are free again
    await ok(`create table tag_count (id bigserial primary key)`);
    await ok(`drop table tag_count`);
  });

  it('DROP VIEW [IF EXISTS] a, b [CASCADE]; DROP VIEW of a table is 42809; of nothing 42P01', async () => {
    await ok(`create view v1 as select title from notes`);
    await ok(`create view v2 as select title from v1`);
    await ok(`create view v3 as select 1 as one`);
    await fails(`drop view notes`, 400, '42809', /"notes" is not a view/);
    await fails(`drop table v3`, 400, '42809', /"v3" is not a table/);
    await fails(`drop view nothing_here`, 400, '42P01', /view "nothing_here" does not exist/);
    await ok(`drop view if exists nothing_here, v3`);
    await fails(`select * from v3`, 400, null);
    await ok(`drop view v1, v2`);
    await ok(`create view v1 as select title from notes`);
    await ok(`create view v2 as select title from v1`);
    await ok(`drop view v1 cascade`);
    await fails(`select * from v2`, 400, null);
  });
});

describe('bad input', () => {
  it('a view over a missing table is 42P01, over a reserved table refused, with $n 42P02', async () => {
    await fails(`create view bad as select a from missing_table`, 400, '42P01', /relation "missing_table" does not exist/);
    await fails(`create view bad as select * from "_svc_auth.users"`, 400, null, /reserved/);
    await fails(`create view bad as select * from _svc_meta.tables`, 400, null, /reserved/);
    await fails(`create view _svc_x as select 1 as a`, 400, null, /reserved/);
    await fails(`create view bad as select title from notes where stars > $1`, 400, '42P02');
    await fails(`create view bad (a, b) as select 1 as x`, 400, '42601', /more column names than columns/);
    await fails(`create view bad as select 1 as a, 2 as a`, 400, '42701', /column "a" specified more than once/);
    await fails(`create view pg_bad as select 1 as a`, 400, null);
    await fails(`create view auth.bad as select 1 as a`, 400, null);
    await fails(`create temp view bad as select 1 as a`, 400, null, /temporary views/);
    await fails(`create view bad with (security_invoker = false) as select 1 as a`, 400, null, /security_invoker/);
    await fails(`create view bad as select 1 as a with check option`, 400, null, /CHECK OPTION/);
    await fails(`create materialized view bad as select 1 as a`, 400, null);
    await fails(`select * from bad`, 400, null);
  });

  it('a recursive chain of views is 42P17', async () => {
    await ok(`create view ra as select 1 as x`);
    await ok(`create view rb as select x from ra`);
    await fails(`create or replace view ra as select x from rb`, 400, '42P17', /infinite recursion/);
    expect((await ok(`select x from rb`)).rows).toEqual([{ x: 1 }]);
    await ok(`drop view ra cascade`);
  });

  it('WITH RECURSIVE inside a view (and CREATE RECURSIVE VIEW, which is that) works', async () => {
    await ok(`create recursive view countdown (n) as select 3 union all select n - 1 from countdown where n > 1`);
    expect((await ok(`select n from countdown order by n`)).rows).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    await ok(`drop view countdown`);
  });

  it('a 10,000-column select is refused clearly and changes nothing', async () => {
    const cols = Array.from({ length: 10_000 }, (_, i) => `${i} as c${i}`).join(', ');
    const r = await sql(`create view wide as select ${cols}`);
    expect(r.status, r.text.slice(0, 300)).toBe(400);
    expect(r.body.error.details.sqlstate).toBe('54011');
    const cols2 = Array.from({ length: 1700 }, (_, i) => `${i} as c${i}`).join(', ');
    const r2 = await sql(`create view wide as select ${cols2}`);
    expect(r2.status, r2.text.slice(0, 300)).toBe(400);
    expect(r2.body.error.details.sqlstate).toBe('54011');
    await fails(`select * from wide`, 400, null);
  });

  it('a view over auth.users is readable only by the service role', async () => {
    await ok(`create view user_emails as select id, email from auth.users`);
    const r = await ok(`select email from user_emails order by email`);
    expect(r.rows).toEqual([{ email: 'alice@example.com' }, { email: 'bob@example.com' }]);
    expect((await sql(`select * from user_emails`, { token: alice.token })).status).toBe(401);
    expect((await sql(`select * from user_emails`, { key: null })).status).toBe(401);
  });
});

describe('views through the rows API, /db/schema, /db/tables and GraphQL', () => {
  beforeAll(async () => {
    await ok(`create view note_cards as select id, title, stars, owner, stars >= 3 as good from notes`);
    await ok(`create view star_totals as select owner, sum(stars)::int as total from notes group by owner`);
  });

  it('GET /db/schema and GET /db/tables list views with type "view" and their columns', async () => {
    const schema = await call('GET', '/db/schema', undefined, svc());
    expect(schema.status).toBe(200);
    const v = schema.body.tables.find((t: { name: string }) => t.name === 'note_cards');
    expect(v).toMatchObject({ name: 'note_cards', schema: 'public', type: 'view', rls_enabled: false, reads: ['notes'] });
    expect(v.columns).toEqual([
      { name: 'id', type: 'uuid', nullable: true, primary_key: false },
      { name: 'title', type: 'text', nullable: true, primary_key: false },
      { name: 'stars', type: expect.any(String), nullable: true, primary_key: false },
      { name: 'owner', type: 'uuid', nullable: true, primary_key: false },
      { name: 'good', type: 'bool', nullable: true, primary_key: false },
    ]);
    const user = schema.body.tables.find((t: { name: string }) => t.name === 'user_emails');
    expect(user.reads).toEqual(['auth.users']);
    const tables = await call('GET', '/db/tables', undefined, svc());
    const listed = tables.body.tables.find((t: { name: string }) => t.name === 'star_totals');
    expect(listed).toMatchObject({ name: 'star_totals', type: 'view', indexes: [], rls_enabled: false, system: false });
    expect(listed.definition).toMatch(/^create view star_totals as select/);
    expect(typeof listed.created_at).toBe('string');
  });

  it('information_schema lists views as VIEW with their columns; pg_tables does not', async () => {
    const t = await ok(`select table_name, table_type, is_insertable_into from information_schema.tables where table_name in ('notes', 'note_cards') order by table_name`);
    expect(t.rows).toEqual([
      { table_name: 'note_cards', table_type: 'VIEW', is_insertable_into: 'NO' },
      { table_name: 'notes', table_type: 'BASE TABLE', is_insertable_into: 'YES' },
    ]);
    const c = await ok(`select column_name, data_type, is_updatable from information_schema.columns where table_name = 'note_cards' order by ordinal_position`);
    expect(c.rows.map((r: { column_name: string }) => r.column_name)).toEqual(['id', 'title', 'stars', 'owner', 'good']);
    expect(c.rows[4]).toEqual({ column_name: 'good', data_type: 'boolean', is_updatable: 'NO' });
    expect((await ok(`select tablename from pg_tables where tablename = 'note_cards'`)).rows).toEqual([]);
  });

  it('GET /db/tables/{view}/rows lists with filters, order, limit, select and count, under RLS', async () => {
    const all = await call('GET', '/db/tables/note_cards/rows?order=stars.desc', undefined, svc());
    expect(all.status, all.text).toBe(200);
    expect(all.body.rows.map((r: { data: { title: string } }) => r.data.title)).toEqual(['alice two', 'alice one', 'bob one']);
    expect(all.body.rows[0]).toEqual({ id: expect.any(String), data: { title: 'alice two', stars: 5, owner: alice.id, good: true } });
    const f = await call('GET', '/db/tables/note_cards/rows?filter=stars.gte.3&filter=title.like.alice*&order=title&select=title&count=exact&limit=1', undefined, svc());
    expect(f.status, f.text).toBe(200);
    expect(f.body).toEqual({ rows: [{ id: expect.any(String), data: { title: 'alice one' } }], limit: 1, offset: 0, next_offset: 1, total: 2 });
    const good = await call('GET', '/db/tables/note_cards/rows?filter=good.is.true&or=(title.eq.bob%20one,stars.eq.5)', undefined, svc());
    expect(good.body.rows.map((r: { data: { title: string } }) => r.data.title)).toEqual(['alice two']);
    // RLS: each user sees the view over their own notes; anon nothing.
    const asBob = await call('GET', '/db/tables/note_cards/rows', undefined, { token: bob.token });
    expect(asBob.body.rows.map((r: { data: { title: string } }) => r.data.title)).toEqual(['bob one']);
    const totals = await call('GET', '/db/tables/star_totals/rows', undefined, { token: alice.token });
    expect(totals.body.rows).toEqual([{ data: { owner: alice.id, total: 8 } }]);
    expect((await call('GET', '/db/tables/star_totals/rows')).body.rows).toEqual([]);
    // by id: only a view with an id column, and only a row the caller sees
    const id = all.body.rows[2].id as string;
    const one = await call('GET', `/db/tables/note_cards/rows/${id}`, undefined, svc());
    expect(one.status, one.text).toBe(200);
    expect(one.body.data.title).toBe('bob one');
    expect((await call('GET', `/db/tables/note_cards/rows/${id}`, undefined, { token: alice.token })).status).toBe(404);
    expect((await call('GET', `/db/tables/star_totals/rows/${id}`, undefined, svc())).status).toBe(400);
    // bad list input
    expect((await call('GET', '/db/tables/note_cards/rows?filter=nope.eq.1', undefined, svc())).status).toBe(400);
    expect((await call('GET', '/db/tables/note_cards/rows?filter=stars.gt.abc', undefined, svc())).status).toBe(400);
    // a view over auth.users: service role only
    expect((await call('GET', '/db/tables/user_emails/rows', undefined, svc())).body.rows).toHaveLength(2);
    expect((await call('GET', '/db/tables/user_emails/rows', undefined, { token: alice.token })).status).toBe(401);
  });

  it('JSON-RPC db.list and db.get read a view as the caller', async () => {
    const rpc = async (method: string, params: unknown, who: Caller) => (await call('POST', '/db/rpc', { jsonrpc: '2.0', id: 1, method, params }, who)).body;
    const list = await rpc('db.list', { table: 'note_cards', filter: 'stars.gt.1', order: 'stars.asc' }, { token: alice.token });
    expect(list.result.rows.map((r: { data: { title: string } }) => r.data.title)).toEqual(['alice one', 'alice two']);
    const one = await rpc('db.get', { table: 'note_cards', id: list.result.rows[0].id }, { token: alice.token });
    expect(one.result.data.title).toBe('alice one');
    expect((await rpc('db.list', { table: 'note_cards' }, { token: bob.token })).result.rows).toHaveLength(1);
  });

  it('writes through the rows API on a view are 405 with the error envelope; nothing changes', async () => {
    const ins = await call('POST', '/db/tables/note_cards/rows', { data: { title: 'x' } }, svc());
    expect(ins.status).toBe(405);
    expect(ins.body.error.code).toBe('method_not_allowed');
    expect(ins.body.error.message).toMatch(/"note_cards" is a view/);
    const list = await call('GET', '/db/tables/note_cards/rows', undefined, svc());
    const id = list.body.rows[0].id as string;
    expect((await call('PATCH', `/db/tables/note_cards/rows/${id}`, { data: { title: 'y' } }, svc())).status).toBe(405);
    expect((await call('DELETE', `/db/tables/note_cards/rows/${id}`, undefined, svc())).status).toBe(405);
    expect((await call('DELETE', '/db/tables/note_cards', undefined, svc())).status).toBe(405);
    expect((await call('PUT', '/db/tables/note_cards/rls', { enabled: true }, svc())).status).toBe(405);
    // the rows API cannot take a view's name for a table, nor drop a table a view reads
    expect((await call('POST', '/db/tables', { name: 'note_cards' }, svc())).status).toBe(409);
    expect((await call('DELETE', '/db/tables/notes', undefined, svc())).status).toBe(409);
    expect((await ok(`select count(*)::int as c from notes`)).rows).toEqual([{ c: 3 }]);
  });

  it('GraphQL: query fields per view (list and by id), no mutations, RLS of the caller', async () => {
    const gql = (query: string, who: Caller) => call('POST', '/db/graphql', { query }, who);
    const r = await gql(`{ note_cards(where: {stars: {gte: 3}}, order: "stars.desc") { id title stars good } star_totals { owner total } }`, { token: alice.token });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.note_cards.map((x: { title: string; good: boolean }) => [x.title, x.good])).toEqual([
      ['alice two', true],
      ['alice one', true],
    ]);
    expect(r.body.data.star_totals).toEqual([{ owner: alice.id, total: 8 }]);
    const asBob = await gql(`{ note_cards { title } }`, { token: bob.token });
    expect(asBob.body.data.note_cards).toEqual([{ title: 'bob one' }]);
    const id = r.body.data.note_cards[0].id as string;
    expect((await gql(`{ note_cards_by_id(id: "${id}") { title } }`, svc())).body.data).toEqual({ note_cards_by_id: { title: 'alice two' } });
    expect((await gql(`{ note_cards_by_id(id: "${id}") { title } }`, { token: bob.token })).body.data).toEqual({ note_cards_by_id: null });
    const m = await gql(`mutation { insert_note_cards(data: {title: "x"}) { id } }`, svc());
    expect(m.status).toBe(400);
    const star = await gql(`{ star_totals_by_id(id: "x") { total } }`, svc());
    expect(star.status).toBe(400);
  });
});
