import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  // note: two statements of this one project at once (the runaway test runs another beside it); the
  // default is at most the cores but one, which is 1 on a 2-core machine (docs/api.md "Raw SQL").
  s = await startTestServer({ sqlProjectJobs: 2 });
});
afterAll(() => s.close());

const JSON_HEADERS = { 'content-type': 'application/json' };
const post = (body: unknown, key: string | null = s.keys.service, headers: Record<string, string> = {}) =>
  s.req('/db/query', { method: 'POST', key, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) });
const ok = async (sql: string, params: unknown[] = []) => {
  const res = await post({ sql, params });
  const body = await res.json();
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body as { command: string; columns: { name: string; type: string }[]; rows: Record<string, unknown>[]; row_count: number };
};
const fails = async (body: unknown, status: number, code: string, key: string | null = s.keys.service) => {
  const res = await post(body, key);
  expect(res.status).toBe(status);
  const e = await errorOf(res);
  expect(e.code).toBe(code);
  return e;
};

/** The change log as it is in the project file (raw SQL cannot read the reserved _svc_* tables). */
const changeLog = (where: string, columns = 'op, row_id') =>
  s.readBackup((db) => db.prepare(`SELECT ${columns} FROM "_svc_meta.change_log" WHERE ${where} ORDER BY seq`).all() as Record<string, unknown>[]);
const catalogCount = () => s.readBackup((db) => (db.prepare(`SELECT count(*) AS n FROM "_svc_meta.tables"`).get() as { n: number }).n);

