import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventSource } from '../helpers/realtime.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// BEFORE triggers that assign NEW fields, as Postgres shows them (docs/sql.md "Functions and
// triggers"): RETURNING sees the assigned values. Expected values are PGlite's for the same SQL.

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };
async function q(sql: string, params: unknown[] = []) {
  const res = await s.req('/db/query', { method: 'POST', key: s.keys.service, headers: JSON_H, body: JSON.stringify({ sql, params }) });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as Record<string, unknown>, text };
}
const ok = async (sql: string, params: unknown[] = []) => {
  const r = await q(sql, params);
  expect(r.status, `${sql}: ${r.text}`).toBe(200);
  return r.body as { rows: Record<string, unknown>[]; row_count: number };
};

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

describe('RETURNING after a BEFORE trigger assigns NEW fields', () => {
  beforeAll(async () => {
    await ok(`
      create table posts (id serial primary key, title text, slug text, n int default 0, stamp text);
      create unique index posts_title on posts (title);
      create function slugify() returns trigger language plpgsql as $$ begin new.slug := lower(new.title); new.stamp := 'T'; return new; end $$;
      create trigger posts_slug before insert or update on posts for each row execute function slugify();`);
  });

  it('insert … returning * shows the assigned values, row by row in order', async () => {
    const r = await ok(`insert into posts (title) values ('Hello'), ('World'), ('Abc') returning *`);
    expect(r.rows).toEqual([
      { id: 1, title: 'Hello', slug: 'hello', n: 0, stamp: 'T' },
      { id: 2, title: 'World', slug: 'world', n: 0, stamp: 'T' },
      { id: 3, title: 'Abc', slug: 'abc', n: 0, stamp: 'T' },
    ]);
    expect(r.row_count).toBe(3);
  });

  it('RETURNING expressions and parameters are evaluated on the final row', async () => {
    const r = await ok(`insert into posts (title, slug) values ($1, 'x') returning id, slug || $2 as s, upper(slug)`, ['Ab', '!']);
    expect(r.rows).toEqual([{ id: 4, s: 'ab!', upper: 'AB' }]);
  });

  it('update … returning and insert … on conflict do update … returning', async () => {
    expect((await ok(`update posts set title = 'Zed' || id where id <= 2 returning id, slug`)).rows).toEqual([
      { id: 1, slug: 'zed1' },
      { id: 2, slug: 'zed2' },
    ]);
    const r = await ok(`insert into posts (title) values ('Abc') on conflict (title) do update set title = 'ABC2' returning id, title, slug`);
    expect(r.rows).toEqual([{ id: 3, title: 'ABC2', slug: 'abc2' }]);
    expect((await ok(`select id, slug from posts order by id`)).rows).toEqual([
      { id: 1, slug: 'zed1' },
      { id: 2, slug: 'zed2' },
      { id: 3, slug: 'abc2' },
      { id: 4, slug: 'ab' },
    ]);
  });

  it('a row the trigger skips (RETURN NULL) is not returned; other tables are unchanged', async () => {
    await ok(`
      create table skips (id serial primary key, v text, w text);
      create function skip_x() returns trigger language plpgsql as $$ begin if new.v = 'x' then return null; end if; new.w := upper(new.v); return new; end $$;
      create trigger skips_x before insert on skips for each row execute function skip_x();
      create table plain (id serial primary key, v text);`);
    const r = await ok(`insert into skips (v) values ('a'), ('x'), ('b') returning v, w`);
    expect(r.rows).toEqual([
      { v: 'a', w: 'A' },
      { v: 'b', w: 'B' },
    ]);
    expect(r.row_count).toBe(2);
    expect((await ok(`insert into plain (v) values ('p') returning *`)).rows).toEqual([{ id: 1, v: 'p' }]);
  });
});

