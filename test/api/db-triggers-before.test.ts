import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
