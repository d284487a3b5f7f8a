import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

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
const OWN = "data->>'owner' = auth.uid()";

beforeAll(async () => {
  s = await startTestServer();
  alice = await register('alice@example.com');
  bob = await register('bob@example.com');
  expect((await call('POST', '/db/tables', { name: 'todos' }, svc())).status).toBe(201);
  const put = await call('PUT', '/db/tables/todos/rls', { enabled: true, policies: { select: OWN, insert: OWN, update: OWN, delete: OWN } }, svc());
  expect(put.status, put.text).toBe(200);
});
afterAll(() => s.close());

/** `GET …/rls` without its `named` list: the combined view it has always shown. */
const combined = (b: { table: string; enabled: boolean; policies: unknown }) => ({ table: b.table, enabled: b.enabled, policies: b.policies });
const count = async (t: string) => (await call('GET', `/db/tables/${t}/rows?count=exact&limit=0`, undefined, svc())).body.total as number;

describe('RLS policies on a document table', () => {
  it('GET returns what was written', async () => {
    const r = await call('GET', '/db/tables/todos/rls');
    expect(combined(r.body)).toEqual({ table: 'todos', enabled: true, policies: { select: OWN, insert: OWN, update: OWN, delete: OWN } });
    // the per-operation policies are listed by name too (docs/api.md "Row-level security")
    expect(r.body.named.map((p: { name: string }) => p.name)).toEqual(['rls_select', 'rls_insert', 'rls_update', 'rls_delete']);
  });

  it('a user inserts their own row; a row for someone else is 403 rls_denied and not written', async () => {
    const before = await count('todos');
    const ok = await call('POST', '/db/tables/todos/rows', { data: { owner: alice.id, t: 'mine' } }, { token: alice.token });
    expect(ok.status, ok.text).toBe(201);
    const bad = await call('POST', '/db/tables/todos/rows', { data: { owner: bob.id, t: 'forged' } }, { token: alice.token });
    expect(bad.status).toBe(403);
    expect(bad.body.error.code).toBe('rls_denied');
    const anon = await call('POST', '/db/tables/todos/rows', { data: { owner: null } });
    expect(anon.status).toBe(403);
    expect(await count('todos')).toBe(before + 1);
  });

  it('hidden rows: omitted from lists, 404 on get/patch/delete', async () => {
    const a = await call('POST', '/db/tables/todos/rows', { data: { owner: alice.id, t: 'secret' } }, { token: alice.token });
    const listB = await call('GET', '/db/tables/todos/rows', undefined, { token: bob.token });
    expect(listB.status).toBe(200);
    expect(listB.body.rows).toEqual([]);
    const listA = await call('GET', '/db/tables/todos/rows?count=exact&filter=t.eq.secret', undefined, { token: alice.token });
    expect(listA.body.rows).toEqual([a.body]);
    expect(listA.body.total).toBe(1);
    const path = `/db/tables/todos/rows/${a.body.id}`;
    expect((await call('GET', path, undefined, { token: bob.token })).status).toBe(404);
    expect((await call('PATCH', path, { data: { t: 'hacked' } }, { token: bob.token })).status).toBe(404);
    expect((await call('DELETE', path, undefined, { token: bob.token })).status).toBe(404);
    expect((await call('GET', path)).status).toBe(404);
    const g = await call('GET', path, undefined, { token: alice.token });
    expect(g.body.data).toEqual({ owner: alice.id, t: 'secret' });
  });

  it('an update whose new row fails the policy is 403 and changes nothing', async () => {
    const a = await call('POST', '/db/tables/todos/rows', { data: { owner: alice.id, t: 'x' } }, { token: alice.token });
    const path = `/db/tables/todos/rows/${a.body.id}`;
    const p = await call('PATCH', path, { data: { owner: bob.id } }, { token: alice.token });
    expect(p.status).toBe(403);
    expect(p.body.error.code).toBe('rls_denied');
    expect((await call('GET', path, undefined, { token: alice.token })).body).toEqual(a.body);
    const ok = await call('PATCH', path, { data: { t: 'y' } }, { token: alice.token });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toEqual({ owner: alice.id, t: 'y' });
    expect((await call('DELETE', path, undefined, { token: alice.token })).status).toBe(204);
  });

  it('the service role bypasses RLS', async () => {
    const ins = await call('POST', '/db/tables/todos/rows', { data: { owner: 'nobody', t: 'orphan' } }, svc());
    expect(ins.status).toBe(201);
    const orphan = '/db/tables/todos/rows?filter=owner.eq.nobody';
    expect((await call('GET', orphan, undefined, svc())).body.rows).toEqual([ins.body]);
    expect((await call('GET', `/db/tables/todos/rows/${ins.body.id}`, undefined, svc())).body).toEqual(ins.body);
    const h = { authorization: `Bearer ${s.operatorToken}`, 'x-service-project': s.projectId };
    const op = await s.req(orphan, { key: null, headers: h });
    expect(op.status).toBe(200);
    expect(((await op.json()) as { rows: unknown[] }).rows).toEqual([ins.body]);
    // nobody else sees it
    expect((await call('GET', orphan, undefined, { token: alice.token })).body.rows).toEqual([]);
    expect((await call('GET', orphan)).body.rows).toEqual([]);
  });

  it('an invalid token is 401, not anon', async () => {
    expect((await call('GET', '/db/tables/todos/rows', undefined, { token: 'lca_garbage' })).status).toBe(401);
  });
});

