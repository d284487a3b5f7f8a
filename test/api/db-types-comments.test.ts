import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Enum types, COMMENT ON and index methods through POST /db/query (docs/sql.md "Enum types",
// "Comments", "Index methods"): what a user sees and what the project keeps.

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };
async function call(method: string, path: string, body?: unknown, key: string = s.keys.service) {
  const res = await s.req(path, { method, key, headers: body === undefined ? {} : JSON_H, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
const sql = (q: string, params: unknown[] = []) => call('POST', '/db/query', { sql: q, params });
const ok = async (q: string, params: unknown[] = []) => {
  const r = await sql(q, params);
  expect(r.status, `${q}: ${r.text}`).toBe(200);
  return r.body;
};
const fails = async (q: string, status: number, sqlstate: string | null, message: RegExp) => {
  const r = await sql(q);
  expect(r.status, `${q}: ${r.text}`).toBe(status);
  expect(r.body.error.message).toMatch(message);
  if (sqlstate) expect(r.body.error.details?.sqlstate).toBe(sqlstate);
  return r.body.error;
};

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

describe('CREATE TYPE … AS ENUM', () => {
  it('makes a type whose columns take only its labels, through SQL, the rows API and GraphQL', async () => {
    await ok(`create type public.mood as enum ('sad', 'ok', 'happy');
      create table diary (id uuid primary key default gen_random_uuid(), day int not null, feeling mood not null default 'ok', created_at timestamptz not null default now(), updated_at timestamptz not null default now())`);
    await ok(`insert into diary (day, feeling) values (1, 'happy'), (2, 'sad'), (3, 'ok'), (4, default)`.replace(', (4, default)', ''));
    await ok(`insert into diary (day) values (4)`);
    const bad = await fails(`insert into diary (day, feeling) values (5, 'meh')`, 400, '22P02', /^invalid input value for enum mood: "meh"$/);
    expect(bad.code).toBe('invalid_request');
    await fails(`update diary set feeling = 'grumpy' where day = 1`, 400, '22P02', /invalid input value for enum mood: "grumpy"/);
    // the rows API is checked by the same triggers
    const list = await call('GET', '/db/tables/diary/rows?order=day.asc');
    expect(list.body.rows.map((r: { data: { feeling: string } }) => r.data.feeling)).toEqual(['happy', 'sad', 'ok', 'ok']);
    const id = list.body.rows[0].id as string;
    const patch = await call('PATCH', `/db/tables/diary/rows/${id}`, { data: { feeling: 'meh' } });
    expect(patch.status).toBe(400);
    expect(patch.body.error.message).toBe('invalid input value for enum mood: "meh"');
    expect((await call('PATCH', `/db/tables/diary/rows/${id}`, { data: { feeling: 'sad' } })).status).toBe(200);
    const gql = await call('POST', '/db/graphql', { query: `mutation { insert_diary(object: {day: 9, feeling: "nope"}) { id } }` });
    expect(gql.body.errors[0].message).toBe('invalid input value for enum mood: "nope"');
    // nothing of the refused writes was stored
    expect((await ok(`select count(*)::int as n from diary`)).rows).toEqual([{ n: 4 }]);
  });

  it('casts: a literal is checked when translated, a value when it runs', async () => {
    expect((await ok(`select 'ok'::mood as m, cast('sad' as public.mood) as n, null::mood as z`)).rows).toEqual([{ m: 'ok', n: 'sad', z: null }]);
    await fails(`select 'meh'::mood`, 400, '22P02', /^invalid input value for enum mood: "meh"$/);
    expect((await ok(`select $1::mood as m`, ['happy'])).rows).toEqual([{ m: 'happy' }]);
    await fails(`select feeling || 'x' from diary`.replace("feeling || 'x'", "(feeling || 'x')::mood"), 400, '22P02', /invalid input value for enum mood: "(happy|sad|ok)x"/);
    expect((await ok(`select count(*)::int as n from diary where feeling = 'ok'::mood`)).rows).toEqual([{ n: 2 }]);
  });

  it('ALTER TYPE … ADD VALUE widens every column of the type; existing rows stay', async () => {
    await ok(`alter type mood add value 'meh' before 'ok'`);
    await ok(`alter type mood add value if not exists 'ecstatic' after 'happy'`);
    const skipped = await ok(`alter type mood add value if not exists 'ok'`);
    expect(skipped.notices).toEqual(['enum label "ok" already exists, skipping']);
    await ok(`insert into diary (day, feeling) values (5, 'meh'), (6, 'ecstatic')`);
    expect((await ok(`select day, feeling from diary order by day`)).rows).toEqual([
      { day: 1, feeling: 'sad' },
      { day: 2, feeling: 'sad' },
      { day: 3, feeling: 'ok' },
      { day: 4, feeling: 'ok' },
      { day: 5, feeling: 'meh' },
      { day: 6, feeling: 'ecstatic' },
    ]);
    expect((await ok(`select 'meh'::mood as m`)).rows).toEqual([{ m: 'meh' }]);
    // ORDER BY an enum column follows the declaration order, as in Postgres
    expect((await ok(`select feeling from diary order by feeling, day`)).rows.map((r: { feeling: string }) => r.feeling)).toEqual(['sad', 'sad', 'meh', 'ok', 'ok', 'ecstatic']);
    expect((await ok(`select d.day from diary d order by d.feeling desc, d.day limit 2`)).rows).toEqual([{ day: 6 }, { day: 3 }]);
    // comparisons too: by declaration order, a literal read as the type
    expect((await ok(`select day from diary where feeling > 'meh' order by day`)).rows).toEqual([{ day: 3 }, { day: 4 }, { day: 6 }]);
    expect((await ok(`select 'ok'::mood < 'happy'::mood as a, 'sad'::mood >= 'meh'::mood as b`)).rows).toEqual([{ a: true, b: false }]);
    await fails(`select day from diary where feeling = 'nope'`, 400, '22P02', /^invalid input value for enum mood: "nope"$/);
    // stored: the labels in declaration order, the column TEXT (SQLite's declared type names the enum)
    const stored = await s.readBackup((db) => ({
      labels: (db.prepare(`select labels from "_svc_meta.enums" where name = 'mood'`).get() as { labels: string }).labels,
      types: db.prepare(`select name, type from pragma_table_info('diary') where name = 'feeling'`).all(),
    }));
    expect(JSON.parse(stored.labels)).toEqual(['sad', 'meh', 'ok', 'happy', 'ecstatic']);
    expect(stored.types).toEqual([{ name: 'feeling', type: 'TEXT_ENUM_6d6f6f64' }]);
  });

  it('in one script: create the type, a table using it, a row, and widen it', async () => {
    await ok(`create type status as enum ('draft', 'published');
      create table posts (id serial primary key, title text, status status not null default 'draft');
      insert into posts (title) values ('a');
      alter type status add value 'archived';
      insert into posts (title, status) values ('b', 'archived')`);
    expect((await ok(`select title, status from posts order by id`)).rows).toEqual([
      { title: 'a', status: 'draft' },
      { title: 'b', status: 'archived' },
    ]);
    // ALTER TABLE … ADD COLUMN of an enum type, then DROP COLUMN
    await ok(`alter table posts add column mood mood`);
    await fails(`update posts set mood = 'x'`, 400, '22P02', /invalid input value for enum mood: "x"/);
    await ok(`update posts set mood = 'happy' where id = 1`);
    await ok(`alter table posts drop column mood`);
    // renamed table and column keep their checks, and the column can still be dropped
    await ok(`alter table posts add column m2 mood; alter table posts rename to articles; alter table articles rename column m2 to feel`);
    await fails(`insert into articles (title, feel) values ('c', 'nah')`, 400, '22P02', /invalid input value for enum mood: "nah"/);
    await ok(`insert into articles (title, feel) values ('c', 'ok')`);
    await ok(`alter table articles drop column feel; alter table articles rename to posts`);
    const triggers = await s.readBackup((db) => db.prepare(`select name from sqlite_schema where type = 'trigger' and name like 'pe_enum_%' order by name`).all());
    expect(triggers).toEqual([
      { name: 'pe_enum_insert_diary_feeling' },
      { name: 'pe_enum_insert_posts_status' },
      { name: 'pe_enum_update_diary_feeling' },
      { name: 'pe_enum_update_posts_status' },
    ]);
    // a default must be a label
    await fails(`create table bad_default (id int primary key, m mood default 'nah')`, 400, '22P02', /invalid input value for enum mood: "nah"/);
  });

  it('GET /db/tables, /db/schema and GraphQL show the type', async () => {
    const tables = (await call('GET', '/db/tables')).body.tables as Array<{ name: string; columns: Array<{ name: string; type: string; enum?: string }> }>;
    const feeling = tables.find((t) => t.name === 'diary')!.columns.find((c) => c.name === 'feeling')!;
    expect(feeling).toMatchObject({ name: 'feeling', type: 'text', enum: 'mood' });
    const schema = (await call('GET', '/db/schema')).body.tables as Array<{ name: string; columns: Array<{ name: string; enum?: string }> }>;
    expect(schema.find((t) => t.name === 'posts')!.columns.find((c) => c.name === 'status')).toMatchObject({ type: 'text', enum: 'status' });
    const intro = await call('POST', '/db/graphql', { query: `{ __type(name: "diary") { fields { name description type { name ofType { name } } } } }` });
    // information_schema.columns as Postgres shows a column of a user-defined type
    const info = await ok(`select data_type, udt_name from information_schema.columns where table_name = 'diary' and column_name = 'feeling'`);
    expect(info.rows).toEqual([{ data_type: 'USER-DEFINED', udt_name: 'mood' }]);
    const f = intro.body.data.__type.fields.find((x: { name: string }) => x.name === 'feeling');
    expect(f).toEqual({ name: 'feeling', description: 'enum mood', type: { name: 'String', ofType: null } });
  });

  it('refuses what Postgres refuses, with its SQLSTATE, and changes nothing', async () => {
    await fails(`create type dup as enum ('a', 'b', 'a')`, 400, '42710', /^enum label "a" used more than once$/);
    await fails(`create type mood as enum ('x')`, 400, '42710', /^type "mood" already exists$/);
    const long = await fails(`create type big as enum ('${'x'.repeat(64)}')`, 400, '42602', /^invalid enum label "x{64}"$/);
    expect(long.details.detail).toBe('Labels must be 63 bytes or less.');
    // 63 bytes is the limit, counted in bytes (é is two)
    await ok(`create type fits as enum ('${'x'.repeat(63)}')`);
    await fails(`create type wide as enum ('${'é'.repeat(32)}')`, 400, '42602', /invalid enum label/);
    await fails(`alter type mood add value 'ok'`, 400, '42710', /^enum label "ok" already exists$/);
    await fails(`alter type mood add value 'x' before 'nope'`, 400, '22023', /^"nope" is not an existing enum label$/);
    await fails(`alter type nope add value 'x'`, 400, '42704', /^type "nope" does not exist$/);
    await fails(`create table t2 (id int primary key, m nope)`, 400, null, /column type nope/);
    await fails(`create type x.y as enum ('a')`, 400, null, /public schema/);
    await fails(`alter type mood rename value 'ok' to 'fine'`, 400, null, /RENAME VALUE/);
    // an empty label is a label, as in Postgres
    await ok(`create type blank as enum ('')`);
    expect((await ok(`select ''::blank as b`)).rows).toEqual([{ b: '' }]);
    const labels = await s.readBackup((db) => db.prepare(`select name from "_svc_meta.enums" order by name`).all());
    expect(labels).toEqual([{ name: 'blank' }, { name: 'fits' }, { name: 'mood' }, { name: 'status' }]);
  });

  it('DROP TYPE: 2BP01 while a column uses it, else gone', async () => {
    await fails(`drop type mood`, 400, '2BP01', /^cannot drop type mood because other objects depend on it/);
    await fails(`drop type nope`, 400, '42704', /^type "nope" does not exist$/);
    const r = await ok(`drop type if exists nope`);
    expect(r.notices).toEqual(['type "nope" does not exist, skipping']);
    await ok(`drop type fits, blank`);
    // a type whose name is a prefix of a used one's is not in use ("mo" vs "mood")
    await ok(`create type mo as enum ('x'); drop type mo`);
    await fails(`select ''::blank`, 400, null, /type blank/);
    await ok(`create type mood2 as enum ('a'); create table m2 (id int primary key, v mood2); drop table m2; drop type mood2`);
  });
});

describe('COMMENT ON', () => {
  it('keeps table and column comments, shown by /db/schema, /db/tables and GraphQL descriptions', async () => {
    await ok(`comment on table diary is 'How each day felt.'`);
    await ok(`comment on column public.diary.feeling is 'The day''s mood.'`);
    await ok(`comment on column diary.id is 'The entry.'`);
    const schema = (await call('GET', '/db/schema')).body.tables as Array<{ name: string; comment?: string; columns: Array<{ name: string; comment: string | null }> }>;
    const diary = schema.find((t) => t.name === 'diary')!;
    expect(diary.comment).toBe('How each day felt.');
    expect(diary.columns.find((c) => c.name === 'feeling')!.comment).toBe("The day's mood.");
    expect(diary.columns.find((c) => c.name === 'id')!.comment).toBe('The entry.');
    expect(diary.columns.find((c) => c.name === 'day')!.comment).toBeUndefined();
    expect(schema.find((t) => t.name === 'posts')!.comment).toBeUndefined();
    const tables = (await call('GET', '/db/tables')).body.tables as Array<{ name: string; comment?: string; columns: Array<{ name: string; comment: string | null }> }>;
    expect(tables.find((t) => t.name === 'diary')!.comment).toBe('How each day felt.');
    const intro = await call('POST', '/db/graphql', { query: `{ __type(name: "diary") { description fields { name description } } }` });
    const t = intro.body.data.__type;
    expect(t.description).toBe('How each day felt.');
    expect(t.fields.find((f: { name: string }) => f.name === 'feeling').description).toBe("The day's mood.\n\n(enum mood)");
    expect(t.fields.find((f: { name: string }) => f.name === 'id').description).toBe('The entry.');
  });

  it('IS NULL removes; a rename keeps, a drop forgets', async () => {
    await ok(`comment on table diary is null`);
    await ok(`comment on column diary.day is 'Day number'`);
    await ok(`alter table diary rename column day to day_no`);
    await ok(`alter table diary rename to journal`);
    const schema = (await call('GET', '/db/schema')).body.tables as Array<{ name: string; comment?: string; columns: Array<{ name: string; comment: string | null }> }>;
    const j = schema.find((t) => t.name === 'journal')!;
    expect(j.comment).toBeUndefined();
    expect(j.columns.find((c) => c.name === 'day_no')!.comment).toBe('Day number');
    await ok(`create table gone (id uuid primary key); comment on table gone is 'x'; drop table gone`);
    const kept = await s.readBackup((db) => db.prepare(`select tbl, col, comment from "_svc_meta.comments" order by tbl, col`).all());
    expect(kept).toEqual([
      { tbl: 'journal', col: 'day_no', comment: 'Day number' },
      { tbl: 'journal', col: 'feeling', comment: "The day's mood." },
      { tbl: 'journal', col: 'id', comment: 'The entry.' },
    ]);
  });

  it('refuses a missing table or column (42P01, 42703) and a comment over 16 KiB', async () => {
    await fails(`comment on table nope is 'x'`, 400, '42P01', /^relation "nope" does not exist$/);
    await fails(`comment on column journal.nope is 'x'`, 400, '42703', /^column "nope" of relation "journal" does not exist$/);
    const big = await sql(`comment on table journal is '${'x'.repeat(16 * 1024 + 1)}'`);
    expect(big.status).toBe(400);
    expect(big.body.error.message).toMatch(/at most 16384 characters/);
    // a 1 MB comment does not fit the SQL limit (256 KiB) at all
    const huge = await sql(`comment on table journal is '${'x'.repeat(1024 * 1024)}'`);
    expect(huge.status).toBe(413);
    await fails(`comment on function f() is 'x'`, 400, null, /COMMENT ON FUNCTION/);
    await fails(`comment on table _svc_auth.users is 'x'`, 400, null, /reserved|public schema/);
    expect((await call('GET', '/db/schema')).body.tables.find((t: { name: string }) => t.name === 'journal').comment).toBeUndefined();
  });
});

describe('CREATE INDEX … USING', () => {
  it('gin/gist on jsonb or arrays build nothing and say so; hash and brin build a B-tree; btree is unchanged', async () => {
    await ok(`create table docs (id uuid primary key, body jsonb, tags text[], n int)`);
    const gin = await ok(`create index docs_body_idx on docs using gin (body jsonb_path_ops)`);
    expect(gin.command).toBe('CREATE INDEX');
    expect(gin.notices).toEqual(['index method gin has no counterpart here: no index was built on docs(body); jsonb and array operators (@>, ?, &&) on it scan the table']);
    expect((await ok(`create index on docs using gin (tags)`)).notices).toHaveLength(1);
    expect((await ok(`create index on docs using gist (body)`)).notices).toHaveLength(1);
    expect((await ok(`create index docs_n_hash on docs using hash (n)`)).notices).toEqual([
      "index method hash is built as a B-tree index (SQLite's only kind), which serves the same equality scans",
    ]);
    expect((await ok(`create index docs_n_brin on docs using brin (n)`)).notices[0]).toMatch(/range scans/);
    // JSON-RPC's db.query carries them too
    const rpc = await call('POST', '/db/rpc', { jsonrpc: '2.0', id: 1, method: 'db.query', params: { sql: `create index if not exists docs_tags_gin on docs using gin (tags)` } });
    expect(rpc.body.result.notices).toEqual(['index method gin has no counterpart here: no index was built on docs(tags); jsonb and array operators (@>, ?, &&) on it scan the table']);
    const plain = await ok(`create index docs_n_idx on docs (n)`);
    expect(plain.notices).toBeUndefined();
    const idx = await s.readBackup((db) => db.prepare(`select name from sqlite_schema where type = 'index' and tbl_name = 'docs' and sql is not null order by name`).all());
    expect(idx).toEqual([{ name: 'docs_n_brin' }, { name: 'docs_n_hash' }, { name: 'docs_n_idx' }]);
    await fails(`create index on docs using gin (n)`, 400, null, /only jsonb or array columns/);
    await fails(`create index on docs using gin (body gin_trgm_ops)`, 400, null, /operator class gin_trgm_ops/);
    await fails(`create index on docs using spgist (n)`, 400, null, /index method spgist/);
  });
});
