import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { openEventSource, restartTestServer } from '../helpers/realtime.js';

// Named policies (docs/sql.md "Policies", docs/api.md "Row-level security"): the multi-tenant
// organisation pattern made by SQL, used as two users on every path.

let s: TestServer;

interface Caller {
  key?: string | null;
  token?: string;
}
async function call(method: string, path: string, body?: unknown, who: Caller = {}, contentType = 'application/json') {
  const headers: Record<string, string> = body === undefined ? {} : { 'content-type': contentType };
  if (who.token) headers.authorization = `Bearer ${who.token}`;
  const res = await s.req(path, { method, key: who.key, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
const svc = (): Caller => ({ key: s.keys.service });
const sql = (text: string, who: Caller = svc()) => call('POST', '/db/query', { sql: text }, who);

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
const ORG_A = '00000000-0000-4000-8000-00000000000a';
const ORG_B = '00000000-0000-4000-8000-00000000000b';
const as = (u: User): Caller => ({ token: u.token });
/** Titles of rows-API rows (`{id, data: {…}}`) or of GraphQL/SQL rows (columns as fields). */
const titles = (rows: Array<{ title?: string; data?: { title: string } }>) => rows.map((r) => r.data?.title ?? r.title).sort();
const list = async (u: User, q = '') => (await call('GET', `/db/tables/projects/rows?count=exact${q}`, undefined, as(u))).body as { rows: Array<{ id: string; data: { title: string } }>; total: number };

beforeAll(async () => {
  s = await startTestServer();
  alice = await register('alice@example.com');
  bob = await register('bob@example.com');
  const r = await sql(`
    create table orgs (id uuid primary key default gen_random_uuid(), name text not null);
    create table members (id uuid primary key default gen_random_uuid(), org_id uuid not null references orgs (id), user_id uuid not null, role text not null default 'member');
    create table projects (id uuid primary key default gen_random_uuid(), org_id uuid not null references orgs (id), title text not null);
    alter table orgs enable row level security;
    alter table members enable row level security;
    alter table projects enable row level security;
    create policy "own memberships" on members for select to authenticated using (user_id = (select auth.uid()));
    create policy "orgs of mine" on orgs for select using (id in (select org_id from members where user_id = auth.uid()));
    create policy "members read" on projects for select using (exists (select 1 from members m where m.org_id = projects.org_id and m.user_id = auth.uid()));
    create policy "members write" on projects for insert to authenticated with check (exists (select 1 from public.members m where m.org_id = projects.org_id and m.user_id = auth.uid()));
    create policy "admins update" on projects for update using (exists (select 1 from members m where m.org_id = projects.org_id and m.user_id = auth.uid() and m.role = 'admin'));
    create policy "admins delete" on projects for delete using (auth.jwt() -> 'app_metadata' ->> 'role' = 'admin' or exists (select 1 from members m where m.org_id = projects.org_id and m.user_id = auth.uid() and m.role = 'admin'));
    insert into orgs (id, name) values ('${ORG_A}', 'A'), ('${ORG_B}', 'B');
    insert into members (org_id, user_id, role) values ('${ORG_A}', '${alice.id}', 'admin'), ('${ORG_B}', '${bob.id}', 'member');
    insert into projects (org_id, title) values ('${ORG_A}', 'a1'), ('${ORG_A}', 'a2'), ('${ORG_B}', 'b1');`);
  expect(r.status, r.text).toBe(200);
});
afterAll(() => s.close());

describe('the organisation pattern: policies that read other tables, as the caller', () => {
  it('rows API: list, count and get show each user their organisations rows only', async () => {
    const a = await list(alice);
    expect(titles(a.rows)).toEqual(['a1', 'a2']);
    expect(a.total).toBe(2);
    const b = await list(bob);
    expect(titles(b.rows)).toEqual(['b1']);
    expect(b.total).toBe(1);
    expect((await list({ id: '', token: '' })).rows).toEqual([]);
    const b1 = b.rows[0]!.id;
    expect((await call('GET', `/db/tables/projects/rows/${b1}`, undefined, as(alice))).status).toBe(404);
    expect((await call('GET', `/db/tables/projects/rows/${b1}`, undefined, as(bob))).body.data.title).toBe('b1');
    // the subquery of orgs' policy reads members under members' own policy
    expect((await call('GET', '/db/tables/orgs/rows', undefined, as(alice))).body.rows.map((o: { data: { name: string } }) => o.data.name)).toEqual(['A']);
    expect((await call('GET', '/db/tables/members/rows', undefined, as(bob))).body.rows.map((m: { data: { user_id: string } }) => m.data.user_id)).toEqual([bob.id]);
  });

  it('rows API writes: insert and import need membership, update and delete need the admin role', async () => {
    const ok = await call('POST', '/db/tables/projects/rows', { data: { org_id: ORG_A, title: 'a3' } }, as(alice));
    expect(ok.status, ok.text).toBe(201);
    const forged = await call('POST', '/db/tables/projects/rows', { data: { org_id: ORG_B, title: 'forged' } }, as(alice));
    expect(forged.status).toBe(403);
    expect(forged.body.error.code).toBe('rls_denied');
    const imp = await call('POST', '/db/tables/projects/import', `{"data":{"org_id":"${ORG_B}","title":"b2"}}\n`, as(bob), 'application/x-ndjson');
    expect(imp.status, imp.text).toBe(200);
    const impBad = await call('POST', '/db/tables/projects/import', `{"data":{"org_id":"${ORG_A}","title":"sneak"}}\n`, as(bob), 'application/x-ndjson');
    expect(impBad.status).toBe(403);
    const a1 = (await list(alice, '&filter=title.eq.a1')).rows[0]!.id;
    const b1 = (await list(bob, '&filter=title.eq.b1')).rows[0]!.id;
    expect((await call('PATCH', `/db/tables/projects/rows/${a1}`, { data: { title: 'a1!' } }, as(alice))).status).toBe(200);
    expect((await call('PATCH', `/db/tables/projects/rows/${a1}`, { data: { title: 'x' } }, as(bob))).status).toBe(404);
    const notAdmin = await call('PATCH', `/db/tables/projects/rows/${b1}`, { data: { title: 'x' } }, as(bob));
    expect(notAdmin.status).toBe(403);
    expect((await call('DELETE', `/db/tables/projects/rows/${b1}`, undefined, as(bob))).status).toBe(403);
    const a3 = (await list(alice, '&filter=title.eq.a3')).rows[0]!.id;
    expect((await call('DELETE', `/db/tables/projects/rows/${a3}`, undefined, as(alice))).status).toBe(204);
    const all = await sql('select title from projects order by title');
    expect(all.body.rows.map((r: { title: string }) => r.title)).toEqual(['a1!', 'a2', 'b1', 'b2']);
  });

  it('/db/query, JSON-RPC and GraphQL (nested too) see what the rows API shows', async () => {
    const q = await sql('select p.title, o.name from projects p join orgs o on o.id = p.org_id order by p.title', as(alice));
    expect(q.status, q.text).toBe(200);
    expect(q.body.rows).toEqual([
      { title: 'a1!', name: 'A' },
      { title: 'a2', name: 'A' },
    ]);
    const sub = await sql(`select count(*) as n from projects where org_id in (select id from orgs)`, as(bob));
    expect(sub.body.rows).toEqual([{ n: 2 }]);
    const rpc = await call('POST', '/db/rpc', [
      { jsonrpc: '2.0', id: 1, method: 'db.list', params: { table: 'projects', order: 'title.asc' } },
      { jsonrpc: '2.0', id: 2, method: 'db.query', params: { sql: 'select title from projects order by title' } },
    ], as(bob));
    expect(rpc.status, rpc.text).toBe(200);
    expect(titles(rpc.body[0].result.rows)).toEqual(['b1', 'b2']);
    expect(rpc.body[1].result.rows).toEqual([{ title: 'b1' }, { title: 'b2' }]);
    const g = await call('POST', '/db/graphql', { query: '{ orgs { name projects { title } } }' }, as(alice));
    expect(g.status, g.text).toBe(200);
    expect(g.body.data.orgs).toHaveLength(1);
    expect(g.body.data.orgs[0].name).toBe('A');
    expect(titles(g.body.data.orgs[0].projects)).toEqual(['a1!', 'a2']);
    const gb = await call('POST', '/db/graphql', { query: '{ projects { title } }' }, as(bob));
    expect(titles(gb.body.data.projects)).toEqual(['b1', 'b2']);
  });

  it('realtime: a change reaches the users whose policy subquery sees the row', async () => {
    const base = `${s.url}/realtime/stream?table=projects&apikey=${s.keys.publishable}`;
    const ea = openEventSource(`${base}&access_token=${alice.token}`);
    const eb = openEventSource(`${base}&access_token=${bob.token}`);
    try {
      await ea.next((m) => m.event === 'ready');
      await eb.next((m) => m.event === 'ready');
      expect((await sql(`insert into projects (org_id, title) values ('${ORG_B}', 'b-live'), ('${ORG_A}', 'a-live')`)).status).toBe(200);
      const ma = await ea.next((m) => m.event === 'change');
      const mb = await eb.next((m) => m.event === 'change');
      expect((ma.data.data as { title: string }).title).toBe('a-live');
      expect((mb.data.data as { title: string }).title).toBe('b-live');
      // each saw one change of the two: the other organisation's never reached them
      expect((await ea.quiet(300)).filter((m) => m.event === 'change')).toEqual([]);
      expect((await eb.quiet(0)).filter((m) => m.event === 'change')).toEqual([]);
    } finally {
      ea.close();
      eb.close();
    }
  });

  it('a change of membership applies at once: the policy reads members at each request', async () => {
    expect((await sql(`insert into members (org_id, user_id) values ('${ORG_B}', '${alice.id}')`)).status).toBe(200);
    expect(titles((await list(alice)).rows)).toContain('b1');
    expect((await sql(`delete from members where org_id = '${ORG_B}' and user_id = '${alice.id}'`)).status).toBe(200);
    expect(titles((await list(alice)).rows)).not.toContain('b1');
  });
});

describe('auth.jwt() paths', () => {
  it("a claim path: `auth.jwt() -> 'app_metadata' ->> 'role'` reads the token's app_metadata, set by an administrator", async () => {
    const made = await sql(`insert into projects (org_id, title) values ('${ORG_B}', 'b-del') returning id`);
    const id = made.body.rows[0].id as string;
    expect((await call('DELETE', `/db/tables/projects/rows/${id}`, undefined, as(bob))).status).toBe(403);
    expect((await call('PATCH', `/auth/users/${bob.id}`, { app_metadata: { role: 'admin' } }, svc())).status).toBe(200);
    const login = await call('POST', '/auth/login', { email: 'bob@example.com', password: 'correct horse battery staple 1' });
    expect(login.status, login.text).toBe(200);
    const claims = JSON.parse(Buffer.from((login.body.access_token as string).split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
    expect(claims.app_metadata).toEqual({ role: 'admin' });
    expect((await call('DELETE', `/db/tables/projects/rows/${id}`, undefined, { token: login.body.access_token })).status).toBe(204);
    // deleted for good (the service role sees it gone)
    expect((await sql(`select count(*) as n from projects where title = 'b-del'`)).body.rows).toEqual([{ n: 0 }]);
  });
});

describe('names, combining, ALTER and DROP', () => {
  const rls = async (t: string) => (await call('GET', `/db/tables/${t}/rls`, undefined, svc())).body;

  it('GET …/rls lists the named policies beside the combined view', async () => {
    const r = await rls('projects');
    expect(r.named.map((p: { name: string }) => p.name)).toEqual(['members read', 'members write', 'admins update', 'admins delete']);
    expect(r.named[1]).toEqual({
      name: 'members write',
      command: 'insert',
      permissive: true,
      roles: ['authenticated'],
      using: null,
      check: 'exists (select 1 from public.members m where m.org_id = projects.org_id and m.user_id = auth.uid())',
    });
    expect(r.policies.select).toBe('exists (select 1 from members m where m.org_id = projects.org_id and m.user_id = auth.uid())');
    // a table RLS was on for before names were kept (profiles' seeded row) lists its policies by operation
    expect((await rls('profiles')).named.map((p: { name: string }) => p.name)).toEqual(['rls_select', 'rls_update']);
  });

  it('permissive policies OR, restrictive ones AND with them', async () => {
    expect((await sql(`create policy "public ones" on projects for select using (title like 'pub%')`)).status).toBe(200);
    expect((await sql(`insert into projects (org_id, title) values ('${ORG_A}', 'pub-a'), ('${ORG_A}', 'pub-archived')`)).status).toBe(200);
    expect(titles((await list(bob)).rows)).toEqual(['b-live', 'b1', 'b2', 'pub-a', 'pub-archived']);
    const r = await sql(`create policy "not archived" on projects as restrictive for select using (title not like '%archived%')`);
    expect(r.status, r.text).toBe(200);
    expect(titles((await list(bob)).rows)).toEqual(['b-live', 'b1', 'b2', 'pub-a']);
    expect(titles((await list(alice)).rows)).not.toContain('pub-archived');
    expect((await rls('projects')).policies.select).toBe(
      "((exists (select 1 from members m where m.org_id = projects.org_id and m.user_id = auth.uid())) OR (title like 'pub%')) AND (title not like '%archived%')",
    );
    // a restrictive policy for some roles leaves the others alone
    expect((await sql(`create policy "anon sees no b" on projects as restrictive for select to anon using (title not like 'b%')`)).status).toBe(200);
    expect(titles((await list(bob)).rows)).toEqual(['b-live', 'b1', 'b2', 'pub-a']);
    expect((await sql(`drop policy "anon sees no b" on projects`)).status).toBe(200);
    // restrictive alone grants nothing
    expect((await sql(`create table r_only (id uuid primary key default gen_random_uuid(), n int); alter table r_only enable row level security; create policy r on r_only as restrictive using (true); insert into r_only (n) values (1)`)).status).toBe(200);
    expect((await call('GET', '/db/tables/r_only/rows', undefined, as(alice))).body.rows).toEqual([]);
  });

  it('CREATE with a name that exists is 42710; DROP of a missing one is 42704, with IF EXISTS nothing', async () => {
    const dup = await sql(`create policy "public ones" on projects for select using (true)`);
    expect(dup.status).toBe(400);
    expect(dup.body.error.message).toBe('policy "public ones" for table "projects" already exists');
    expect(dup.body.error.details.sqlstate).toBe('42710');
    const missing = await sql(`drop policy nope on projects`);
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toBe('policy "nope" for table "projects" does not exist');
    expect(missing.body.error.details.sqlstate).toBe('42704');
    expect((await sql(`drop policy if exists nope on public.projects`)).status).toBe(200);
    const noTable = await sql(`create policy p on no_such_table using (true)`);
    expect(noTable.status).toBe(400);
    expect(noTable.body.error.details.sqlstate).toBe('42P01');
  });

  it('DROP POLICY removes one policy, the others stay', async () => {
    expect((await sql(`drop policy "not archived" on projects; drop policy "public ones" on projects`)).status).toBe(200);
    expect(titles((await list(bob)).rows)).toEqual(['b-live', 'b1', 'b2']);
    expect((await rls('projects')).named.map((p: { name: string }) => p.name)).toEqual(['members read', 'members write', 'admins update', 'admins delete']);
  });

  it('ALTER POLICY renames, changes roles, USING and WITH CHECK', async () => {
    expect((await sql(`alter policy "members read" on projects rename to "read by members"`)).status).toBe(200);
    expect((await rls('projects')).named[0].name).toBe('read by members');
    const clash = await sql(`alter policy "read by members" on projects rename to "admins update"`);
    expect(clash.body.error.details.sqlstate).toBe('42710');
    expect((await sql(`alter policy "read by members" on projects to anon`)).status).toBe(200);
    expect((await list(bob)).rows).toEqual([]);
    expect((await sql(`alter policy "read by members" on projects to authenticated using (org_id in (select org_id from members where user_id = auth.uid()))`)).status).toBe(200);
    expect(titles((await list(bob)).rows)).toEqual(['b-live', 'b1', 'b2']);
    // an update policy whose WITH CHECK differs from its USING: the new row must pass the check
    expect((await sql(`alter policy "admins update" on projects with check (title <> 'banned')`)).status).toBe(200);
    const a2 = (await list(alice, '&filter=title.eq.a2')).rows[0]!.id;
    expect((await call('PATCH', `/db/tables/projects/rows/${a2}`, { data: { title: 'banned' } }, as(alice))).status).toBe(403);
    expect((await call('PATCH', `/db/tables/projects/rows/${a2}`, { data: { title: 'a2!' } }, as(alice))).status).toBe(200);
    const bad = await sql(`alter policy "members write" on projects using (true)`);
    expect(bad.body.error.message).toMatch(/only WITH CHECK expression allowed for INSERT/);
    expect((await sql(`alter policy nope on projects using (true)`)).body.error.details.sqlstate).toBe('42704');
  });

  it('PUT …/rls with `named` replaces all of a table\'s policies', async () => {
    const put = await call('PUT', '/db/tables/orgs/rls', { enabled: true, named: [{ name: 'everyone reads', command: 'select', using: 'true' }, { name: 'no B', command: 'select', permissive: false, using: "name <> 'B'" }] }, svc());
    expect(put.status, put.text).toBe(200);
    expect(put.body.named).toEqual([
      { name: 'everyone reads', command: 'select', permissive: true, roles: ['public'], using: 'true', check: null },
      { name: 'no B', command: 'select', permissive: false, roles: ['public'], using: "name <> 'B'", check: null },
    ]);
    expect((await call('GET', '/db/tables/orgs/rows', undefined, as(bob))).body.rows.map((o: { data: { name: string } }) => o.data.name)).toEqual(['A']);
    const dup = await call('PUT', '/db/tables/orgs/rls', { enabled: true, named: [{ name: 'x', using: 'true' }, { name: 'x', using: 'true' }] }, svc());
    expect(dup.status).toBe(400);
    expect((await rls('orgs')).named.map((p: { name: string }) => p.name)).toEqual(['everyone reads', 'no B']);
  });
});

describe('cycles and bad input', () => {
  it('a policy cycle is 42P17 for callers under RLS, as in Postgres; the service role reads on', async () => {
    const r = await sql(`
      create table t1 (id uuid primary key default gen_random_uuid(), n int);
      create table t2 (id uuid primary key default gen_random_uuid(), n int);
      alter table t1 enable row level security;
      alter table t2 enable row level security;
      create policy a on t1 for select using (exists (select 1 from t2 where t2.n = t1.n));
      create policy b on t2 for select using (n in (select n from t1));
      insert into t1 (n) values (1); insert into t2 (n) values (1)`);
    expect(r.status, r.text).toBe(200);
    for (const [path, body] of [
      ['/db/tables/t1/rows', undefined],
      ['/db/query', { sql: 'select * from t1' }],
    ] as const) {
      const res = await call(body ? 'POST' : 'GET', path, body, as(alice));
      expect(res.status, res.text).toBe(400);
      expect(res.body.error.message).toBe('infinite recursion detected in policy for relation "t1"');
      expect(res.body.error.details.sqlstate).toBe('42P17');
    }
    expect((await call('GET', '/db/tables/t2/rows', undefined, as(alice))).body.error.message).toBe('infinite recursion detected in policy for relation "t2"');
    expect((await call('GET', '/db/tables/t1/rows', undefined, svc())).body.rows).toHaveLength(1);
    // a policy reading its own table recurses too (members reading members, the classic case)
    expect((await sql(`create policy self on t2 for select using (exists (select 1 from t2 x where x.n = 0))`)).status).toBe(200);
    // fixing the cycle: drop one side
    expect((await sql(`drop policy b on t2; drop policy self on t2; create policy b on t2 for select using (true)`)).status).toBe(200);
    expect((await call('GET', '/db/tables/t1/rows', undefined, as(alice))).body.rows).toHaveLength(1);
  });

  it('refuses reserved tables, missing tables and columns, joins, and a deep expression, changing nothing', async () => {
    const before = (await call('GET', '/db/tables/projects/rls', undefined, svc())).body;
    const cases: Array<[string, string, RegExp, string?]> = [
      [`create policy p on projects using (exists (select 1 from _svc_auth.users u where u.id = auth.uid()))`, 'invalid_request', /reserved/],
      [`create policy p on projects using (exists (select 1 from "_svc_meta.rls"))`, 'invalid_request', /reserved/],
      [`create policy p on projects using (exists (select 1 from auth.users))`, 'unsupported_sql', /outside the public schema/],
      [`create policy p on projects using (exists (select 1 from nowhere))`, 'invalid_request', /relation "nowhere" does not exist/, '42P01'],
      [`create policy p on projects using (exists (select 1 from members m where m.nope = 1))`, 'invalid_request', /column m.nope does not exist/, '42703'],
      [`create policy p on projects using (exists (select 1 from members m join orgs o on o.id = m.org_id))`, 'unsupported_sql', /no JOIN/],
      [`create policy p on projects using (org_id in (select org_id, user_id from members))`, 'unsupported_sql', /one column/],
      [`create policy p on projects using (zz.org_id = 1)`, 'invalid_request', /missing FROM-clause entry for table "zz"/],
      [`create policy p on projects using (${'('.repeat(5000)}true${')'.repeat(5000)})`, 'unsupported_sql', /./],
    ];
    for (const [text, code, message, sqlstate] of cases) {
      const r = await sql(text);
      expect(r.status, `${text.slice(0, 80)}: ${r.text.slice(0, 300)}`).toBe(400);
      expect(r.body.error.code, text.slice(0, 80)).toBe(code);
      expect(r.body.error.message, text.slice(0, 80)).toMatch(message);
      if (sqlstate) expect(r.body.error.details.sqlstate).toBe(sqlstate);
    }
    const deep = await call('PUT', '/db/tables/projects/rls', { enabled: true, named: [{ name: 'deep', using: `${'not '.repeat(5000)}true` }] }, svc());
    expect(deep.status).toBe(400);
    expect(deep.body.error.code).toBe('unsupported_sql');
    expect((await call('GET', '/db/tables/projects/rls', undefined, svc())).body).toEqual(before);
  });
});

describe('a project whose policies were written before names were kept', () => {
  it('opens with its policies working, listed per operation, and takes named ones beside them', async () => {
    const own = await startTestServer();
    let t = own;
    try {
      const c = (method: string, path: string, body?: unknown, token?: string) =>
        t.req(path, { method, key: token ? t.keys.publishable : t.keys.service, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: body === undefined ? undefined : JSON.stringify(body) });
      type J = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      const json = async (r: Promise<Response>): Promise<J> => (await (await r).json()) as J;
      const reg = await json(c('POST', '/auth/register', { email: 'old@example.com', password: 'correct horse battery staple 1' }));
      expect((await c('POST', '/db/tables', { name: 'notes', type: 'relational', columns: [{ name: 'owner', type: 'uuid' }, { name: 'body', type: 'text' }] })).status).toBe(201);
      const mine = "owner = auth.uid()";
      expect((await c('PUT', '/db/tables/notes/rls', { enabled: true, policies: { select: mine, insert: mine } })).status).toBe(200);
      // the project file as main's code left it: no `named` column, no 0017 migration recorded
      await t.server.close();
      const db = new Database(join(t.dataDir, 'projects', t.projectId, 'project.db'));
      db.exec(`ALTER TABLE "_svc_meta.rls" DROP COLUMN named; DELETE FROM "_svc_meta.migrations" WHERE version = 17`);
      db.close();
      t = await restartTestServer({ ...t, server: { close: async () => undefined } as unknown as TestServer['server'] });
      const rls = await json(c('GET', '/db/tables/notes/rls'));
      expect(rls.policies).toEqual({ select: mine, insert: mine });
      expect(rls.named.map((p: { name: string }) => p.name)).toEqual(['rls_select', 'rls_insert']);
      expect((await c('POST', '/db/tables/notes/rows', { data: { owner: reg.user.id, body: 'kept' } }, reg.access_token)).status).toBe(201);
      expect((await c('POST', '/db/tables/notes/rows', { data: { owner: null, body: 'forged' } }, reg.access_token)).status).toBe(403);
      const q = await c('POST', '/db/query', { sql: `create policy "shared" on notes for select using (body = 'shared'); insert into notes (owner, body) values (null, 'shared')` });
      expect(q.status, await q.text()).toBe(200);
      const rows = await json(c('GET', '/db/tables/notes/rows?order=body', undefined, reg.access_token));
      expect(rows.rows.map((r: { data: { body: string } }) => r.data.body)).toEqual(['kept', 'shared']);
      expect((await json(c('GET', '/db/tables/notes/rls'))).named.map((p: { name: string }) => p.name)).toEqual(['rls_select', 'rls_insert', 'shared']);
    } finally {
      await t.close();
    }
  });
});
