import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { call as callAs, deploy, invoke, type Answer } from '../helpers/functions.js';
import { openEventSource, openRtSocket, restartTestServer } from '../helpers/realtime.js';

// GRANT/REVOKE of table privileges through POST /db/query, as a Supabase migration writes them,
// enforced on every path for anon (publishable key), authenticated (a user's token) and
// service_role (service key): docs/sql.md "Privileges: GRANT and REVOKE".
let s: TestServer;
interface Who {
  key?: string;
  token?: string;
}
let user: { id: string; token: string };
const anon = (): Who => ({});
const authed = (): Who => ({ token: user.token });
const svc = (): Who => ({ key: s.keys.service });
const ROLES = ['anon', 'authenticated', 'service_role'] as const;
type Role = (typeof ROLES)[number];
const as = (r: Role): Who => (r === 'anon' ? anon() : r === 'authenticated' ? authed() : svc());

const call = (method: string, path: string, body?: unknown, who: Who = {}): Promise<Answer> => callAs(s, method, path, body, who);
const sql = (text: string, who: Who = svc(), params?: unknown[]) => call('POST', '/db/query', params ? { sql: text, params } : { sql: text }, who);
const ok = async (text: string) => {
  const r = await sql(text);
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const rows = async (t: string) => (await ok(`select * from ${t} order by title`)).rows as Array<Record<string, unknown>>;
const gql = (query: string, who: Who, variables?: unknown) => call('POST', '/db/graphql', { query, variables }, who);
const rpc = (method: string, params: unknown, who: Who) => call('POST', '/db/rpc', { jsonrpc: '2.0', id: 1, method, params }, who);

/** The answer of a denied access: 403 forbidden with Postgres' message and SQLSTATE. */
function denied(r: Answer, table: string): void {
  expect(r.status, r.text).toBe(403);
  expect(r.body).toEqual({ error: { code: 'forbidden', message: `permission denied for table ${table}`, details: { sqlstate: '42501', table } } });
}

let noteId = '';
// One function that runs any ctx.db operation as its caller, answering its value or its error.
const DB_FN = `export default async ({ op, args }, ctx) => {
  try { return { ok: await ctx.db[op](...args) }; } catch (e) { return { code: e.code, status: e.status, message: e.message }; }
};`;

beforeAll(async () => {
  s = await startTestServer();
  const reg = await call('POST', '/auth/register', { email: 'grants@example.com', password: 'correct horse battery staple 1' });
  expect(reg.status, reg.text).toBe(200);
  user = { id: reg.body.user.id, token: reg.body.access_token };
  await ok(`create table notes (id uuid primary key default gen_random_uuid(), title text not null, n int default 0);
            create table authors (id uuid primary key default gen_random_uuid(), name text not null);
            create table books (id uuid primary key default gen_random_uuid(), title text not null, author_id uuid references authors (id));
            create table secrets (id uuid primary key default gen_random_uuid(), title text not null);
            insert into notes (title) values ('first');
            insert into authors (id, name) values ('00000000-0000-4000-8000-000000000001', 'Ada');
            insert into books (title, author_id) values ('Notes', '00000000-0000-4000-8000-000000000001');
            insert into secrets (title) values ('s1')`);
  noteId = (await rows('notes'))[0]!.id as string;
  await deploy(s, 'dbop', DB_FN);
});
afterAll(() => s.close());

describe('defaults and the statements themselves', () => {
  it('every role has every privilege on public tables, old and new (Supabase defaults)', async () => {
    for (const r of ROLES) {
      const list = await call('GET', '/db/tables/notes/rows', undefined, as(r));
      expect(list.status, list.text).toBe(200);
      expect(list.body.rows).toHaveLength(1);
      expect((await sql('select title from notes', as(r))).body.rows).toEqual([{ title: 'first' }]);
    }
  });

  it('GRANT/REVOKE answer their command; only the service role may run them', async () => {
    expect(await ok('revoke select on notes from anon')).toEqual({ command: 'REVOKE', columns: [], rows: [], row_count: 0 });
    expect(await ok('grant select on table public.notes to anon')).toEqual({ command: 'GRANT', columns: [], rows: [], row_count: 0 });
    for (const who of [anon(), authed()]) {
      const r = await sql('revoke select on notes from anon', who);
      expect(r.status, r.text).toBe(401);
      expect(r.body.error.code).toBe('missing_scope');
    }
    expect((await call('GET', '/db/tables/notes/rows', undefined, anon())).status).toBe(200);
  });

  it('privileges on schemas, functions, sequences and default privileges are accepted with a notice', async () => {
    const r = await ok(`grant usage on schema public to anon, authenticated;
      grant execute on function do_it(int) to anon;
      grant all on all sequences in schema public to authenticated;
      alter default privileges in schema public grant all on tables to anon, authenticated, service_role;
      grant all on all functions in schema public to service_role`);
    expect(r.results).toHaveLength(5);
    for (const x of r.results) {
      expect(x.rows).toEqual([]);
      expect(x.notices).toHaveLength(1);
      expect(typeof x.notices[0]).toBe('string');
    }
    expect(r.results[0].notices[0]).toMatch(/ON SCHEMA changes nothing here/);
    expect(r.results[1].notices[0]).toMatch(/ON FUNCTION changes nothing here/);
    expect(r.results[3].notices[0]).toMatch(/ALTER DEFAULT PRIVILEGES/);
  });

  it("a Supabase migration's grants run in the script that creates the table", async () => {
    const r = await ok(`create table public.todos (id uuid primary key default gen_random_uuid(), task text);
      alter table public.todos enable row level security;
      create policy "read all" on public.todos for select using (true);
      create policy "add any" on public.todos for insert with check (true);
      grant usage on schema public to anon, authenticated;
      grant all on table public.todos to anon, authenticated, service_role;
      revoke insert, update, delete on public.todos from anon`);
    expect(r.results.map((x: { command: string }) => x.command)).toEqual(['CREATE TABLE', 'ALTER TABLE', 'CREATE POLICY', 'CREATE POLICY', 'GRANT', 'GRANT', 'REVOKE']);
    expect(r.results.map((x: { notices?: string[] }) => x.notices?.length ?? 0)).toEqual([0, 0, 0, 0, 1, 0, 0]);
    expect((await call('GET', '/db/tables/todos/rows', undefined, anon())).status).toBe(200);
    denied(await call('POST', '/db/tables/todos/rows', { data: { task: 'x' } }, anon()), 'todos');
    // GRANT … TO PUBLIC is a grant to all three roles; REVOKE … FROM PUBLIC leaves their own grants (a notice says so).
    expect((await ok('revoke all on todos from public')).notices).toHaveLength(1);
    expect((await call('GET', '/db/tables/todos/rows', undefined, anon())).status).toBe(200);
    await ok('grant insert on todos to public');
    const w = await call('POST', '/db/tables/todos/rows', { data: { task: 'x' } }, anon());
    expect(w.status, w.text).toBe(201);
    await ok('drop table todos');
  });

  it('refuses what it cannot record, by name, and changes nothing', async () => {
    const col = await sql('revoke select (title) on notes from anon');
    expect(col.status).toBe(400);
    expect(col.body.error.code).toBe('unsupported_sql');
    expect(col.body.error.message).toMatch(/column-level privileges/);
    const role = await sql('revoke select on notes from editors');
    expect(role.status).toBe(400);
    expect(role.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/^role "editors" does not exist/), details: { sqlstate: '42704' } });
    const missing = await sql('revoke select on nowhere from anon');
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'invalid_request', message: 'relation "nowhere" does not exist', details: { sqlstate: '42P01' } });
    for (const [text, construct] of [
      ['grant select on notes to anon with grant option', 'WITH GRANT OPTION'],
      ['revoke grant option for select on notes from anon', 'REVOKE GRANT OPTION FOR'],
      ['grant select on notes to anon granted by postgres', 'GRANTED BY'],
      ['grant select on all tables in schema auth to anon', 'schema "auth"'],
      ['grant select on auth.users to anon', 'privileges on auth.users'],
    ]) {
      const r = await sql(text!);
      expect(r.status, text).toBe(400);
      expect(r.body.error.code).toBe('unsupported_sql');
      expect(r.body.error.details.construct).toContain(construct);
    }
    // note: the refused statement was last in a script: the revoke before it did not happen either.
    const script = await sql('revoke select on notes from anon; revoke select (title) on notes from anon');
    expect(script.status).toBe(400);
    expect((await call('GET', '/db/tables/notes/rows', undefined, anon())).status).toBe(200);
  });
});