describe('a NOT NULL column that a BEFORE trigger fills', () => {
  const notNull = (column: string, table: string) => ({ status: 400, sqlstate: '23502', message: `null value in column "${column}" of relation "${table}" violates not-null constraint` });
  const failure = async (sql: string) => {
    const r = await q(sql);
    const e = r.body.error as { message: string; details?: { sqlstate?: string } };
    return { status: r.status, sqlstate: e?.details?.sqlstate, message: e?.message };
  };

  it('an insert that leaves it to the trigger succeeds; one the trigger leaves NULL is 23502 and writes nothing', async () => {
    await ok(`
      create table fills (id serial primary key, a text, b text not null, c int not null default 0);
      create index fills_b on fills (b);
      insert into fills (a, b) values ('kept', 'x'), ('gone', 'x');
      delete from fills where a = 'gone';
      create function fill_b() returns trigger language plpgsql as $$ begin if new.a = 'fill' then new.b := 'filled:' || new.a; end if; return new; end $$;
      create trigger fills_b before insert on fills for each row execute function fill_b();`);
    expect((await ok(`insert into fills (a) values ('fill') returning *`)).rows).toEqual([{ id: 3, a: 'fill', b: 'filled:fill', c: 0 }]);
    expect(await failure(`insert into fills (a) values ('no')`)).toEqual(notNull('b', 'fills'));
    // note: answered as SQLite's own NOT NULL is (c below): invalid_field, naming the table and column.
    expect((await q(`insert into fills (a) values ('no')`)).body.error).toMatchObject({ code: 'invalid_field', details: { sqlstate: '23502', table: 'fills', column: 'b', field: 'b' } });
    expect((await q(`insert into fills (a, b, c) values ('fill', 'z', null)`)).body.error).toMatchObject({ code: 'invalid_field', details: { sqlstate: '23502', table: 'fills', column: 'c' } });
    expect(await failure(`insert into fills (a, b) values ('fill', 'y'), ('no', null)`)).toEqual(notNull('b', 'fills'));
    expect(await failure(`update fills set b = null where id = 1`)).toEqual(notNull('b', 'fills'));
    expect(await failure(`insert into fills (a, b, c) values ('fill', 'z', null)`)).toEqual(notNull('c', 'fills'));
    expect((await ok(`select id, a, b from fills order by id`)).rows).toEqual([
      { id: 1, a: 'kept', b: 'x' },
      { id: 3, a: 'fill', b: 'filled:fill' },
    ]);
    // note: the serial went on where it was (3, not 2) and the index is still there.
    expect((await ok(`select hasindexes from pg_catalog.pg_tables where tablename = 'fills'`)).rows).toEqual([{ hasindexes: true }]);
  });

  it('the catalog still says NOT NULL (information_schema, /db/schema), and after DROP TRIGGER the column is still enforced', async () => {
    const cols = await ok(`select column_name, is_nullable from information_schema.columns where table_name = 'fills' order by ordinal_position`);
    expect(cols.rows).toEqual([
      { column_name: 'id', is_nullable: 'NO' },
      { column_name: 'a', is_nullable: 'YES' },
      { column_name: 'b', is_nullable: 'NO' },
      { column_name: 'c', is_nullable: 'NO' },
    ]);
    const schema = await s.req('/db/schema', { key: s.keys.service });
    const body = (await schema.json()) as { tables: Array<{ name: string; columns: Array<{ name: string; nullable: boolean }> }> };
    const b = body.tables.find((t) => t.name === 'fills')?.columns.find((c) => c.name === 'b');
    expect(b?.nullable).toBe(false);
    await ok(`drop trigger fills_b on fills; drop function fill_b;`);
    expect(await failure(`insert into fills (a) values ('fill')`)).toEqual(notNull('b', 'fills'));
    expect((await ok(`insert into fills (a, b) values ('fill', 'v') returning b`)).rows).toEqual([{ b: 'v' }]);
    await ok(`drop index fills_b; alter table fills drop column b`);
    expect((await ok(`insert into fills (a) values ('after') returning a`)).rows).toEqual([{ a: 'after' }]);
  });

  it('made in one script with the table (the usual migration), also on update, through the rows API too', async () => {
    await ok(`
      create table articles (id uuid primary key default gen_random_uuid(), title text not null, slug text not null, updated_at timestamptz not null);
      create function articles_fill() returns trigger language plpgsql as $$ begin new.slug := lower(new.title); new.updated_at := now(); return new; end $$;
      create trigger articles_fill before insert or update on articles for each row execute function articles_fill();
      insert into articles (title) values ('First');`);
    expect((await ok(`select title, slug from articles`)).rows).toEqual([{ title: 'First', slug: 'first' }]);
    expect((await ok(`update articles set slug = null, updated_at = null returning title, slug, updated_at is not null as stamped`)).rows).toEqual([{ title: 'First', slug: 'first', stamped: true }]);
    expect(await failure(`insert into articles (slug) values ('x')`)).toEqual(notNull('title', 'articles'));
    const res = await s.req('/db/tables/articles/rows', { method: 'POST', key: s.keys.service, headers: JSON_H, body: JSON.stringify({ data: { title: 'By API' } }) });
    const text = await res.text();
    expect(res.status, text).toBe(201);
    expect((JSON.parse(text) as { data: Record<string, unknown> }).data).toMatchObject({ title: 'By API', slug: 'by api' });
  });

  it('on a table other tables reference (ON DELETE CASCADE, with rows): their rows and the foreign keys are kept', async () => {
    await ok(`
      create table authors (id serial primary key, name text not null, handle text not null);
      create table books (id serial primary key, author_id int references authors (id) on delete cascade, title text);
      insert into authors (name, handle) values ('Ann', 'ann');
      insert into books (author_id, title) values (1, 'One'), (1, 'Two');`);
    await ok(`
      create function author_handle() returns trigger language plpgsql as $$ begin new.handle := lower(new.name); return new; end $$;
      create trigger authors_handle before insert on authors for each row execute function author_handle();`);
    expect((await ok(`insert into authors (name) values ('Bob') returning id, handle`)).rows).toEqual([{ id: 2, handle: 'bob' }]);
    expect((await ok(`select author_id, title from books order by id`)).rows).toEqual([
      { author_id: 1, title: 'One' },
      { author_id: 1, title: 'Two' },
    ]);
    await ok(`delete from authors where id = 1`);
    expect((await ok(`select count(*)::int as n from books`)).rows).toEqual([{ n: 0 }]);
    expect((await q(`insert into books (author_id, title) values (42, 'x')`)).body.error).toMatchObject({ details: { sqlstate: '23503' } });
  });

  it('on a table made through the rows API (STRICT, change events): both doors leave it to the trigger', async () => {
    const post = (path: string, body: unknown) => s.req(path, { method: 'POST', key: s.keys.service, headers: JSON_H, body: JSON.stringify(body) });
    expect((await post('/db/tables', { name: 'cards', type: 'relational', columns: [{ name: 'title', type: 'text', nullable: false }, { name: 'slug', type: 'text', nullable: false }] })).status).toBe(201);
    await ok(`
      create function card_slug() returns trigger language plpgsql as $$ begin new.slug := lower(new.title); return new; end $$;
      create trigger cards_slug before insert on cards for each row execute function card_slug();`);
    const r = await post('/db/tables/cards/rows', { data: { title: 'By API', slug: null } });
    const text = await r.text();
    expect(r.status, text).toBe(201);
    expect((JSON.parse(text) as { data: Record<string, unknown> }).data).toEqual({ title: 'By API', slug: 'by api' });
    expect((await ok(`insert into cards (title) values ('By SQL') returning title, slug`)).rows).toEqual([{ title: 'By SQL', slug: 'by sql' }]);
    const missing = await post('/db/tables/cards/rows', { data: { slug: 'x' } });
    expect(missing.status).toBe(400);
    const gql = await post('/db/graphql', { query: 'mutation($c: cards_insert_input!) { insert_cards(object: $c) { title slug } }', variables: { c: { title: 'By GraphQL' } } });
    const gqlText = await gql.text();
    expect(gql.status, gqlText).toBe(200);
    expect(JSON.parse(gqlText)).toEqual({ data: { insert_cards: { title: 'By GraphQL', slug: 'by graphql' } } });
    expect((await ok(`select title, slug from cards order by title`)).rows).toEqual([
      { title: 'By API', slug: 'by api' },
      { title: 'By GraphQL', slug: 'by graphql' },
      { title: 'By SQL', slug: 'by sql' },
    ]);
  });
});