describe('operations without a policy are denied', () => {
  beforeAll(async () => {
    expect((await call('POST', '/db/tables', { name: 'readonly_t' }, svc())).status).toBe(201);
    expect((await call('PUT', '/db/tables/readonly_t/rls', { enabled: true, policies: { select: 'true' } }, svc())).status).toBe(200);
  });

  it('select true, nothing else: reads work, writes are denied', async () => {
    const row = await call('POST', '/db/tables/readonly_t/rows', { data: { a: 1 } }, svc());
    const path = `/db/tables/readonly_t/rows/${row.body.id}`;
    expect((await call('GET', path)).status).toBe(200);
    const ins = await call('POST', '/db/tables/readonly_t/rows', { data: { a: 2 } });
    expect(ins.status).toBe(403);
    expect(ins.body.error.code).toBe('rls_denied');
    const upd = await call('PATCH', path, { data: { a: 3 } }, { token: alice.token });
    expect(upd.status).toBe(403);
    expect((await call('DELETE', path)).status).toBe(403);
    expect((await call('GET', path)).body.data).toEqual({ a: 1 });
  });

  it('enabled with no policies at all: nothing is visible', async () => {
    expect((await call('POST', '/db/tables', { name: 'closed' }, svc())).status).toBe(201);
    const row = await call('POST', '/db/tables/closed/rows', { data: { a: 1 } }, svc());
    expect((await call('PUT', '/db/tables/closed/rls', { enabled: true, policies: {} }, svc())).status).toBe(200);
    expect((await call('GET', '/db/tables/closed/rows')).body.rows).toEqual([]);
    expect((await call('GET', `/db/tables/closed/rows/${row.body.id}`, undefined, { token: alice.token })).status).toBe(404);
    expect((await call('PUT', '/db/tables/closed/rls', { enabled: false, policies: {} }, svc())).status).toBe(200);
    expect((await call('GET', `/db/tables/closed/rows/${row.body.id}`)).status).toBe(200);
  });
});