describe('SELECT revoked from one role', () => {
  for (const role of ROLES) {
    it(`${role}: denied on every read path; the other roles still read; GRANT restores`, async () => {
      await ok(`revoke select on notes from ${role}`);
      try {
        const who = as(role);
        denied(await call('GET', '/db/tables/notes/rows', undefined, who), 'notes');
        denied(await call('GET', `/db/tables/notes/rows/${noteId}`, undefined, who), 'notes');
        for (const q of [
          'select * from notes',
          'select 1 as x where exists (select 1 from notes)',
          'with n as (select title from notes) select count(*) from n',
          'select b.title from books b left join notes x on x.title = b.title',
          'select (select count(*) from notes) as c',
        ]) {
          denied(await sql(q, who), 'notes');
        }
        // A point lookup (answered on the main thread once its translation is cached) too.
        for (let i = 0; i < 3; i++) denied(await sql('select title from notes where id = $1', who, [noteId]), 'notes');
        // JSON-RPC: the same error in error.data.
        const lr = await rpc('db.list', { table: 'notes' }, who);
        expect(lr.body.error).toMatchObject({ code: -32000, message: 'permission denied for table notes', data: { code: 'forbidden', status: 403, details: { sqlstate: '42501', table: 'notes' } } });
        const qr = await rpc('db.query', { sql: 'select count(*) from notes' }, who);
        expect(qr.body.error.data).toMatchObject({ code: 'forbidden', status: 403 });
        // GraphQL: the field's error carries our code.
        const g = await gql('{ notes { title } }', who);
        expect(g.body.errors?.[0]).toMatchObject({ message: 'permission denied for table notes', extensions: { code: 'forbidden' } });
        // Functions' ctx.db, as the caller.
        const fl = await invoke(s, 'dbop', { op: 'list', args: ['notes'] }, who);
        expect(fl.body.result).toEqual({ code: 'forbidden', status: 403, message: 'permission denied for table notes' });
        const fq = await invoke(s, 'dbop', { op: 'query', args: ['select count(*) from notes', []] }, who);
        expect(fq.body.result).toEqual({ code: 'forbidden', status: 403, message: 'permission denied for table notes' });
        // The other roles are unaffected.
        for (const other of ROLES.filter((r) => r !== role)) {
          expect((await call('GET', '/db/tables/notes/rows', undefined, as(other))).status).toBe(200);
          expect((await sql('select count(*) as c from notes', as(other))).body.rows).toEqual([{ c: 1 }]);
        }
        // Another table stays readable by the same role.
        expect((await call('GET', '/db/tables/books/rows', undefined, who)).status).toBe(200);
      } finally {
        await ok(`grant select on notes to ${role}`);
      }
      for (const who of [as(role)]) {
        expect((await call('GET', '/db/tables/notes/rows', undefined, who)).status).toBe(200);
        expect((await sql('select title from notes', who)).body.rows).toEqual([{ title: 'first' }]);
        expect((await sql('select title from notes where id = $1', who, [noteId])).body.rows).toEqual([{ title: 'first' }]);
      }
    });
  }

  it('GraphQL nested relations read the related table with its privileges', async () => {
    await ok('revoke select on authors from anon');
    try {
      const g = await gql('{ books { title author { name } } }', anon());
      expect(g.body.errors?.[0]).toMatchObject({ message: 'permission denied for table authors', extensions: { code: 'forbidden' } });
      const plain = await gql('{ books { title } }', anon());
      expect(plain.body).toEqual({ data: { books: [{ title: 'Notes' }] } });
      const svcNested = await gql('{ books { title author { name } } }', svc());
      expect(svcNested.body).toEqual({ data: { books: [{ title: 'Notes', author: { name: 'Ada' } }] } });
    } finally {
      await ok('grant all on authors to anon');
    }
  });
});

