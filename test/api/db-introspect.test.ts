import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// information_schema and pg_catalog.pg_tables: read-only views of the project's own tables
// for the service role (docs/sql.md "Introspection").

let s: TestServer;
async function query(sql: string, key: string = s.keys.service, token?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await s.req('/db/query', { method: 'POST', key, headers, body: JSON.stringify({ sql }) });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), text };
}
const rows = async (sql: string) => {
  const r = await query(sql);
  expect(r.status, `${sql}: ${r.text}`).toBe(200);
  return r.body.rows as Record<string, unknown>[];
};

beforeAll(async () => {
  s = await startTestServer();
  const made = await s.req('/db/tables', {
    method: 'POST',
    key: s.keys.service,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'posts', type: 'relational', columns: [{ name: 'title', type: 'text' }, { name: 'slug', type: 'text', unique: true }] }),
  });
  expect(made.status).toBe(201);
  expect((await query(`create table tags (id bigserial primary key, post_id uuid not null references posts (id) on delete cascade, label varchar(20) default 'x', weight float8)`)).status).toBe(200);
});
afterAll(() => s.close());

describe('introspection views', () => {
  it('information_schema.tables lists the project tables, never the reserved ones', async () => {
    expect(await rows(`select table_schema, table_name, table_type from information_schema.tables order by table_name`)).toEqual([
      { table_schema: 'public', table_name: 'posts', table_type: 'BASE TABLE' },
      { table_schema: 'public', table_name: 'profiles', table_type: 'BASE TABLE' },
      { table_schema: 'public', table_name: 'tags', table_type: 'BASE TABLE' },
    ]);
    expect((await query('select * from information_schema.tables')).text).not.toContain('_svc_');
    expect(await rows(`select schemaname, tablename, hasindexes from pg_catalog.pg_tables where tablename <> 'profiles' order by tablename`)).toEqual([
      { schemaname: 'public', tablename: 'posts', hasindexes: true },
      { schemaname: 'public', tablename: 'tags', hasindexes: true },
    ]);
    expect(await rows(`select count(*) as n from pg_tables`)).toEqual([{ n: 3 }]);
  });

  it('information_schema.columns types columns as the translator does, with Postgres names and defaults', async () => {
    expect(await rows(`select column_name, ordinal_position, data_type, udt_name, is_nullable, column_default from information_schema.columns where table_name = 'posts' order by ordinal_position`)).toEqual([
      { column_name: 'id', ordinal_position: 1, data_type: 'uuid', udt_name: 'uuid', is_nullable: 'NO', column_default: 'gen_random_uuid()' },
      { column_name: 'title', ordinal_position: 2, data_type: 'text', udt_name: 'text', is_nullable: 'YES', column_default: null },
      { column_name: 'slug', ordinal_position: 3, data_type: 'text', udt_name: 'text', is_nullable: 'YES', column_default: null },
      { column_name: 'created_at', ordinal_position: 4, data_type: 'timestamp with time zone', udt_name: 'timestamptz', is_nullable: 'NO', column_default: 'now()' },
      { column_name: 'updated_at', ordinal_position: 5, data_type: 'timestamp with time zone', udt_name: 'timestamptz', is_nullable: 'NO', column_default: 'now()' },
    ]);
    expect(await rows(`select column_name, data_type, is_nullable, column_default from information_schema.columns where table_name = 'tags' order by ordinal_position`)).toEqual([
      { column_name: 'id', data_type: 'bigint', is_nullable: 'NO', column_default: null },
      { column_name: 'post_id', data_type: 'uuid', is_nullable: 'NO', column_default: null },
      { column_name: 'label', data_type: 'text', is_nullable: 'YES', column_default: "'x'::text" },
      { column_name: 'weight', data_type: 'double precision', is_nullable: 'YES', column_default: null },
    ]);
  });

  it('table_constraints and key_column_usage name keys as Postgres does, and join', async () => {
    expect(
      await rows(
        `select tc.table_name, tc.constraint_name, tc.constraint_type, k.column_name from information_schema.table_constraints tc join information_schema.key_column_usage k on k.constraint_name = tc.constraint_name where tc.table_name in ('posts', 'tags') order by tc.table_name, tc.constraint_name`,
      ),
    ).toEqual([
      { table_name: 'posts', constraint_name: 'posts_pkey', constraint_type: 'PRIMARY KEY', column_name: 'id' },
      { table_name: 'posts', constraint_name: 'posts_slug_key', constraint_type: 'UNIQUE', column_name: 'slug' },
      { table_name: 'tags', constraint_name: 'tags_pkey', constraint_type: 'PRIMARY KEY', column_name: 'id' },
      { table_name: 'tags', constraint_name: 'tags_post_id_fkey', constraint_type: 'FOREIGN KEY', column_name: 'post_id' },
    ]);
  });

  it('follows the schema: a table made or dropped shows at once', async () => {
    expect((await query(`create table extra (id serial primary key)`)).status).toBe(200);
    expect(await rows(`select table_name from information_schema.tables where table_name = 'extra'`)).toEqual([{ table_name: 'extra' }]);
    expect((await query(`drop table extra`)).status).toBe(200);
    expect(await rows(`select table_name from information_schema.tables where table_name = 'extra'`)).toEqual([]);
  });

  it('is read-only, and refused to callers other than the service role', async () => {
    for (const sql of [`insert into information_schema.tables (table_name) values ('x')`, `delete from pg_catalog.pg_tables`, 'drop table information_schema.columns']) {
      const r = await query(sql);
      expect(r.status, sql).toBe(400);
      expect(r.body.error.code).toBe('invalid_request');
    }
    const r = await query('select * from information_schema.tables', s.keys.publishable);
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('missing_scope');
    expect((await query('select * from information_schema.views')).status).toBe(400);
  });
});
