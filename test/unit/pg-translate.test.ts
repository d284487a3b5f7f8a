import { beforeAll, describe, expect, it } from 'vitest';
import { loadParser } from '../../src/sql/pg/parse.js';
import { EdgeError } from '../../src/core/errors.js';
import { bind, bindPlain, plainTable, translate, translateUncached } from '../../src/sql/pg/translate.js';
import type { SchemaLookup } from '../../src/sql/pg/types.js';
import { UUID_V7 } from '../../src/sql/pg/statements.js';

beforeAll(loadParser);

const schema: SchemaLookup = (t) =>
  t === 'todos'
    ? [
        { name: 'id', type: 'uuid', pk: true },
        { name: 'title', type: 'text' },
        { name: 'done', type: 'bool' },
        { name: 'due_at', type: 'timestamptz' },
        { name: 'meta', type: 'jsonb' },
      ]
    : t === 'posts'
      ? [
          { name: 'id', type: 'uuid', pk: true, auto: 'uuid' },
          { name: 'title', type: 'text' },
          { name: 'created_at', type: 'timestamptz', auto: 'now' },
          { name: 'updated_at', type: 'timestamptz', auto: 'touch' },
        ]
      : null;

const ID = '0190a8b2-7c1d-7e3f-8a4b-5c6d7e8f9a0b';
const sqlOf = (text: string): string => bindPlain(translateUncached(text, schema).statements[0]!.steps[0]!, [ID, ID, ID]).sql;
const codeOf = (text: string): string => {
  try {
    translateUncached(text, schema);
    return 'ok';
  } catch (err) {
    return err instanceof EdgeError ? err.code : 'other';
  }
};