describe('policy expressions', () => {
  beforeAll(async () => {
    const r = await call(
      'POST',
      '/db/tables',
      { name: 'docs', type: 'relational', columns: [{ name: 'owner', type: 'uuid' }, { name: 'level', type: 'int8' }, { name: 'meta', type: 'jsonb' }] },
      svc(),
    );
    expect(r.status).toBe(201);
  });

  // Each policy is evaluated for three callers over the same five rows, through the rows API
  // and through POST /db/query (the same RLS-filtered rows); the tags are what each caller sees.
  const ROWS = () => [
    { tag: 'a1', owner: alice.id, level: 1, meta: { k: 'v', a: { b: 'xy' } } },
    { tag: 'b2', owner: bob.id, level: 2, meta: { k: 'w', a: { b: 'yx' } } },
    { tag: 'b5', owner: bob.id, level: 5, meta: { k: 'v', a: { b: 'x' }, acl: { reader: 'alice@example.com' } } },
    { tag: 'n99', owner: null, level: 99, meta: null },
    { tag: 'a0', owner: alice.id, level: 0, meta: { a: { b: 'xz' }, acl: { reader: 'bob@example.com' } } },
  ];
  const ALL = ['a0', 'a1', 'b2', 'b5', 'n99'];

  it.each([
    ['owner = auth.uid() OR level >= 5', 'own rows or a public level', { alice: ['a0', 'a1', 'b5', 'n99'], bob: ['b2', 'b5', 'n99'], anon: ['b5', 'n99'] }],
    ["auth.role() = 'authenticated' AND NOT (level IS NULL)", 'role and NOT/IS NULL', { alice: ALL, bob: ALL, anon: [] }],
    ["auth.jwt() ->> 'sub' = owner", 'the sub claim', { alice: ['a0', 'a1'], bob: ['b2', 'b5'], anon: [] }],
    ["auth.jwt() ->> 'email' = 'alice@example.com'", 'the email claim', { alice: ALL, bob: [], anon: [] }],
    ["auth.jwt() ->> 'email' IN ('bob@example.com', 'carol@example.com')", 'a claim IN a list', { alice: [], bob: ALL, anon: [] }],
    ["level IN (1, 2, 3) AND meta->>'k' = 'v'", 'IN list and JSON path', { alice: ['a1'], bob: ['a1'], anon: ['a1'] }],
    ["level NOT IN (0, 99) AND owner = auth.uid()", 'NOT IN and the user', { alice: ['a1'], bob: ['b2', 'b5'], anon: [] }],
    ["owner IS NOT NULL AND level <> 0 AND level != 99 AND (level < 10 OR level > 100)", 'comparisons', { alice: ['a1', 'b2', 'b5'], bob: ['a1', 'b2', 'b5'], anon: ['a1', 'b2', 'b5'] }],
    ["meta->'a'->>'b' LIKE 'x%' AND owner = auth.uid()", 'nested JSON path, LIKE and the user', { alice: ['a0', 'a1'], bob: ['b5'], anon: [] }],
    ["meta->'acl'->>'reader' = auth.jwt() ->> 'email'", 'a nested JSON path against a claim', { alice: ['b5'], bob: ['a0'], anon: [] }],
  ])('%s (%s): each caller sees exactly its rows, through the rows API and raw SQL', async (expr, _what, sees) => {
    const t = `pol_${Math.random().toString(36).slice(2, 10)}`;
    const made = await call('POST', '/db/tables', { name: t, type: 'relational', columns: [{ name: 'tag', type: 'text' }, { name: 'owner', type: 'uuid', nullable: true }, { name: 'level', type: 'int8' }, { name: 'meta', type: 'jsonb', nullable: true }] }, svc());
    expect(made.status, made.text).toBe(201);
    for (const data of ROWS()) expect((await call('POST', `/db/tables/${t}/rows`, { data }, svc())).status).toBe(201);
    const put = await call('PUT', `/db/tables/${t}/rls`, { enabled: true, policies: { select: expr } }, svc());
    expect(put.status, put.text).toBe(200);
    const callers: Record<'alice' | 'bob' | 'anon', Caller> = { alice: { token: alice.token }, bob: { token: bob.token }, anon: {} };
    for (const [name, who] of Object.entries(callers) as ['alice' | 'bob' | 'anon', Caller][]) {
      const list = await call('GET', `/db/tables/${t}/rows?order=tag.asc&count=exact`, undefined, who);
      expect(list.status, list.text).toBe(200);
      expect(list.body.rows.map((r: { data: { tag: string } }) => r.data.tag), `${name} rows API`).toEqual(sees[name]);
      expect(list.body.total, `${name} total`).toBe(sees[name].length);
      const sql = await call('POST', '/db/query', { sql: `select tag from ${t} order by tag` }, who);
      expect(sql.status, sql.text).toBe(200);
      expect(sql.body.rows.map((r: { tag: string }) => r.tag), `${name} raw SQL`).toEqual(sees[name]);
    }
    // the service role sees every row
    expect((await call('GET', `/db/tables/${t}/rows?order=tag.asc`, undefined, svc())).body.rows.map((r: { data: { tag: string } }) => r.data.tag)).toEqual(ALL);
  });

  it('policies are evaluated with the caller: level/owner policy', async () => {
    expect((await call('PUT', '/db/tables/docs/rls', { enabled: true, policies: { select: 'owner = auth.uid() OR level >= 5' } }, svc())).status).toBe(200);
    await call('POST', '/db/tables/docs/rows', { data: { owner: alice.id, level: 1 } }, svc());
    await call('POST', '/db/tables/docs/rows', { data: { owner: bob.id, level: 1 } }, svc());
    await call('POST', '/db/tables/docs/rows', { data: { owner: bob.id, level: 7 } }, svc());
    const a = await call('GET', '/db/tables/docs/rows?order=level', undefined, { token: alice.token });
    expect(a.body.rows.map((r: { data: { level: number } }) => r.data.level)).toEqual([1, 7]);
    const anon = await call('GET', '/db/tables/docs/rows');
    expect(anon.body.rows.map((r: { data: { level: number } }) => r.data.level)).toEqual([7]);
    expect((await call('PUT', '/db/tables/docs/rls', { enabled: true, policies: { select: "auth.role() = 'anon'" } }, svc())).status).toBe(200);
    expect((await call('GET', '/db/tables/docs/rows?order=level')).body.rows.map((r: { data: { level: number } }) => r.data.level)).toEqual([1, 1, 7]);
    expect((await call('GET', '/db/tables/docs/rows', undefined, { token: alice.token })).body.rows).toEqual([]);
  });

  it.each([
    ['owner = = 1', 'unsupported_sql', 'the expression does not parse as a SQL boolean expression'],
    ['nope = 1', 'invalid_request', 'unknown column "nope"'],
    ['owner = auth.uid(); DROP TABLE docs', 'unsupported_sql', 'the expression must be a single boolean expression'],
    ['level = (SELECT 1)', 'unsupported_sql', 'a subquery in a policy reads a table (FROM …)'],
    ['level = 1 UNION SELECT 1', 'unsupported_sql', 'the expression must be a single boolean expression'],
    ['lower(owner) = 1', 'unsupported_sql', 'function lower is not allowed'],
    ['owner = auth.email()', 'unsupported_sql', "allowed functions: auth.uid(), auth.role(), auth.jwt() ->> 'claim' (or -> 'a' ->> 'b')"],
    ['level::text = 1', 'unsupported_sql', 'casts are not allowed'],
    ["level->>'a' = 'b'", 'unsupported_sql', 'column "level" does not hold JSON, or the path is invalid'],
    ['', 'unsupported_sql', 'the expression is empty'],
    ['owner', 'unsupported_sql', 'unsupported boolean expression (column_ref)'],
    ['level = $1', 'unsupported_sql', 'placeholders are not allowed: write the value, or auth.uid(), auth.role(), auth.jwt()'],
  ])('%s → 400 %s, previous policy kept', async (expr, code, message) => {
    const before = await call('GET', '/db/tables/docs/rls');
    const r = await call('PUT', '/db/tables/docs/rls', { enabled: true, policies: { select: expr } }, svc());
    expect(r.status).toBe(400);
    expect(r.body.error).toEqual({ code, message: `policies.select: ${message}` });
    expect((await call('GET', '/db/tables/docs/rls')).body).toEqual(before.body);
  });

  it('RLS writes need the service role; bad bodies are 400', async () => {
    expect((await call('PUT', '/db/tables/docs/rls', { enabled: false })).status).toBe(403);
    expect((await call('PUT', '/db/tables/docs/rls', { enabled: 'yes' }, svc())).status).toBe(400);
    expect((await call('PUT', '/db/tables/docs/rls', { enabled: true, policies: { merge: 'true' } }, svc())).status).toBe(400);
    expect((await call('PUT', '/db/tables/nope/rls', { enabled: true }, svc())).status).toBe(404);
  });
});