describe('POST /db/query (service role)', () => {
  it('runs DDL, DML with bound parameters and typed SELECTs', async () => {
    const ddl = await ok(
      `create table notes (id bigserial primary key, title text not null, body jsonb, pinned boolean default false, noted_at timestamptz default now(), big int8)`,
    );
    expect(ddl).toEqual({ command: 'CREATE TABLE', columns: [], rows: [], row_count: 0 });
    const ins = await ok(`insert into notes (title, body, pinned, big) values ($1, $2, $3, $4), ('second', null, false, 9007199254740993) returning id, title, body, pinned`, [
      'first',
      { tags: ['a', 'b'], n: 1 },
      true,
      42,
    ]);
    expect(ins.command).toBe('INSERT');
    expect(ins.row_count).toBe(2);
    expect(ins.rows).toEqual([
      { id: 1, title: 'first', body: { n: 1, tags: ['a', 'b'] }, pinned: true },
      { id: 2, title: 'second', body: null, pinned: false },
    ]);
    const sel = await ok(`select id, title, body -> 'tags' ->> 0 as tag, pinned, noted_at, big from notes where title ilike $1 order by id`, ['%S%']);
    expect(sel.columns).toEqual([
      { name: 'id', type: 'int8' },
      { name: 'title', type: 'text' },
      { name: 'tag', type: 'text' },
      { name: 'pinned', type: 'bool' },
      { name: 'noted_at', type: 'timestamptz' },
      { name: 'big', type: 'int8' },
    ]);
    const notedAt = sel.rows.map((r) => r.noted_at as string);
    // note: int8 past 2^53 is a decimal string, exact.
    expect(sel.rows).toEqual([
      { id: 1, title: 'first', tag: 'a', pinned: true, noted_at: notedAt[0], big: 42 },
      { id: 2, title: 'second', tag: null, pinned: false, noted_at: notedAt[1], big: '9007199254740993' },
    ]);
    for (const at of notedAt) expect(new Date(at).toISOString()).toBe(at);
    const upd = await ok(`update notes set pinned = not pinned where id = $1`, [2]);
    expect(upd).toEqual({ command: 'UPDATE', columns: [], rows: [], row_count: 1 });
    const del = await ok(`delete from notes where id = 1 returning title`);
    expect(del).toEqual({ command: 'DELETE', columns: [{ name: 'title', type: 'text' }], rows: [{ title: 'first' }], row_count: 1 });
  });

  it('runs several statements in one transaction and answers each result', async () => {
    const res = await post({ sql: `create table t1 (id serial primary key, v text); insert into t1 (v) values ('a'), ('b'); select count(*) as n from t1` });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { results: { command: string; rows: unknown[] }[] };
    expect(body.results.map((r) => r.command)).toEqual(['CREATE TABLE', 'INSERT', 'SELECT']);
    expect(body.results[2]!.rows).toEqual([{ n: 2 }]);
    // A failing statement rolls back the whole script.
    await fails({ sql: `insert into t1 (v) values ('c'); insert into t1 (id, v) values (1, 'dup')` }, 409, 'conflict');
    expect((await ok(`select count(*) as n from t1`)).rows).toEqual([{ n: 2 }]);
  });

  it('binds parameters: SQL inside a parameter is a value, never a statement', async () => {
    await ok(`create table victims (id serial primary key, name text)`);
    const evil = "x'); drop table victims; --";
    await ok(`insert into victims (name) values ($1)`, [evil]);
    const r = await ok(`select name from victims where name = $1`, [evil]);
    expect(r.rows).toEqual([{ name: evil }]);
    expect((await ok(`select count(*) as n from victims`)).rows).toEqual([{ n: 1 }]);
    await fails({ sql: 'select $2::int as x', params: [1] }, 400, 'invalid_request');
  });

  it('refuses ATTACH, PRAGMA, load_extension and VACUUM INTO from any caller', async () => {
    for (const sql of [
      `attach database '/tmp/x.db' as x`,
      `pragma table_info(notes)`,
      `pragma writable_schema = 1`,
      `select load_extension('/tmp/evil.so')`,
      `vacuum into '/tmp/copy.db'`,
      `select * from sqlite_master`,
      `detach database main`,
    ]) {
      for (const key of [s.keys.service, s.keys.publishable]) {
        const res = await post({ sql }, key);
        expect(res.status, sql).toBe(400);
        expect((await errorOf(res)).code).toBe('unsupported_sql');
      }
    }
  });

  it('names the SQLite statement it refuses, wherever it stands in a script', async () => {
    for (const [sql, word] of [
      [`attach database '/tmp/x.db' as x`, 'ATTACH'],
      [`PRAGMA foreign_keys = off`, 'PRAGMA'],
      [`vacuum into '/tmp/copy.db'`, 'VACUUM'],
      [`select 1; /* ; */ -- ;\n detach database main`, 'DETACH'],
      [`select 'a;b'; reindex`, 'REINDEX'],
    ] as const) {
      const e = await fails({ sql }, 400, 'unsupported_sql');
      expect(e.message, sql).toContain(`${word} statements are never allowed`);
      expect(e.details).toEqual({ construct: word });
    }
    // a keyword inside a string literal is data, not a statement
    const e = await fails({ sql: `select 'x; pragma' from` }, 400, 'unsupported_sql');
    expect(e.message).not.toContain('never allowed');
    expect((await ok(`select 'x; attach' as t`)).rows).toEqual([{ t: 'x; attach' }]);
  });

  it('names the construct it does not translate', async () => {
    const e = await fails({ sql: 'select * from pg_sleep(1)' }, 400, 'unsupported_sql');
    expect(e.message).toMatch(/pg_sleep\(\) in FROM/);
    const f = await fails({ sql: 'select to_tsvector(title) from notes' }, 400, 'unsupported_sql');
    expect(f.message).toContain('to_tsvector');
    expect(String(f.details?.construct)).toContain('to_tsvector');
  });

  it('validates the body', async () => {
    await fails({ sql: '' }, 400, 'invalid_field');
    await fails({ sql: ' \n\t\u00a0\ufeff ' }, 400, 'invalid_field');
    await fails({ sql: 'select 1', params: 'x' }, 400, 'invalid_field');
    await fails({ sql: 'select 1', extra: true }, 400, 'invalid_field');
    await fails({ sql: 'select 1', timeout_ms: 0 }, 400, 'invalid_field');
    await fails({ sql: 'select * from no_such_table' }, 400, 'invalid_request');
  });

  it('answers 413 to a 10 MB SQL string', async () => {
    const sql = `select '${'x'.repeat(10 * 1024 * 1024)}'`;
    const res = await post({ sql });
    expect(res.status).toBe(413);
    expect((await errorOf(res)).code).toBe('payload_too_large');
  });

  it('holds the limits docs/api.md states, at their boundaries: 256 KiB of SQL, 100 statements, 1000 params, 10,000 rows, timeout_ms 1…5000', async () => {
    // SQL: 262,144 characters run, one more is 413
    const sqlOf = (length: number): string => `select '${'x'.repeat(length - 14)}' as v`;
    expect(sqlOf(256 * 1024)).toHaveLength(262_144);
    const atSql = await ok(sqlOf(256 * 1024));
    expect(atSql.rows).toEqual([{ v: 'x'.repeat(262_144 - 14) }]);
    const overSql = await fails({ sql: sqlOf(256 * 1024 + 1) }, 413, 'payload_too_large');
    expect(overSql.message).toBe('sql is longer than 262144 characters');
    // statements: 100 run in one script, 101 are refused
    const script = (n: number): string => Array.from({ length: n }, (_, i) => `select ${i} as n`).join('; ');
    const hundred = (await ok(script(100))) as unknown as { results: { rows: { n: number }[] }[] };
    expect(hundred.results).toHaveLength(100);
    expect(hundred.results[99]!.rows).toEqual([{ n: 99 }]);
    const overStatements = await fails({ sql: script(101) }, 400, 'unsupported_sql');
    expect(overStatements.message).toContain('more than 100 statements in one request');
    // params: 1000 bind, 1001 are refused; $1001 is not a parameter
    const thousand = Array.from({ length: 1000 }, (_, i) => i);
    const atParams = await ok(`select $1000::int as n`, thousand);
    expect(atParams.rows).toEqual([{ n: 999 }]);
    const overParams = await fails({ sql: 'select 1', params: [...thousand, 1000] }, 400, 'invalid_field');
    expect(overParams.details).toEqual({ field: 'params' });
    const overParam = await fails({ sql: 'select $1001::int as n', params: thousand }, 400, 'unsupported_sql');
    expect(overParam.message).toContain('parameters other than $1…$1000');
    // rows: a statement returns 10,000 rows; 10,001 is an error, never a truncated result
    const count = (n: number): string => `with recursive c(n) as (select 1 union all select n + 1 from c where n < ${n}) select n from c`;
    const atRows = await ok(count(10_000));
    expect(atRows.row_count).toBe(10_000);
    expect(atRows.rows[9_999]).toEqual({ n: 10_000 });
    const overRows = await fails({ sql: count(10_001) }, 400, 'invalid_request');
    expect(overRows.message).toBe('the statement returns more than 10000 rows; add a LIMIT');
    // timeout_ms: 1 and 5000 are taken, 0 and 5001 are not. A budget of 1 ms counts from the
    // request's start (queueing included), so on a busy machine it may end before the statement does.
    const atFive = await post({ sql: 'select 1 as n', timeout_ms: 5000 });
    expect(atFive.status).toBe(200);
    const atOne = await post({ sql: 'select 1 as n', timeout_ms: 1 });
    if (atOne.status !== 200) {
      expect(atOne.status).toBe(400);
      expect((await errorOf(atOne)).code).toBe('statement_timeout');
    }
    for (const timeout_ms of [0, 5001, 1.5]) {
      const e = await fails({ sql: 'select 1 as n', timeout_ms }, 400, 'invalid_field');
      expect(e.details, String(timeout_ms)).toEqual({ field: 'timeout_ms' });
    }
  });

  it('ends a runaway recursive CTE with statement_timeout while other requests are served', async () => {
    let settled = false;
    // note: 2 s, far longer than the other requests take (a second worker starts for them), and
    // short enough that the test does not wait out the 5 s maximum.
    const runaway = post({ sql: 'with recursive r(n) as (select 1 union all select n + 1 from r) select count(*) from r', timeout_ms: 2000 }).then((r) => {
      settled = true;
      return r;
    });
    const health = await fetch(`${s.url}/health`);
    expect(health.status).toBe(200);
    const other = await ok('select 1 as one');
    expect(other.rows).toEqual([{ one: 1 }]);
    expect(settled).toBe(false);
    const res = await runaway;
    const txt = await res.clone().text();
    expect(res.status, txt).toBe(400);
    expect((await errorOf(res)).code).toBe('statement_timeout');
  }, 20_000);

  it('ends a huge cross join with statement_timeout, and the pool keeps working', async () => {
    await ok(`create table nums (n int)`);
    await ok(`insert into nums (n) with recursive r(n) as (select 1 union all select n + 1 from r where n < 2000) select n from r`);
    await fails({ sql: 'select count(*) from nums a, nums b, nums c', timeout_ms: 300 }, 400, 'statement_timeout');
    expect((await ok('select count(*) as n from nums')).rows).toEqual([{ n: 2000 }]);
    // More than 10,000 rows is an error naming the cap, never a silently shorter result.
    const e = await fails({ sql: 'select a.n from nums a, nums b where b.n <= 6' }, 400, 'invalid_request');
    expect(e.message).toMatch(/more than 10000 rows/);
    expect((await ok('select a.n from nums a, nums b where b.n <= 5')).row_count).toBe(10000);
  });
  it('parses big SQL off the main thread: /health answers meanwhile', async () => {
    let settled = false;
    const sql = `select count(*) as n from nums where n in (${Array.from({ length: 15000 }, (_, i) => i).join(',')})`;
    const big = post({ sql }).then((r) => {
      settled = true;
      return r;
    });
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    expect(settled).toBe(false);
    const res = await big;
    expect(res.status).toBe(200);
  }, 20_000);
});