describe('the Postgres → SQLite statement translator', () => {
  it('re-emits from the AST: identifiers quoted, literals re-quoted, parameters bound', () => {
    const out = sqlOf(`select title from todos where title = 'it''s' and id = $1`);
    expect(out).toContain(`"title"`);
    expect(out).toContain(`'it''s'`);
    expect(out).toContain('?');
    expect(out).not.toContain('$1');
  });

  it('maps schemas: public.x is x, reserved _svc_* names are refused in every spelling, others are unsupported', () => {
    expect(sqlOf('select title from public.todos')).toContain('FROM "todos"');
    expect(codeOf('select * from other.todos')).toBe('unsupported_sql');
    for (const sql of [
      'select name from _svc_meta.tables',
      'select * from "_svc_auth".users',
      'select * from "_SVC_AUTH".users',
      'select * from _SVC_AUTH.USERS',
      'select * from "_svc_auth.users"',
      'select * from public."_svc_auth.users"',
      'select * from todos where exists (select 1 from _svc_auth.sessions)',
      'with x as (select * from _svc_meta.change_log) select * from x',
      'select * from todos join _svc_storage.objects o on true',
      'update todos set title = null from _svc_auth.users u',
      `insert into _svc_auth.users (id) values ('x')`,
      `insert into todos (title) select password_hash from _svc_auth.users`,
      'delete from _svc_meta.tables',
      'drop table _svc_meta.tables',
      'create table _svc_auth.mine (id int)',
      'create table _svc_mine (id int)',
      'alter table todos rename to _svc_x',
      'create index _svc_x on todos (title)',
      'drop index "_svc_auth.users_role"',
      'drop index _svc_auth.users_role',
      'create table t (id uuid references _svc_auth.users (id))',
    ]) {
      expect(codeOf(sql), sql).toBe('invalid_request');
    }
  });

  it('fills the left-out columns of a rows-API table and touches updated_at on UPDATE unless it is set', () => {
    const NOW = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;
    const ins = sqlOf(`insert into posts (title) values ('a'), ('b')`);
    expect(ins).toBe(`INSERT INTO "posts" AS "posts" ("title", "id", "created_at", "updated_at") VALUES (CAST('a' AS TEXT), ${UUID_V7}, ${NOW}, ${NOW}), (CAST('b' AS TEXT), ${UUID_V7}, ${NOW}, ${NOW})`);
    expect(sqlOf(`insert into posts (id, title, created_at, updated_at) values ($1, 'a', now(), now())`)).not.toContain('randomblob');
    expect(sqlOf(`insert into posts (title) select title from posts`)).toContain(`SELECT *, ${UUID_V7}, ${NOW}, ${NOW} FROM (`);
    expect(sqlOf(`update posts set title = 'x'`)).toBe(`UPDATE "posts" AS "posts" SET "title" = CAST('x' AS TEXT), "updated_at" = ${NOW} WHERE pe_tick("posts"."id")`);
    expect(sqlOf(`update posts set title = 'x', updated_at = '2020-01-01T00:00:00Z'`)).not.toContain(`"updated_at" = ${NOW}`);
    expect(sqlOf(`update todos set title = 'x'`)).not.toContain('updated_at');
  });

  it('reads auth.users as its fixed columns over the auth store, and refuses it as a target', () => {
    const t = translateUncached('select * from auth.users', schema);
    expect(t.statements[0]!.columns).toEqual([
      { name: 'id', type: 'uuid', pk: true },
      { name: 'email', type: 'text' },
      { name: 'phone', type: 'text' },
      { name: 'created_at', type: 'timestamptz' },
      { name: 'updated_at', type: 'timestamptz' },
      { name: 'last_sign_in_at', type: 'timestamptz' },
      { name: 'email_confirmed_at', type: 'timestamptz' },
      { name: 'raw_user_meta_data', type: 'jsonb' },
      { name: 'raw_app_meta_data', type: 'jsonb' },
      { name: 'is_anonymous', type: 'bool' },
    ]);
    expect([...t.tables]).toEqual(['auth.users']);
    expect(sqlOf('select email from auth.users')).not.toContain('password_hash');
    for (const sql of [`insert into auth.users (id) values ('x')`, `update auth.users set email = 'x'`, 'delete from auth.users', 'drop table auth.users', 'alter table auth.users add column x text', 'create index i on auth.users (email)']) {
      expect(codeOf(sql), sql).toBe('invalid_request');
    }
  });

  it('expands * from the schema and types columns', () => {
    const t = translateUncached('select * from todos', schema);
    expect(t.statements[0]!.columns?.map((c) => c.type)).toEqual(['uuid', 'text', 'bool', 'timestamptz', 'jsonb']);
  });

  it('types literals from context (timestamps normalised, jsonb canonical)', () => {
    expect(sqlOf(`select id from todos where due_at > '2024-01-01'`)).toContain(`pe_ts('2024-01-01')`);
    expect(sqlOf(`select id from todos where meta @> '{"a":1}'`)).toContain('pe_jcontains');
  });

  it('has no translation for SQLite-only or dangerous statements', () => {
    for (const s of ['pragma user_version', "attach database 'x' as y", "vacuum into 'x'", "select load_extension('x')", 'select * from sqlite_master', 'begin', 'create materialized view v as select 1']) {
      expect(codeOf(s), s).toBe('unsupported_sql');
    }
  });

  it('names the construct in details', () => {
    try {
      translateUncached('select title from todos natural join todos', schema);
      expect.unreachable();
    } catch (err) {
      expect((err as EdgeError).details).toEqual({ construct: 'NATURAL JOIN (write JOIN … USING (columns))' });
    }
  });

  it('caches by key and SQL text', () => {
    const a = translate('select title from todos', schema, 'p:1');
    expect(translate('select title from todos', schema, 'p:1')).toBe(a);
    expect(translate('select title from todos', schema, 'p:2')).not.toBe(a);
  });

  it('binds RLS-filtered table forms and their values in text order', () => {
    const step = translateUncached('select title from todos where id = $1', schema).statements[0]!.steps[0]!;
    const b = bind(step.sql, [ID], (t) => ({ sql: `(SELECT * FROM "${t}" WHERE owner = ?)`, params: ['u1'] }));
    expect(b.sql).toMatch(/^SELECT .* FROM \(SELECT \* FROM "todos" WHERE owner = \?\) AS "todos" WHERE .*\?/);
    expect(b.params).toEqual(['u1', ID]);
    const plain = bindPlain(step, [ID]);
    expect(bind(step.sql, [ID], plainTable)).toEqual({ sql: plain.sql, params: plain.params });
  });

  it('converts a typed parameter when it is bound, with the function SQLite would call', () => {
    const step = translateUncached('select title from todos where id = $1 and due_at > $2', schema).statements[0]!.steps[0]!;
    const b = bindPlain(step, [ID.toUpperCase().replaceAll('-', ''), '2024-01-02 03:04:05+02']);
    expect(b.sql).not.toMatch(/pe_uuid|pe_ts/);
    expect(b.params).toEqual([ID, '2024-01-02T01:04:05.000Z']);
    expect(bind(step.sql, [ID, '2024-01-02'], plainTable).params).toEqual([ID, '2024-01-02T00:00:00.000Z']);
  });

  it('refuses a parameter its type cannot read with 400, before anything runs', () => {
    const step = translateUncached('select title from todos where id = $1', schema).statements[0]!.steps[0]!;
    for (const run of [() => bindPlain(step, ['not a uuid']), () => bind(step.sql, ['not a uuid'], plainTable)]) {
      try {
        run();
        expect.unreachable();
      } catch (err) {
        expect(err).toBeInstanceOf(EdgeError);
        expect((err as EdgeError).code).toBe('invalid_request');
        expect((err as EdgeError).message).toBe('invalid input syntax for type uuid: "not a uuid"');
      }
    }
  });

  it('checks the time limit in every WHERE, except in untimed (inline point lookup) bindings', () => {
    const step = translateUncached('select title from todos where id = $1', schema).statements[0]!.steps[0]!;
    expect(bindPlain(step, [ID]).sql).toMatch(/AND pe_tick\("todos"\."id"\)$/);
    expect(bindPlain(step, [ID], false).sql).not.toContain('pe_tick');
    expect(bind(step.sql, [ID], plainTable, [], false).sql).not.toContain('pe_tick');
  });

  it('refuses ungrouped columns like Postgres, unless the primary key is grouped', () => {
    expect(codeOf('select title, count(*) from todos group by done')).toBe('invalid_request');
    expect(codeOf('select title, count(*) from todos group by id')).toBe('ok');
  });
});
