import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { openEventSource, restartTestServer } from '../helpers/realtime.js';

// LANGUAGE sql functions called in RLS policies (docs/sql.md "Functions in policies"): inlined
// with their arguments; security definer reads without RLS, invoker as the caller; what
// Postgres refuses (a missing function, a non-boolean one, dropping a function a policy uses).

let s: TestServer;

interface User {
  id: string;
  token: string;
}
type Who = User | 'service';
async function call(method: string, path: string, body: unknown, who: Who) {
  const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
  if (who !== 'service') headers.authorization = `Bearer ${who.token}`;
  const key = who === 'service' ? s.keys.service : s.keys.publishable;
  const res = await s.req(path, { method, key, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
const q = (sql: string, who: Who = 'service', params: unknown[] = []) => call('POST', '/db/query', { sql, params }, who);
async function ok(sql: string, who: Who = 'service', params: unknown[] = []): Promise<Record<string, unknown>[]> {
  const r = await q(sql, who, params);
  expect(r.status, `${sql}: ${r.text}`).toBe(200);
  return r.body.rows;
}
/** The error of a refused statement: status 400, its message and SQLSTATE. */
async function refused(sql: string): Promise<{ message: string; details: Record<string, unknown> }> {
  const r = await q(sql);
  expect(r.status, r.text).toBe(400);
  return r.body.error;
}
const names = async (table: string, who: Who) => ((await call('GET', `/db/tables/${table}/rows`, undefined, who)).body.rows as Array<{ data: { name: string } }>).map((r) => r.data.name).sort();

let alice: User;
let bob: User;
async function register(email: string): Promise<User> {
  const r = await call('POST', '/auth/register', { email, password: 'correct horse battery staple 1' }, { id: '', token: '' });
  expect(r.status, r.text).toBe(200);
  return { id: r.body.user.id, token: r.body.access_token };
}
const G1 = '00000000-0000-4000-8000-0000000000a1';
const G2 = '00000000-0000-4000-8000-0000000000a2';

beforeAll(async () => {
  s = await startTestServer();
  alice = await register('alice@example.com');
  bob = await register('bob@example.com');
  // alice is in g1 with bob; bob alone in g2. mem shows each user their own rows only. others_*(g):
  // the caller is in g with someone else.
  await ok(`
    create table grp (id uuid primary key, name text not null);
    create table mem (id uuid primary key default gen_random_uuid(), grp_id uuid not null references grp (id), user_id uuid not null);
    create table notes (id uuid primary key default gen_random_uuid(), grp_id uuid not null references grp (id), name text not null);
    alter table grp enable row level security;
    alter table mem enable row level security;
    alter table notes enable row level security;
    create policy "own rows" on mem for select using (user_id = auth.uid());
    create function others_definer(g uuid) returns boolean language sql stable security definer as $$
      select exists (select 1 from mem where mem.grp_id = g and mem.user_id = auth.uid()) and exists (select 1 from mem b where b.grp_id = g and b.user_id <> auth.uid()) $$;
    create function others_invoker(g uuid) returns boolean language sql stable as $$
      select exists (select 1 from mem where mem.grp_id = g and mem.user_id = auth.uid()) and exists (select 1 from mem b where b.grp_id = g and b.user_id <> auth.uid()) $$;
    create function member_of(uuid) returns boolean language sql stable security definer as $$
      select exists (select 1 from public.mem m where m.grp_id = $1 and m.user_id = (select auth.uid())) $$;
    create policy "shared groups" on grp for select to authenticated using (public.others_definer(id));
    create policy "members read" on notes for select using (member_of(grp_id));
    create policy "members write" on notes for insert with check (member_of(grp_id));
    insert into grp (id, name) values ('${G1}', 'g1'), ('${G2}', 'g2');
    insert into notes (grp_id, name) values ('${G1}', 'n1'), ('${G2}', 'n2');`);
  await ok('insert into mem (grp_id, user_id) values ($1, $2), ($1, $3), ($4, $3)', 'service', [G1, alice.id, bob.id, G2]);
});
afterAll(() => s.close());

describe('security definer and security invoker', () => {
  it('a definer body reads without RLS: alice and bob see g1, whose other member\'s row they cannot read', async () => {
    expect(await names('grp', alice)).toEqual(['g1']);
    expect(await names('grp', bob)).toEqual(['g1']);
    expect(await ok('select name from grp', alice)).toEqual([{ name: 'g1' }]);
    expect(await ok('select count(*) as n from mem', alice)).toEqual([{ n: 1 }]);
  });

  it('an invoker body reads as the caller: through mem\'s policy alice sees no other member, so no group', async () => {
    await ok(`alter policy "shared groups" on grp using (public.others_invoker(id))`);
    expect(await names('grp', alice)).toEqual([]);
    expect(await ok('select count(*) as n from grp', bob)).toEqual([{ n: 0 }]);
    await ok(`alter policy "shared groups" on grp using (public.others_definer(id))`);
    expect(await names('grp', alice)).toEqual(['g1']);
  });

  it('an invoker function reading the policy\'s own table is 42P17; the definer one is the way out', async () => {
    await ok(`create function in_grp(g uuid) returns boolean language sql stable as $$ select exists (select 1 from mem where mem.grp_id = g and mem.user_id = auth.uid()) $$;
      create policy "co-members" on mem for select using (in_grp(grp_id))`);
    const r = await q('select count(*) as n from mem', alice);
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.message).toBe('infinite recursion detected in policy for relation "mem"');
    expect(r.body.error.details.sqlstate).toBe('42P17');
    expect((await call('GET', '/db/tables/mem/rows', undefined, alice)).status).toBe(400);
    await ok(`drop policy "co-members" on mem; create policy "co-members" on mem for select using (member_of(grp_id))`);
    expect(await ok('select count(*) as n from mem', alice)).toEqual([{ n: 2 }]);
    expect(await ok('select count(*) as n from mem', bob)).toEqual([{ n: 3 }]);
    await ok('drop policy "co-members" on mem; drop function in_grp');
  });

  it('a positional $1 parameter; inserts are checked, and realtime delivers to members only', async () => {
    expect(await names('notes', alice)).toEqual(['n1']);
    expect(await names('notes', bob)).toEqual(['n1', 'n2']);
    expect((await call('POST', '/db/tables/notes/rows', { data: { grp_id: G2, name: 'sneaky' } }, alice)).body.error.code).toBe('rls_denied');
    const base = `${s.url}/realtime/stream?table=notes&apikey=${s.keys.publishable}`;
    const ea = openEventSource(`${base}&access_token=${alice.token}`);
    const eb = openEventSource(`${base}&access_token=${bob.token}`);
    try {
      await ea.next((m) => m.event === 'ready');
      await eb.next((m) => m.event === 'ready');
      expect((await call('POST', '/db/tables/notes/rows', { data: { grp_id: G2, name: 'n2-live' } }, bob)).status).toBe(201);
      expect((await call('POST', '/db/tables/notes/rows', { data: { grp_id: G1, name: 'n1-live' } }, bob)).status).toBe(201);
      expect(((await ea.next((m) => m.event === 'change')).data.data as { name: string }).name).toBe('n1-live');
      expect(((await eb.next((m) => m.event === 'change')).data.data as { name: string }).name).toBe('n2-live');
      expect(((await eb.next((m) => m.event === 'change')).data.data as { name: string }).name).toBe('n1-live');
      expect((await ea.quiet(300)).filter((m) => m.event === 'change')).toEqual([]);
    } finally {
      ea.close();
      eb.close();
    }
  });

  it('JSON-RPC and a view read through the same policies', async () => {
    const rpc = await call('POST', '/db/rpc', { jsonrpc: '2.0', id: 1, method: 'db.list', params: { table: 'notes' } }, alice);
    expect(rpc.body.result.rows.map((r: { data: { name: string } }) => r.data.name).sort()).toEqual(['n1', 'n1-live']);
    await ok('create view note_names as select name from notes');
    expect(await ok('select name from note_names order by name', alice)).toEqual([{ name: 'n1' }, { name: 'n1-live' }]);
    expect(await names('note_names', alice)).toEqual(['n1', 'n1-live']);
    await ok('drop view note_names');
  });

  it('PUT …/rls takes a policy that calls a function', async () => {
    const r = await call('PUT', '/db/tables/grp/rls', { enabled: true, named: [{ name: 'via put', command: 'select', using: 'member_of(id)' }] }, 'service');
    expect(r.status, r.text).toBe(200);
    expect(await names('grp', alice)).toEqual(['g1']);
    expect(await names('grp', bob)).toEqual(['g1', 'g2']);
    await ok(`drop policy "via put" on grp; create policy "shared groups" on grp for select to authenticated using (public.others_definer(id))`);
  });
});

describe('functions change under the policies that call them', () => {
  it('CREATE OR REPLACE FUNCTION takes effect on every path at once; a new return type is 42P13', async () => {
    await ok(`create or replace function member_of(uuid) returns boolean language sql stable security definer as $$ select false $$`);
    expect(await names('notes', bob)).toEqual([]);
    expect(await ok('select count(*) as n from notes', bob)).toEqual([{ n: 0 }]);
    expect((await call('POST', '/db/graphql', { query: '{ notes { name } }' }, bob)).body).toEqual({ data: { notes: [] } });
    await ok(`create or replace function member_of(uuid) returns boolean language sql stable security definer as $$
      select exists (select 1 from public.mem m where m.grp_id = $1 and m.user_id = (select auth.uid())) $$`);
    expect(await names('notes', alice)).toEqual(['n1', 'n1-live']);
    // a restart reads the policies back as they were left
    s = await restartTestServer(s);
    expect(await names('notes', alice)).toEqual(['n1', 'n1-live']);
    expect(await names('grp', bob)).toEqual(['g1']);
    const e = await refused(`create or replace function member_of(uuid) returns int language sql as $$ select 1 $$`);
    expect(e.message).toBe('cannot change return type of existing function');
    expect(e.details).toMatchObject({ sqlstate: '42P13', hint: 'Use DROP FUNCTION member_of(uuid) first.' });
  });

  it('DROP FUNCTION of a function a policy calls is 2BP01; CASCADE drops those policies', async () => {
    const e = await refused('drop function member_of');
    expect(e.message).toBe('cannot drop function member_of(uuid) because other objects depend on it');
    expect(e.details).toMatchObject({
      sqlstate: '2BP01',
      detail: 'policy members read on table notes depends on function member_of(uuid)\npolicy members write on table notes depends on function member_of(uuid)',
      hint: 'Use DROP ... CASCADE to drop the dependent objects too.',
    });
    expect(await names('notes', alice)).toEqual(['n1', 'n1-live']);
    await ok('drop function member_of cascade');
    expect((await call('GET', '/db/tables/notes/rls', undefined, 'service')).body).toMatchObject({ enabled: true, named: [] });
    expect(await names('notes', bob)).toEqual([]);
    expect(await ok('select count(*) as n from notes')).toEqual([{ n: 4 }]);
  });
});

describe('policies Postgres refuses', () => {
  it('a function that does not exist is 42883, with the argument types as Postgres names them', async () => {
    const e = await refused(`create policy p on grp using (public.nope(id, 1, name))`);
    expect(e.message).toBe('policy "p" (using): function public.nope(uuid, integer, text) does not exist');
    expect(e.details.sqlstate).toBe('42883');
    // the wrong number of arguments: no such function either
    expect((await refused(`create policy p on grp using (others_definer(id, 2))`)).details.sqlstate).toBe('42883');
  });

  it('a function that is not boolean is 42804: "argument of POLICY (or AND …) must be type boolean"', async () => {
    await ok(`create function grp_count(g uuid) returns int language sql stable as $$ select 1 $$`);
    const e = await refused(`create policy p on grp for insert with check (grp_count(id))`);
    expect(e.message).toBe('policy "p" (insert): argument of POLICY must be type boolean, not type integer');
    expect(e.details.sqlstate).toBe('42804');
    expect((await refused(`create policy p on grp using (grp_count(id) and true)`)).message).toBe('policy "p" (using): argument of AND must be type boolean, not type integer');
    // used as a value it is fine
    await ok(`create policy p on grp for select using (grp_count(id) = 1 and others_definer(id))`);
    expect(await names('grp', alice)).toEqual(['g1']);
    await ok('drop policy p on grp');
  });

  it('a refused statement changes nothing: the script before it is rolled back', async () => {
    const before = (await call('GET', '/db/tables/grp/rls', undefined, 'service')).body;
    const e = await refused(`create policy q on grp using (true); create policy r on grp using (missing_fn(id))`);
    expect(e.details.sqlstate).toBe('42883');
    expect((await call('GET', '/db/tables/grp/rls', undefined, 'service')).body).toEqual(before);
  });
});