describe('writes revoked', () => {
  for (const role of ROLES) {
    it(`${role}: INSERT, UPDATE and DELETE denied on the rows API, import, JSON-RPC, GraphQL and ctx.db; nothing written`, async () => {
      await ok(`revoke insert, update, delete on notes from ${role}`);
      const before = await rows('notes');
      try {
        const who = as(role);
        denied(await call('POST', '/db/tables/notes/rows', { data: { title: 'no' } }, who), 'notes');
        denied(await call('PATCH', `/db/tables/notes/rows/${noteId}`, { data: { title: 'no' } }, who), 'notes');
        denied(await call('DELETE', `/db/tables/notes/rows/${noteId}`, undefined, who), 'notes');
        const headers: Record<string, string> = { 'content-type': 'application/x-ndjson' };
        if (who.token) headers.authorization = `Bearer ${who.token}`;
        const imp = await s.req('/db/tables/notes/import', { method: 'POST', key: who.key, headers, body: '{"data":{"title":"no"}}\n' });
        expect(imp.status).toBe(403);
        expect(((await imp.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'forbidden', message: 'permission denied for table notes' });
        expect((await rpc('db.insert', { table: 'notes', data: { title: 'no' } }, who)).body.error.data).toMatchObject({ code: 'forbidden', status: 403 });
        const m = await gql('mutation($d: JSON!) { insert_notes(data: $d) { id } }', who, { d: { title: 'no' } });
        expect(m.body.errors?.[0]).toMatchObject({ message: 'permission denied for table notes', extensions: { code: 'forbidden' } });
        const del = await gql(`mutation { delete_notes(id: "${noteId}") }`, who);
        expect(del.body.errors?.[0]?.extensions.code).toBe('forbidden');
        for (const [op, args] of [
          ['insert', ['notes', { title: 'no' }]],
          ['update', ['notes', noteId, { title: 'no' }]],
          ['delete', ['notes', noteId]],
        ] as const) {
          const fn = await invoke(s, 'dbop', { op, args }, who);
          expect(fn.body.result).toEqual({ code: 'forbidden', status: 403, message: 'permission denied for table notes' });
        }
        // Reading still works for that role.
        expect((await call('GET', `/db/tables/notes/rows/${noteId}`, undefined, who)).status).toBe(200);
      } finally {
        await ok(`grant insert, update, delete on notes to ${role}`);
      }
      expect(await rows('notes')).toEqual(before);
      // Restored: the role writes again.
      const w = await call('POST', '/db/tables/notes/rows', { data: { title: `by ${role}` } }, as(role));
      expect(w.status, w.text).toBe(201);
      expect((await call('DELETE', `/db/tables/notes/rows/${w.body.id}`, undefined, as(role))).status).toBe(204);
    });
  }

  it('UPDATE and DELETE through the rows API also need SELECT (they find the row by its key, as PostgREST does)', async () => {
    await ok('revoke select on notes from authenticated');
    try {
      denied(await call('PATCH', `/db/tables/notes/rows/${noteId}`, { data: { title: 'no' } }, authed()), 'notes');
      denied(await call('DELETE', `/db/tables/notes/rows/${noteId}`, undefined, authed()), 'notes');
      // An insert needs only INSERT (the answer echoes the row written).
      const w = await call('POST', '/db/tables/notes/rows', { data: { title: 'blind' } }, authed());
      expect(w.status, w.text).toBe(201);
      await ok(`delete from notes where title = 'blind'`);
    } finally {
      await ok('grant select on notes to authenticated');
    }
    expect((await rows('notes')).map((r) => r.title)).toEqual(['first']);
  });
});

describe('the service role through /db/query', () => {
  it('INSERT … SELECT needs SELECT on the source; nothing is written without it', async () => {
    await ok('revoke select on secrets from service_role');
    try {
      denied(await sql('insert into notes (title) select title from secrets'), 'secrets');
      denied(await sql(`update notes set title = 'x' from secrets where secrets.title = notes.title`), 'secrets');
      denied(await sql('delete from notes where title in (select title from secrets)'), 'secrets');
      // A script is checked whole before anything runs.
      denied(await sql(`insert into notes (title) values ('a'); select * from secrets`), 'secrets');
    } finally {
      await ok('grant select on secrets to service_role');
    }
    expect((await rows('notes')).map((r) => r.title)).toEqual(['first']);
  });

  it("UPDATE/DELETE need SELECT only when they read the table's columns (WHERE, RETURNING, SET from a column)", async () => {
    await ok('revoke select on notes from service_role');
    try {
      expect((await sql('update notes set n = 5')).status).toBe(200);
      denied(await sql(`update notes set n = 6 where title = 'first'`), 'notes');
      denied(await sql('update notes set n = n + 1'), 'notes');
      denied(await sql('update notes set n = 7 returning id'), 'notes');
      denied(await sql(`delete from notes where title = 'zzz'`), 'notes');
      expect((await sql(`insert into notes (title) values ('second')`)).status).toBe(200);
      denied(await sql(`insert into notes (title) values ('third') returning id`), 'notes');
      denied(await sql(`insert into notes (id, title) values ('${noteId}', 'again') on conflict (id) do update set title = excluded.title`), 'notes');
    } finally {
      await ok('grant select on notes to service_role');
    }
    expect((await rows('notes')).map((r) => [r.title, r.n])).toEqual([
      ['first', 5],
      ['second', 0],
    ]);
    await ok(`delete from notes where title = 'second'; update notes set n = 0`);
  });

  it('REVOKE ALL … ON ALL TABLES IN SCHEMA public, then GRANT ALL back', async () => {
    await ok('revoke all privileges on all tables in schema public from anon');
    try {
      for (const t of ['notes', 'books', 'authors', 'secrets', 'profiles']) denied(await call('GET', `/db/tables/${t}/rows`, undefined, anon()), t);
      denied(await call('POST', '/db/tables/books/rows', { data: { title: 'no' } }, anon()), 'books');
      expect((await call('GET', '/db/tables/books/rows', undefined, authed())).status).toBe(200);
    } finally {
      await ok('grant all on all tables in schema public to anon');
    }
    for (const t of ['notes', 'books', 'authors', 'secrets']) expect((await call('GET', `/db/tables/${t}/rows`, undefined, anon())).status).toBe(200);
  });

  it('a dropped table forgets its privileges; a renamed one keeps them', async () => {
    await ok(`create table temp1 (id uuid primary key default gen_random_uuid(), title text);
              revoke select on temp1 from anon`);
    denied(await sql('select * from temp1', anon()), 'temp1');
    await ok('alter table temp1 rename to temp2');
    denied(await sql('select * from temp2', anon()), 'temp2');
    await ok('drop table temp2; create table temp2 (id uuid primary key default gen_random_uuid(), title text)');
    expect((await sql('select * from temp2', anon())).status).toBe(200);
    await ok('drop table temp2');
  });
});

describe('realtime', () => {
  const sseUrl = (q: string, token?: string) => `${s.url}/realtime/stream?${q}&apikey=${s.keys.publishable}${token ? `&access_token=${token}` : ''}`;

  it('a role without SELECT is refused the stream (403 before it opens)', async () => {
    await ok('revoke select on notes from anon');
    try {
      const res = await fetch(sseUrl('table=notes'));
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ error: { code: 'forbidden', message: 'permission denied for table notes', details: { sqlstate: '42501', table: 'notes' } } });
      // The WebSocket upgrade is refused the same way.
      const err = (await openRtSocket(`${s.url.replace('http', 'ws')}/realtime/ws?table=notes&apikey=${s.keys.publishable}`).then(
        () => null,
        (e: { status: number; body: string }) => e,
      ))!;
      expect(err.status).toBe(403);
      expect(JSON.parse(err.body).error).toMatchObject({ code: 'forbidden', message: 'permission denied for table notes' });
      // The same stream for a signed-in user opens.
      const ok2 = openEventSource(sseUrl('table=notes', user.token));
      try {
        await ok2.next((m) => m.event === 'ready');
      } finally {
        ok2.close();
      }
    } finally {
      await ok('grant select on notes to anon');
    }
  });

  it('an open stream gets no changes of the table while its role lacks SELECT', async () => {
    const es = openEventSource(sseUrl('table=notes', user.token));
    try {
      await es.next((m) => m.event === 'ready');
      await ok('revoke select on notes from authenticated');
      await ok(`insert into notes (title) values ('unseen')`);
      await ok('grant select on notes to authenticated');
      await ok(`insert into notes (title) values ('seen')`);
      const first = await es.next((m) => m.event === 'change');
      expect(first.data).toMatchObject({ op: 'insert', table: 'notes', data: { title: 'seen' } });
    } finally {
      es.close();
      await ok(`delete from notes where title in ('unseen', 'seen')`);
    }
  });
});