describe('repeated point lookups (answered inline from the cached translation)', () => {
  it('see a column added or dropped at once, and a dropped table as an error, not a stale answer', async () => {
    await ok('create table gadgets (id uuid primary key default gen_random_uuid(), name text)');
    const [g] = (await ok(`insert into gadgets (name) values ('one') returning id`)).rows as [{ id: string }];
    const look = () => ok('select * from gadgets where id = $1', [g.id]);
    expect((await look()).rows).toEqual([{ id: g.id, name: 'one' }]);
    expect((await look()).rows).toEqual([{ id: g.id, name: 'one' }]);
    await ok(`alter table gadgets add column color text default 'red'`);
    expect((await look()).rows).toEqual([{ id: g.id, name: 'one', color: 'red' }]);
    await ok('alter table gadgets drop column name');
    expect((await look()).rows).toEqual([{ id: g.id, color: 'red' }]);
    await ok('drop table gadgets');
    const e = await fails({ sql: 'select * from gadgets where id = $1', params: [g.id] }, 400, 'invalid_request');
    expect(e.message).toMatch(/gadgets/);
  });

  it('convert a typed parameter when it is bound: another spelling matches, a wrong value is a 400', async () => {
    await ok('create table widgets (id uuid primary key default gen_random_uuid(), made_at timestamptz)');
    const [w] = (await ok(`insert into widgets (made_at) values ('2024-05-06 07:08:09+02') returning id`)).rows as [{ id: string }];
    for (let i = 0; i < 2; i++) {
      const r = await ok('select id, made_at from widgets where id = $1', [w.id.toUpperCase()]);
      expect(r.rows).toEqual([{ id: w.id, made_at: '2024-05-06T05:08:09.000Z' }]);
      const e = await fails({ sql: 'select id from widgets where id = $1', params: ['not-a-uuid'] }, 400, 'invalid_request');
      expect(e.message).toBe('invalid input syntax for type uuid: "not-a-uuid"');
    }
    const later = await ok('select count(*) as n from widgets where made_at > $1', ['2024-05-06T05:00:00Z']);
    expect(later.rows).toEqual([{ n: 1 }]);
  });
});