describe('profiles', () => {
  it('a user reads and updates their own row only', async () => {
    const own = await call('GET', `/db/tables/profiles/rows/${alice.id}`, undefined, { token: alice.token });
    expect(own.status, own.text).toBe(200);
    expect(own.body.id).toBe(alice.id);
    expect((await call('GET', `/db/tables/profiles/rows/${bob.id}`, undefined, { token: alice.token })).status).toBe(404);
    const l = await call('GET', '/db/tables/profiles/rows', undefined, { token: alice.token });
    expect(l.body.rows.map((r: { id: string }) => r.id)).toEqual([alice.id]);
    expect((await call('GET', '/db/tables/profiles/rows')).body.rows).toEqual([]);
    const u = await call('PATCH', `/db/tables/profiles/rows/${alice.id}`, { data: { name: 'Alice' } }, { token: alice.token });
    expect(u.status, u.text).toBe(200);
    expect(u.body.data.name).toBe('Alice');
    expect((await call('PATCH', `/db/tables/profiles/rows/${bob.id}`, { data: { name: 'x' } }, { token: alice.token })).status).toBe(404);
    expect((await call('DELETE', `/db/tables/profiles/rows/${alice.id}`, undefined, { token: alice.token })).status).toBe(403);
    expect((await call('GET', '/db/tables/profiles/rows', undefined, svc())).body.rows.map((r: { id: string }) => r.id).sort()).toEqual([alice.id, bob.id].sort());
  });

  it('profiles RLS is readable and its policies are the defaults', async () => {
    const r = await call('GET', '/db/tables/profiles/rls');
    expect(combined(r.body)).toEqual({ table: 'profiles', enabled: true, policies: { select: 'id = auth.uid()', update: 'id = auth.uid()' } });
  });
});