describe('a NOT NULL column made to take NULL in the script that then writes the table', () => {
  it('the rows it writes afterwards are change events (the capture survives the rebuild)', async () => {
    const post = (path: string, body: unknown) => s.req(path, { method: 'POST', key: s.keys.service, headers: JSON_H, body: JSON.stringify(body) });
    expect((await post('/db/tables', { name: 'notes2', type: 'relational', columns: [{ name: 'body', type: 'text', nullable: false }, { name: 'tag', type: 'text', nullable: false }] })).status).toBe(201);
    const es = openEventSource(`${s.url}/realtime/stream?table=notes2&apikey=${s.keys.service}`);
    try {
      await es.next((m) => m.event === 'ready');
      await ok(`
        insert into notes2 (body, tag) values ('first', 't');
        create function notes2_tag() returns trigger language plpgsql as $$ begin new.tag := upper(new.body); return new; end $$;
        create trigger notes2_tag before insert on notes2 for each row execute function notes2_tag();
        insert into notes2 (body) values ('second');`);
      expect((await es.next((m) => m.event === 'change')).data).toMatchObject({ op: 'insert', data: { body: 'first', tag: 't' } });
      expect((await es.next((m) => m.event === 'change')).data).toMatchObject({ op: 'insert', data: { body: 'second' } });
      expect((await es.next((m) => m.event === 'change')).data).toMatchObject({ op: 'update', data: { body: 'second', tag: 'SECOND' } });
    } finally {
      es.close();
    }
  });
});