describe('tables made by raw DDL', () => {
  it('appear in GET /db/tables as relational tables, usable through the rows API, and leave on DROP', async () => {
    await ok(
      `create table public.todos (id uuid primary key default gen_random_uuid(), title text not null, done boolean not null default false, meta jsonb, created_at timestamptz not null default now(), updated_at timestamptz not null default now())`,
    );
    const list = (await (await s.req('/db/tables', { key: s.keys.service })).json()) as { tables: { name: string; type: string; columns: { name: string; type: string }[] }[] };
    const t = list.tables.find((x) => x.name === 'todos');
    expect(t?.type).toBe('relational');
    expect(t?.columns.map((c) => [c.name, c.type])).toEqual(
      expect.arrayContaining([
        ['title', 'text'],
        ['done', 'bool'],
        ['meta', 'jsonb'],
      ]),
    );
    const created = await s.req('/db/tables/todos/rows', {
      method: 'POST',
      key: s.keys.service,
      headers: JSON_HEADERS,
      body: JSON.stringify({ data: { title: 'from rows api', done: true, meta: { a: 1 } } }),
    });
    expect(created.status).toBe(201);
    const row = (await created.json()) as { id: string };
    const viaSql = await ok(`select title, done, meta from todos where id = $1`, [row.id]);
    expect(viaSql.rows).toEqual([{ title: 'from rows api', done: true, meta: { a: 1 } }]);
    await ok(`insert into todos (title) values ('from sql')`);
    const rows = (await (await s.req('/db/tables/todos/rows?order=title.asc', { key: s.keys.service })).json()) as { rows: { data: Record<string, unknown> }[] };
    expect(rows.rows.map((r) => r.data.title)).toEqual(['from rows api', 'from sql']);
    await ok(`alter table todos rename column title to label`);
    const renamed = (await (await s.req('/db/tables/todos/rows?order=label.asc', { key: s.keys.service })).json()) as { rows: { data: Record<string, unknown> }[] };
    expect(renamed.rows.map((r) => r.data.label)).toEqual(['from rows api', 'from sql']);
    await ok(`alter table todos add column due timestamptz`);
    const after = (await (await s.req('/db/tables', { key: s.keys.service })).json()) as { tables: { name: string; columns: { name: string }[] }[] };
    expect(after.tables.find((x) => x.name === 'todos')?.columns.map((c) => c.name)).toContain('due');
    await ok(`drop table todos`);
    const gone = (await (await s.req('/db/tables', { key: s.keys.service })).json()) as { tables: { name: string }[] };
    expect(gone.tables.some((x) => x.name === 'todos')).toBe(false);
    expect((await s.req('/db/tables/todos/rows', { key: s.keys.service })).status).toBe(404);
  });
});