describe('CREATE POLICY through POST /db/query', () => {
  const sql = (text: string, who: Caller = svc()) => call('POST', '/db/query', { sql: text }, who);
  const rls = async (t: string) => (await call('GET', `/db/tables/${t}/rls`, undefined, svc())).body;
  const titles = (r: { body: { rows: { data: { task: string } }[] } }) => r.body.rows.map((x) => x.data.task).sort();

  it('runs a Supabase-style migration: table, RLS switch and policies in one script, enforced for each caller', async () => {
    const r = await sql(`
      create table notes_rls (id bigint generated by default as identity primary key, user_id uuid not null, task text);
      alter table notes_rls enable row level security;
      create policy "Own notes are visible" on public.notes_rls for select to authenticated using ((select auth.uid()) = user_id);
      create policy "Own notes can be added" on notes_rls for insert with check (auth.uid() = user_id);
      create policy upd on notes_rls for update using (auth.uid() = user_id) with check (auth.uid()  =  user_id);
      create policy del on notes_rls as permissive for delete to public using (auth.uid() = user_id)`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.results.map((x: { command: string }) => x.command)).toEqual(['CREATE TABLE', 'ALTER TABLE', 'CREATE POLICY', 'CREATE POLICY', 'CREATE POLICY', 'CREATE POLICY']);
    expect(combined(await rls('notes_rls'))).toEqual({
      table: 'notes_rls',
      enabled: true,
      policies: {
        select: "auth.role() IN ('authenticated') AND ((select auth.uid()) = user_id)",
        insert: 'auth.uid() = user_id',
        update: 'auth.uid() = user_id',
        delete: 'auth.uid() = user_id',
      },
    });
    const mine = await call('POST', '/db/tables/notes_rls/rows', { data: { user_id: alice.id, task: 'alice 1' } }, { token: alice.token });
    expect(mine.status, mine.text).toBe(201);
    const forged = await call('POST', '/db/tables/notes_rls/rows', { data: { user_id: bob.id, task: 'forged' } }, { token: alice.token });
    expect(forged.status).toBe(403);
    expect(forged.body.error.code).toBe('rls_denied');
    expect((await call('POST', '/db/tables/notes_rls/rows', { data: { user_id: bob.id, task: 'bob 1' } }, { token: bob.token })).status).toBe(201);
    expect(titles(await call('GET', '/db/tables/notes_rls/rows', undefined, { token: alice.token }))).toEqual(['alice 1']);
    expect(titles(await call('GET', '/db/tables/notes_rls/rows', undefined, { token: bob.token }))).toEqual(['bob 1']);
    // note: the select policy is TO authenticated: an anonymous caller sees nothing.
    expect((await call('GET', '/db/tables/notes_rls/rows')).body.rows).toEqual([]);
    const viaSql = await call('POST', '/db/query', { sql: 'select task from notes_rls order by task' }, { token: alice.token });
    expect(viaSql.body.rows).toEqual([{ task: 'alice 1' }]);
    const bobs = (await call('GET', '/db/tables/notes_rls/rows', undefined, { token: bob.token })).body.rows[0].id;
    expect((await call('PATCH', `/db/tables/notes_rls/rows/${bobs}`, { data: { task: 'x' } }, { token: alice.token })).status).toBe(404);
    expect((await call('DELETE', `/db/tables/notes_rls/rows/${bobs}`, undefined, { token: bob.token })).status).toBe(204);
  });

  it('ORs a further policy for the same command into the one there, as Postgres combines permissive policies', async () => {
    const r = await sql(`create policy "Public notes" on notes_rls for select using (task = 'shared')`);
    expect(r.status, r.text).toBe(200);
    expect((await rls('notes_rls')).policies.select).toBe("(auth.role() IN ('authenticated') AND ((select auth.uid()) = user_id)) OR (task = 'shared')");
    expect((await call('POST', '/db/tables/notes_rls/rows', { data: { user_id: alice.id, task: 'shared' } }, { token: alice.token })).status).toBe(201);
    expect(titles(await call('GET', '/db/tables/notes_rls/rows', undefined, { token: bob.token }))).toEqual(['shared']);
    expect(titles(await call('GET', '/db/tables/notes_rls/rows'))).toEqual(['shared']);
    // FOR ALL (the default) adds to every command; without WITH CHECK, inserts take USING
    expect((await sql(`create table open_rls (id serial primary key, task text); create policy everyone on open_rls using (true)`)).status).toBe(200);
    expect(combined(await rls('open_rls'))).toEqual({ table: 'open_rls', enabled: false, policies: { select: 'true', insert: 'true', update: 'true', delete: 'true' } });
  });

  it('refuses what the rows API cannot hold, naming it, and changes nothing', async () => {
    const before = await rls('notes_rls');
    const cases: Array<[string, number, string, RegExp]> = [
      [`create policy p on notes_rls for select to admin using (true)`, 400, 'unsupported_sql', /role "admin"/],
      [`create policy p on notes_rls for select using (exists (select 1 from notes_rls, generate_series(1, 2)))`, 400, 'unsupported_sql', /policy "p" \(select\)/],
      [`create policy p on notes_rls for select using (no_such_column = 1)`, 400, 'invalid_request', /unknown column "no_such_column"/],
      [`create policy p on notes_rls for select with check (true)`, 400, 'invalid_request', /WITH CHECK cannot be applied to SELECT or DELETE/],
      [`create policy p on notes_rls for insert using (true)`, 400, 'invalid_request', /only WITH CHECK expression allowed for INSERT/],
      [`create policy p on no_such_table using (true)`, 400, 'invalid_request', /does not exist/],
      [`create table sql_only_rls (a int primary key); create policy p on sql_only_rls using (true)`, 400, 'invalid_request', /GET \/db\/tables/],
      [`create policy on notes_rls using (true)`, 400, 'unsupported_sql', /syntax error at or near "on"/],
      [`create policy p on notes_rls using (true`, 400, 'unsupported_sql', /syntax error at end of input/],
      [`create policy p on notes_rls using (true) extra`, 400, 'unsupported_sql', /syntax error at or near "extra"/],
      [`create policy p on other.notes_rls using (true)`, 400, 'unsupported_sql', /outside the public schema/],
      [`drop policy p on notes_rls`, 400, 'invalid_request', /policy "p" for table "notes_rls" does not exist/],
      [`insert into notes_rls (user_id, task) values ('${alice.id}', 'half'); create policy p on notes_rls using (nope = 1)`, 400, 'invalid_request', /unknown column/],
    ];
    for (const [text, status, code, message] of cases) {
      const r = await sql(text);
      expect(r.status, `${text}: ${r.text}`).toBe(status);
      expect(r.body.error.code, text).toBe(code);
      expect(r.body.error.message, text).toMatch(message);
    }
    expect(await rls('notes_rls')).toEqual(before);
    expect((await call('GET', '/db/tables', undefined, svc())).body.tables.map((t: { name: string }) => t.name)).not.toContain('sql_only_rls');
    const half = await call('POST', '/db/query', { sql: `select count(*) as n from notes_rls where task = 'half'` }, svc());
    expect(half.body.rows).toEqual([{ n: 0 }]);
    // writes need the service role
    const anon = await sql(`create policy p on notes_rls using (true)`, {});
    expect(anon.status).toBe(401);
    expect(anon.body.error.code).toBe('missing_scope');
    expect(await rls('notes_rls')).toEqual(before);
  });
});