describe('recorded in the project file', () => {
  it('privileges survive a restart, and granting back restores the defaults', async () => {
    await ok('revoke select, delete on secrets from anon; revoke insert on books from service_role');
    s = await restartTestServer(s);
    denied(await call('GET', '/db/tables/secrets/rows', undefined, anon()), 'secrets');
    expect((await call('GET', '/db/tables/secrets/rows', undefined, authed())).status).toBe(200);
    denied(await call('POST', '/db/tables/books/rows', { data: { title: 'no' } }, svc()), 'books');
    // what was not revoked is still held
    expect((await call('GET', '/db/tables/books/rows', undefined, svc())).status).toBe(200);
    expect((await call('POST', '/db/tables/secrets/rows', { data: { title: 'a' } }, anon())).status).toBe(201);
    await ok('grant all on secrets to anon; grant insert on books to service_role');
    s = await restartTestServer(s);
    expect((await call('GET', '/db/tables/secrets/rows', undefined, anon())).status).toBe(200);
    expect((await call('POST', '/db/tables/books/rows', { data: { title: 'yes' } }, svc())).status).toBe(201);
  });
});

describe('views', () => {
  it('GRANT/REVOKE name a view as Postgres ON TABLE does; reading it needs SELECT on it and on its tables', async () => {
    await ok(`create view note_titles as select id, title from notes`);
    expect((await sql('select title from note_titles', anon())).body.rows).toEqual(expect.arrayContaining([{ title: 'first' }]));
    await ok('revoke select on note_titles from anon');
    denied(await sql('select title from note_titles', anon()), 'note_titles');
    denied(await call('GET', '/db/tables/note_titles/rows', undefined, anon()), 'note_titles');
    expect((await sql('select title from notes', anon())).status).toBe(200);
    expect((await sql('select title from note_titles', authed())).status).toBe(200);
    await ok('grant select on note_titles to anon; revoke select on notes from anon');
    denied(await sql('select title from note_titles', anon()), 'notes');
    await ok('grant select on notes to anon');
    expect((await sql('select title from note_titles', anon())).status).toBe(200);
    // a view dropped and made again starts with the defaults
    await ok('revoke select on note_titles from authenticated; drop view note_titles; create view note_titles as select id, title from notes');
    expect((await sql('select title from note_titles', authed())).status).toBe(200);
    await ok('drop view note_titles');
  });
});