describe('the assignments of a BEFORE trigger fire no UPDATE trigger of their own (as in Postgres)', () => {
  it('an insert fires the INSERT triggers only; an update fires each UPDATE trigger once; old.version + 1 counts once', async () => {
    await ok(`
      create table docs (id serial primary key, title text, slug text, locked boolean default false, version int not null default 0);
      create table audit (id serial primary key, op text, doc int);
      create function docs_fill() returns trigger language plpgsql as $$ begin new.slug := lower(new.title); if tg_op = 'UPDATE' then new.version := old.version + 1; end if; return new; end $$;
      create trigger docs_fill before insert or update on docs for each row execute function docs_fill();
      create function docs_audit() returns trigger language plpgsql as $$ begin insert into audit (op, doc) values (tg_op, new.id); return new; end $$;
      create trigger docs_audit after insert or update on docs for each row execute function docs_audit();
      create function docs_lock() returns trigger language plpgsql as $$ begin if old.locked then raise exception 'locked'; end if; return new; end $$;
      create trigger docs_lock before update on docs for each row execute function docs_lock();`);
    expect((await ok(`insert into docs (title, locked) values ('A', true) returning *`)).rows).toEqual([{ id: 1, title: 'A', slug: 'a', locked: true, version: 0 }]);
    expect((await ok(`insert into docs (title) values ('B') returning *`)).rows).toEqual([{ id: 2, title: 'B', slug: 'b', locked: false, version: 0 }]);
    expect((await ok(`update docs set title = 'Bee' where id = 2 returning *`)).rows).toEqual([{ id: 2, title: 'Bee', slug: 'bee', locked: false, version: 1 }]);
    expect((await ok(`select op, doc from audit order by id`)).rows).toEqual([
      { op: 'INSERT', doc: 1 },
      { op: 'INSERT', doc: 2 },
      { op: 'UPDATE', doc: 2 },
    ]);
  });
});