describe('unique keys under RLS', () => {
  it('a row the insert policy refuses is 403 even when a unique key would refuse it too: a 409 would tell that another user\'s row holds the key', async () => {
    const sql = (text: string) => call('POST', '/db/query', { sql: text }, svc());
    const made = await sql(`create table room_members (id uuid primary key default gen_random_uuid(), room_id text not null, user_id uuid not null, unique (room_id, user_id));
      alter table room_members enable row level security;
      create policy "join as yourself" on room_members for insert with check (user_id = auth.uid());
      create policy "see own" on room_members for select using (user_id = auth.uid())`);
    expect(made.status, made.text).toBe(200);
    const mine = await call('POST', '/db/tables/room_members/rows', { data: { room_id: 'secret', user_id: alice.id } }, { token: alice.token });
    expect(mine.status, mine.text).toBe(201);
    // bob names alice in a row whose key alice's row already holds: refused by the policy, nothing said of the key
    const forged = await call('POST', '/db/tables/room_members/rows', { data: { room_id: 'secret', user_id: alice.id } }, { token: bob.token });
    expect(forged.status, forged.text).toBe(403);
    expect(forged.body.error.code).toBe('rls_denied');
    expect(forged.text).not.toContain('secret');
    // a row the policy accepts still meets the unique key: alice joining twice is 409
    const again = await call('POST', '/db/tables/room_members/rows', { data: { room_id: 'secret', user_id: alice.id } }, { token: alice.token });
    expect(again.status, again.text).toBe(409);
    expect((await sql(`select count(*)::int as n from room_members`)).body.rows).toEqual([{ n: 1 }]);
  });
});