describe('tables made by raw DDL with an integer key and without the timestamp pair', () => {
  type Wire = { id: number; data: Record<string, unknown>; created_at?: string; updated_at?: string };
  const rowsApi = async (method: string, path: string, body?: unknown) => {
    const res = await s.req(path, { method, key: s.keys.service, headers: JSON_HEADERS, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: res.status === 204 ? null : ((await res.json()) as unknown) };
  };

  it('a serial key and only created_at: listed, keyed by number, its created_at an ordinary column', async () => {
    await ok(`create table notes2 (id serial primary key, body text not null, done boolean default false, created_at timestamptz default now())`);
    await ok(`insert into notes2 (body) values ('from sql')`);
    const list = (await (await s.req('/db/tables', { key: s.keys.service })).json()) as { tables: { name: string; type: string; columns: { name: string; type: string; system: boolean }[] }[] };
    const t = list.tables.find((x) => x.name === 'notes2');
    expect(t?.type).toBe('relational');
    expect(t?.columns.map((c) => [c.name, c.type, c.system])).toEqual([
      ['id', 'int8', true],
      ['body', 'text', false],
      ['done', 'bool', false],
      ['created_at', 'timestamptz', false],
    ]);

    // insert: SQLite assigns the key; the row has no updated_at, and created_at is data (its default applied)
    const created = await rowsApi('POST', '/db/tables/notes2/rows', { data: { body: 'from rows api' } });
    expect(created.status).toBe(201);
    const row = created.body as Wire;
    expect(row.id).toBe(2);
    expect(Object.keys(row).sort()).toEqual(['data', 'id']);
    expect(row.data).toMatchObject({ body: 'from rows api', done: false });
    expect(row.data.created_at).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);

    // get by id: the canonical integer; another spelling of it finds the row, anything else is a 404
    expect((await rowsApi('GET', '/db/tables/notes2/rows/1')).body).toMatchObject({ id: 1, data: { body: 'from sql' } });
    expect((await rowsApi('GET', '/db/tables/notes2/rows/01')).body).toMatchObject({ id: 1 });
    expect((await rowsApi('GET', '/db/tables/notes2/rows/abc')).status).toBe(404);
    expect((await rowsApi('GET', '/db/tables/notes2/rows/99')).status).toBe(404);
    // JSON-RPC takes the key as a number too
    const rpc = (await rowsApi('POST', '/db/rpc', { jsonrpc: '2.0', id: 1, method: 'db.get', params: { table: 'notes2', id: 1 } })).body as { result: Wire };
    expect(rpc.result).toMatchObject({ id: 1, data: { body: 'from sql' } });

    // update writes only what it was given (there is no updated_at to stamp); id stays the server's
    const patched = await rowsApi('PATCH', '/db/tables/notes2/rows/1', { data: { done: true, created_at: '2020-01-01T00:00:00Z' } });
    expect(patched.body).toEqual({ id: 1, data: { body: 'from sql', done: true, created_at: '2020-01-01T00:00:00.000Z' } });
    expect((await rowsApi('PATCH', '/db/tables/notes2/rows/1', { data: { id: 7 } })).status).toBe(400);

    // list: filter and order on the integer key
    const listed = (await rowsApi('GET', '/db/tables/notes2/rows?filter=id.gt.1&order=id.desc')).body as { rows: Wire[] };
    expect(listed.rows.map((r) => r.id)).toEqual([2]);
    const sorted = (await rowsApi('GET', '/db/tables/notes2/rows?order=created_at.asc')).body as { rows: Wire[] };
    expect(sorted.rows.map((r) => r.id)).toEqual([1, 2]);

    // raw SQL sees the rows API's writes, typed as declared
    const viaSql = await ok(`select id, body, done from notes2 order by id`);
    expect(viaSql.columns).toEqual([
      { name: 'id', type: 'int8' },
      { name: 'body', type: 'text' },
      { name: 'done', type: 'bool' },
    ]);
    expect(viaSql.rows).toEqual([
      { id: 1, body: 'from sql', done: true },
      { id: 2, body: 'from rows api', done: false },
    ]);

    // GraphQL: the table is in the schema, without timestamp fields
    const gql = await s.req('/db/graphql', { method: 'POST', key: s.keys.service, headers: JSON_HEADERS, body: JSON.stringify({ query: '{ notes2(order: "id.asc") { id body done created_at } }' }) });
    expect(await gql.json()).toEqual({
      data: {
        notes2: [
          { id: '1', body: 'from sql', done: true, created_at: '2020-01-01T00:00:00.000Z' },
          { id: '2', body: 'from rows api', done: false, created_at: (row.data.created_at as string) },
        ],
      },
    });
    const noStamp = await s.req('/db/graphql', { method: 'POST', key: s.keys.service, headers: JSON_HEADERS, body: JSON.stringify({ query: '{ notes2 { updated_at } }' }) });
    expect(noStamp.status).toBe(400);

    // delete, then the change log holds every write with the key in decimal
    expect((await rowsApi('DELETE', '/db/tables/notes2/rows/2')).status).toBe(204);
    const log = await changeLog(`tbl = 'notes2'`);
    expect(log).toEqual([
      { op: 'insert', row_id: '1' },
      { op: 'insert', row_id: '2' },
      { op: 'update', row_id: '1' },
      { op: 'delete', row_id: '2' },
    ]);
  });

  it('keeps the catalog in step with ALTER TABLE on such a table, and captures its raw writes', async () => {
    await ok(`create table tags2 (id integer primary key, label text)`);
    await ok(`insert into tags2 (label) values ('a'), ('b')`);
    await ok(`alter table tags2 add column color text default 'red'`);
    await ok(`update tags2 set color = 'blue' where id = 2`);
    await ok(`alter table tags2 drop column color`);
    const got = (await rowsApi('GET', '/db/tables/tags2/rows?order=id.asc')).body as { rows: Wire[] };
    expect(got.rows).toEqual([
      { id: 1, data: { label: 'a' } },
      { id: 2, data: { label: 'b' } },
    ]);
    const log = await changeLog(`tbl = 'tags2'`, 'op, row_id, data');
    expect(log).toEqual([
      { op: 'insert', row_id: '1', data: JSON.stringify({ label: 'a' }) },
      { op: 'insert', row_id: '2', data: JSON.stringify({ label: 'b' }) },
      { op: 'update', row_id: '2', data: JSON.stringify({ label: 'b', color: 'blue' }) },
    ]);
  });

  it("takes Supabase's default key, bigint generated by default as identity", async () => {
    await ok(`create table ident2 (id bigint generated by default as identity primary key, name text, created_at timestamptz not null default now(), updated_at timestamptz not null default now())`);
    const first = await rowsApi('POST', '/db/tables/ident2/rows', { data: { name: 'a' } });
    expect(first.body).toMatchObject({ id: 1, data: { name: 'a' } });
    expect(Object.keys(first.body as object).sort()).toEqual(['created_at', 'data', 'id', 'updated_at']);
    expect((await ok(`insert into ident2 (name) values ('b') returning id`)).rows).toEqual([{ id: 2 }]);
    // a bigint key that is not an identity is never null (Postgres refuses it too)
    await ok(`create table nokey2 (id bigint primary key, v text)`);
    await fails({ sql: `insert into nokey2 (v) values ('x')` }, 400, 'invalid_field');
  });

  it('takes generated always as identity: the key is never the caller\'s, through SQL or the rows API', async () => {
    // note: the phrase inside a string literal is left alone (only code is rewritten for the parser).
    await ok(`create table always_id (id bigint GENERATED  ALWAYS AS IDENTITY primary key, note text default 'generated always as identity')`);
    expect((await ok(`insert into always_id (note) values ('a') returning id, note`)).rows).toEqual([{ id: 1, note: 'a' }]);
    const row = await rowsApi('POST', '/db/tables/always_id/rows', { data: {} });
    expect(row.body).toMatchObject({ id: 2, data: { note: 'generated always as identity' } });
    const e = await fails({ sql: `insert into always_id (id, note) values (10, 'mine')` }, 400, 'invalid_request');
    expect(e.message).toBe('cannot insert a non-DEFAULT value into column "id"');
    const f = await fails({ sql: `update always_id set id = 5 where id = 1` }, 400, 'invalid_request');
    expect(f.message).toBe('column "id" can only be updated to DEFAULT');
    expect((await ok(`update always_id set note = 'b' where id = 1 returning id, note`)).rows).toEqual([{ id: 1, note: 'b' }]);
    expect((await ok(`select id, note from always_id order by id`)).rows).toEqual([
      { id: 1, note: 'b' },
      { id: 2, note: 'generated always as identity' },
    ]);
    await fails({ sql: `create table always_col (n int generated always as identity, v text)` }, 400, 'unsupported_sql');
    await ok(`create table if not exists always_id (id bigint generated always as identity primary key, note text)`);
  });

  it('takes the extensions a Supabase project has (uuid-ossp, pgcrypto) as installed, and B-tree indexes with or without a name', async () => {
    const r = await post({
      sql: `create extension if not exists "uuid-ossp"; create extension if not exists pgcrypto with schema extensions;
            create table ext_t (id uuid primary key default uuid_generate_v4(), n int); create index on ext_t using btree (n desc)`,
    });
    expect(r.status).toBe(200);
    expect(((await r.json()) as { results: { command: string }[] }).results.map((x) => x.command)).toEqual(['CREATE EXTENSION', 'CREATE EXTENSION', 'CREATE TABLE', 'CREATE INDEX']);
    const row = (await ok(`insert into ext_t (n) values (1) returning id`)).rows[0]!;
    expect(row.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // the unnamed index took Postgres' name
    await fails({ sql: `create index ext_t_n_idx on ext_t (n)` }, 400, 'invalid_request');
    await ok(`drop index ext_t_n_idx`);
    expect((await fails({ sql: `create extension pgcrypto` }, 400, 'invalid_request')).message).toBe('extension "pgcrypto" already exists');
    expect((await fails({ sql: `create extension if not exists postgis` }, 400, 'unsupported_sql')).message).toContain('extension "postgis"');
    expect((await fails({ sql: `create index ext_gin on ext_t using gin (n)` }, 400, 'unsupported_sql')).message).toContain('index method gin');
    await fails({ sql: `create extension if not exists pgcrypto` }, 401, 'missing_scope', s.keys.publishable);
  });

  it('compares with ANY/ALL over ARRAY[…] (also in a CHECK), a JSON-array or {…} parameter typed like the other side, and text[] columns', async () => {
    await ok(`create table quant (id uuid primary key default gen_random_uuid(), status text check (status = any (array['open', 'done'])), tags text[] default '{}')`);
    const ids = (await ok(`insert into quant (status, tags) values ('open', '{a,b}'), ('done', '{c}') returning id`)).rows.map((r) => String(r.id));
    await fails({ sql: `insert into quant (status) values ('bogus')` }, 400, 'invalid_field');
    // uuids written in capitals still match: elements are typed like the column, as in Postgres
    const byIds = await ok(`select status from quant where id = any($1) order by status`, [ids.map((x) => x.toUpperCase())]);
    expect(byIds.rows).toEqual([{ status: 'done' }, { status: 'open' }]);
    expect((await ok(`select status from quant where id <> all($1)`, [[ids[0]]])).rows).toEqual([{ status: 'done' }]);
    expect((await ok(`select status from quant where $1 = any(tags)`, ['c'])).rows).toEqual([{ status: 'done' }]);
    expect((await ok(`select status from quant where id = any($1)`, ['{}'])).rows).toEqual([]);
    expect((await ok(`select 2 = any($1) as a, 2 <> all($1) as b`, [[1, null]])).rows).toEqual([{ a: null, b: null }]);
    // publishable readers get the same through the RLS-filtered form
    const asReader = (await (await post({ sql: `select count(*) as n from quant where id = any($1)`, params: [ids] }, s.keys.publishable)).json()) as { rows: unknown[] };
    expect(asReader.rows).toEqual([{ n: 2 }]);
    expect((await fails({ sql: `select 1 from quant where id = any($1)`, params: ['not an array'] }, 400, 'invalid_request')).message).toContain('text[]');
    // = ANY (subquery) is IN (subquery), as Postgres reads it
    expect((await ok(`select count(*) as n from quant where id = any(select id from quant)`)).rows).toEqual([{ n: 2 }]);
  });

  it('leaves SQL-only what the rows API cannot key: a bigint key it cannot assign, a composite key, no key', async () => {
    await ok(`create table big_keyed (id bigint primary key, v text)`);
    await ok(`create table pair_keyed (a int, b int, primary key (a, b))`);
    await ok(`create table unkeyed (v text)`);
    const list = (await (await s.req('/db/tables', { key: s.keys.service })).json()) as { tables: { name: string }[] };
    const names = list.tables.map((x) => x.name);
    for (const n of ['big_keyed', 'pair_keyed', 'unkeyed']) expect(names).not.toContain(n);
    await ok(`insert into big_keyed values (1, 'x')`);
    expect((await ok(`select v from big_keyed`)).rows).toEqual([{ v: 'x' }]);
  });
});

describe('ALTER TABLE … ENABLE/DISABLE ROW LEVEL SECURITY', () => {
  const rows = async (key: string) => ((await (await s.req('/db/tables/vault/rows', { key })).json()) as { rows: unknown[] }).rows.length;

  it('switches the rows API RLS of a table, also one the same script creates; no policy means denied', async () => {
    const r = (await (
      await post({ sql: `create table vault (id bigint generated by default as identity primary key, secret text); -- a comment ; with a semicolon\n alter table public.vault enable row level security; insert into vault (secret) values ('x')` })
    ).json()) as { results: { command: string }[] };
    expect(r.results.map((x) => x.command)).toEqual(['CREATE TABLE', 'ALTER TABLE', 'INSERT']);
    expect(await (await s.req('/db/tables/vault/rls', { key: s.keys.service })).json()).toEqual({ table: 'vault', enabled: true, policies: {}, named: [] });
    expect(await rows(s.keys.publishable)).toBe(0);
    expect(await rows(s.keys.service)).toBe(1);
    expect((await ok(`select * from vault`)).rows).toEqual([{ id: 1, secret: 'x' }]);
    const asPublic = (await (await post({ sql: `select * from vault` }, s.keys.publishable)).json()) as { rows: unknown[] };
    expect(asPublic.rows).toEqual([]);
    await ok(`ALTER TABLE IF EXISTS vault DISABLE ROW LEVEL SECURITY`);
    expect(await rows(s.keys.publishable)).toBe(1);
  });

  it('keeps the policies written through the rows API when switched', async () => {
    await ok(`create table shelf (id serial primary key, title text, public boolean default false)`);
    const put = await s.req('/db/tables/shelf/rls', { method: 'PUT', key: s.keys.service, headers: JSON_HEADERS, body: JSON.stringify({ enabled: false, policies: { select: 'public = true' } }) });
    expect(put.status).toBe(200);
    await ok(`insert into shelf (title, public) values ('open', true), ('closed', false)`);
    await ok(`alter table shelf enable row level security`);
    expect(await (await s.req('/db/tables/shelf/rls', { key: s.keys.service })).json()).toMatchObject({ table: 'shelf', enabled: true, policies: { select: 'public = true' }, named: [{ name: 'rls_select', command: 'select', using: 'public = true' }] });
    const seen = (await (await s.req('/db/tables/shelf/rows', { key: s.keys.publishable })).json()) as { rows: { data: { title: string } }[] };
    expect(seen.rows.map((x) => x.data.title)).toEqual(['open']);
  });

  it('refuses what it cannot honour, and changes nothing', async () => {
    const before = await catalogCount();
    const e = await fails({ sql: `create table sql_only (a int); alter table sql_only enable row level security` }, 400, 'invalid_request');
    expect(e.message).toContain('GET /db/tables');
    expect(await catalogCount()).toBe(before);
    expect((await post({ sql: `select * from sql_only` })).status).toBe(400);
    await fails({ sql: `alter table no_such enable row level security` }, 400, 'invalid_request');
    const f = await fails({ sql: `alter table vault force row level security` }, 400, 'unsupported_sql');
    expect(f.message).toContain('FORCE ROW LEVEL SECURITY');
    await fails({ sql: `alter table vault enable row level security` }, 401, 'missing_scope', s.keys.publishable);
    // a statement the parser refuses in such a script is still named
    await fails({ sql: `alter table vault enable row level security; selec 1` }, 400, 'unsupported_sql');
  });
});

describe('change events of raw SQL writes', () => {
  it('records inserts, updates and deletes on catalog tables in the change log, in the same transaction', async () => {
    await ok(
      `create table tasks (id uuid primary key default gen_random_uuid(), title text not null, done boolean not null default false, meta jsonb, created_at timestamptz not null default now(), updated_at timestamptz not null default now())`,
    );
    const ins = await ok(`insert into tasks (title, meta) values ('a', '{"k":1}'), ('b', null) returning id`);
    const [a, b] = ins.rows.map((r) => r.id as string);
    await ok(`update tasks set done = true where id = $1`, [a]);
    await ok(`delete from tasks where id = $1`, [b]);
    // A failed script leaves no change behind.
    await fails({ sql: `update tasks set title = 'x'; insert into tasks (id, title) values ($1, 'dup')`, params: [a] }, 409, 'conflict');
    const log = await changeLog(`tbl = 'tasks'`, 'op, row_id, data, old');
    expect(log).toEqual([
      { op: 'insert', row_id: a, data: JSON.stringify({ title: 'a', done: false, meta: { k: 1 } }), old: null },
      { op: 'insert', row_id: b, data: JSON.stringify({ title: 'b', done: false, meta: null }), old: null },
      { op: 'update', row_id: a, data: JSON.stringify({ title: 'a', done: true, meta: { k: 1 } }), old: JSON.stringify({ title: 'a', done: false, meta: { k: 1 } }) },
      { op: 'delete', row_id: b, data: null, old: JSON.stringify({ title: 'b', done: false, meta: null }) },
    ]);
    // The live log saw them as changes (published on the bus after commit).
    const live = (await (await s.req('/live', { key: s.keys.service })).json()) as { events: { kind: string; label?: string }[] };
    expect(live.events.filter((e) => e.kind === 'change' && e.label?.endsWith('tasks')).map((e) => e.label)).toEqual([
      'insert into tasks',
      'insert into tasks',
      'update tasks',
      'delete from tasks',
    ]);
  });
});

describe('POST /db/query with a publishable key', () => {
  it('runs read-only SELECTs over the RLS-filtered rows, exactly what the rows API shows', async () => {
    await ok(
      `create table posts (id uuid primary key default gen_random_uuid(), title text not null, published boolean not null default false, created_at timestamptz not null default now(), updated_at timestamptz not null default now())`,
    );
    await ok(`insert into posts (title, published) values ('public one', true), ('draft', false), ('public two', true)`);
    const rls = await s.req('/db/tables/posts/rls', {
      method: 'PUT',
      key: s.keys.service,
      headers: JSON_HEADERS,
      body: JSON.stringify({ enabled: true, policies: { select: 'published = true' } }),
    });
    expect(rls.status).toBe(200);
    const res = await post({ sql: 'select title from posts order by title' }, s.keys.publishable);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { rows: { title: string }[] };
    expect(body.rows.map((r) => r.title)).toEqual(['public one', 'public two']);
    const viaRows = (await (await s.req('/db/tables/posts/rows?order=title.asc')).json()) as { rows: { data: { title: string } }[] };
    expect(viaRows.rows.map((r) => r.data.title)).toEqual(body.rows.map((r) => r.title));
    // Point lookups by id (answered on the main thread when the plan is a unique-key search) are filtered alike.
    const ids = (await ok(`select id, title, published from posts order by title`)).rows as { id: string; title: string; published: boolean }[];
    expect(ids.map((r) => [r.title, r.published])).toEqual([
      ['draft', false],
      ['public one', true],
      ['public two', true],
    ]);
    for (const r of ids) {
      const one = await post({ sql: 'select title from posts where id = $1', params: [r.id] }, s.keys.publishable);
      expect(((await one.json()) as { rows: unknown[] }).rows, r.title).toEqual(r.published ? [{ title: r.title }] : []);
    }
    // Joins, subqueries and CTEs see the filtered form too.
    const agg = await post({ sql: 'with p as (select * from posts) select count(*) as n, (select count(*) from posts x where not x.published) as hidden from p' }, s.keys.publishable);
    expect(((await agg.json()) as { rows: unknown[] }).rows).toEqual([{ n: 2, hidden: 0 }]);
  });

  it('refuses writes, DDL and auth.users with 401 missing_scope', async () => {
    for (const sql of [
      `insert into posts (title) values ('x')`,
      `update posts set title = 'x'`,
      `delete from posts`,
      `create table evil (id int)`,
      `drop table posts`,
      `select email from auth.users`,
      // A point lookup twice: the second one meets the cached translation on the synchronous path.
      `select email from auth.users where id = 'x'`,
      `select email from auth.users where id = 'x'`,
    ]) {
      const res = await post({ sql }, s.keys.publishable);
      expect(res.status, sql).toBe(401);
      expect((await errorOf(res)).code).toBe('missing_scope');
    }
  });

  it('refuses the reserved schemas with 400 invalid_request, as it does the service role', async () => {
    for (const sql of [
      `select * from _svc_auth.users`,
      `select * from _svc_meta.tables`,
      `select count(*) from posts join _svc_auth.sessions s on true`,
      `select id from _svc_auth.users where id = 'x'`,
      `select id from _svc_auth.users where id = 'x'`,
    ]) {
      const res = await post({ sql }, s.keys.publishable);
      expect(res.status, sql).toBe(400);
      expect((await errorOf(res)).code).toBe('invalid_request');
    }
  });

  it('needs a key', async () => {
    const res = await post({ sql: 'select 1' }, null);
    expect(res.status).toBe(401);
  });
});