describe('foreign keys to auth.users (Supabase) and to a primary key named by its table alone', () => {
  const sql = (text: string) => call('POST', '/db/query', { sql: text }, svc());
  const columns = async (t: string) =>
    ((await call('GET', '/db/tables', undefined, svc())).body.tables as { name: string; columns: { name: string; references: unknown }[] }[]).find((x) => x.name === t)!.columns;

  it('a key to auth.users is a key to the user (their profiles row): checked on write, and deleting the user follows ON DELETE', async () => {
    const r = await sql(`
      create table owned_notes (id bigint generated by default as identity primary key, user_id uuid references auth.users not null, note text default 'references auth.users');
      create table user_pins (id serial primary key, owner uuid, pin text, foreign key (owner) references auth.users(id) on delete cascade)`);
    expect(r.status, r.text).toBe(200);
    expect((await columns('owned_notes')).find((c) => c.name === 'user_id')!.references).toEqual({ table: 'profiles', column: 'id', on_delete: 'no action' });
    expect((await columns('user_pins')).find((c) => c.name === 'owner')!.references).toEqual({ table: 'profiles', column: 'id', on_delete: 'cascade' });
    const carol = await register('carol@example.com');
    const ins = await sql(`insert into owned_notes (user_id) values ('${carol.id}') returning note`);
    expect(ins.body.rows).toEqual([{ note: 'references auth.users' }]);
    // GraphQL nests the user's profile through the key
    const g = await call('POST', '/db/graphql', { query: '{ owned_notes { user_id user { id } } }' }, svc());
    expect(g.body, g.text).toEqual({ data: { owned_notes: [{ user_id: carol.id, user: { id: carol.id } }] } });
    expect((await sql(`insert into user_pins (owner, pin) values ('${carol.id}', 'a'), ('${alice.id}', 'b')`)).status).toBe(200);
    const stranger = await sql(`insert into owned_notes (user_id) values ('00000000-0000-4000-8000-000000000000')`);
    expect(stranger.status).toBe(409);
    expect(stranger.body.error.code).toBe('conflict');
    // a NO ACTION key blocks deleting the user, as in Postgres (and Supabase), and nothing is deleted
    const blocked = await call('DELETE', `/auth/users/${carol.id}`, undefined, svc());
    expect(blocked.status).toBe(409);
    expect((await call('GET', `/db/tables/profiles/rows/${carol.id}`, undefined, svc())).status).toBe(200);
    expect((await sql(`delete from owned_notes where user_id = '${carol.id}'`)).status).toBe(200);
    expect((await call('DELETE', `/auth/users/${carol.id}`, undefined, svc())).status).toBe(204);
    // ON DELETE CASCADE removed carol's pins, not alice's
    expect((await sql(`select pin from user_pins order by pin`)).body.rows).toEqual([{ pin: 'b' }]);
  });

  it("REFERENCES t without columns is t's primary key; a missing table or one without a key is a 400 and nothing is made", async () => {
    expect((await sql(`create table shelves (code text primary key, label text); create table shelved (id serial primary key, shelf text references shelves on delete set null)`)).status).toBe(200);
    expect((await columns('shelved')).find((c) => c.name === 'shelf')!.references).toEqual({ table: 'shelves', column: 'code', on_delete: 'set null' });
    expect((await sql(`insert into shelves values ('A1', 'top'); insert into shelved (shelf) values ('A1')`)).status).toBe(200);
    expect((await sql(`insert into shelved (shelf) values ('Z9')`)).status).toBe(409);
    const missing = await sql(`create table dangling (id serial primary key, x int references no_such_table)`);
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toBe('relation "no_such_table" does not exist');
    const keyless = await sql(`create table keyless (a int); create table to_keyless (id serial primary key, a int references keyless)`);
    expect(keyless.status).toBe(400);
    expect(keyless.body.error.message).toBe('there is no primary key for referenced table "keyless"');
    const tables = (await sql(`select name from sqlite_master where name in ('dangling', 'keyless', 'to_keyless')`)).status;
    expect(tables).toBe(400);
    const listed = ((await call('GET', '/db/tables', undefined, svc())).body.tables as { name: string }[]).map((t) => t.name);
    for (const n of ['dangling', 'keyless', 'to_keyless']) expect(listed).not.toContain(n);
    expect((await sql(`select * from keyless`)).status).toBe(400);
    // a self-reference names the table being created
    expect((await sql(`create table tree (id serial primary key, parent int references tree)`)).status).toBe(200);
  });
});

describe('auth.uid(), auth.role() and auth.jwt() in raw SQL', () => {
  const who = `select auth.uid() as uid, auth.role() as role, auth.jwt() ->> 'sub' as sub, auth.jwt() ->> 'role' as claim`;

  it('are the caller of each request, though the translation is cached by the SQL text', async () => {
    const as = async (caller: Caller) => {
      const r = await call('POST', '/db/query', { sql: who }, caller);
      expect(r.status, r.text).toBe(200);
      return r.body.rows[0];
    };
    expect(await as({ token: alice.token })).toEqual({ uid: alice.id, role: 'authenticated', sub: alice.id, claim: 'authenticated' });
    expect(await as({ token: bob.token })).toEqual({ uid: bob.id, role: 'authenticated', sub: bob.id, claim: 'authenticated' });
    expect(await as({})).toEqual({ uid: null, role: 'anon', sub: null, claim: 'anon' });
    expect(await as(svc())).toEqual({ uid: null, role: 'service_role', sub: null, claim: 'service_role' });
  });

  it('filter like any value, also in a point lookup answered on the main thread', async () => {
    const made = await call('POST', '/db/query', { sql: `create table diary (id serial primary key, owner uuid, line text); insert into diary (owner, line) values ('${alice.id}', 'a1'), ('${bob.id}', 'b1')` }, svc());
    expect(made.status, made.text).toBe(200);
    const mine = `select line from diary where owner = auth.uid() order by line`;
    expect((await call('POST', '/db/query', { sql: mine }, { token: alice.token })).body.rows).toEqual([{ line: 'a1' }]);
    expect((await call('POST', '/db/query', { sql: mine }, { token: bob.token })).body.rows).toEqual([{ line: 'b1' }]);
    expect((await call('POST', '/db/query', { sql: mine }, {})).body.rows).toEqual([]);
    // note: a key lookup with auth.uid() is a point lookup (run inline); each caller gets their own answer
    const point = `select line from diary where id = $1 and owner = auth.uid()`;
    for (const [caller, expected] of [[alice, [{ line: 'a1' }]], [bob, []], [alice, [{ line: 'a1' }]]] as const) {
      const r = await call('POST', '/db/query', { sql: point, params: [1] }, { token: caller.token });
      expect(r.body.rows).toEqual(expected);
    }
    const expr = `select line, owner = auth.uid() as mine from diary where id = $1`;
    expect((await call('POST', '/db/query', { sql: expr, params: [1] }, { token: bob.token })).body.rows).toEqual([{ line: 'a1', mine: false }]);
  });

  it('are refused where they cannot mean the caller, and unknown auth functions are named', async () => {
    // note: a column's DEFAULT may name the caller (db-caller-default.test.ts); a CHECK cannot.
    const d = await call('POST', '/db/query', { sql: `create table stamped (id serial primary key, owner uuid check (owner = auth.uid()))` }, svc());
    expect(d.status).toBe(400);
    expect(d.body.error.code).toBe('unsupported_sql');
    expect(d.body.error.message).toContain('auth.uid() in DDL other than a column\'s DEFAULT');
    const e = await call('POST', '/db/query', { sql: `select auth.email()` }, svc());
    expect(e.body.error.code).toBe('unsupported_sql');
    expect(e.body.error.details.construct).toContain('auth.email');
    const f = await call('POST', '/db/query', { sql: `select auth.uid(1)` }, svc());
    expect(f.status).toBe(400);
    expect(f.body.error.code).toBe('invalid_request');
  });
});
