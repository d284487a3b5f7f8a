import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// The platform's own tables (_svc_*) are out of reach of every caller's SQL; auth.users is a
// read-only window onto the auth store for the service role (docs/sql.md "Reserved tables and auth.users").

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
const query = (sql: string, who: Caller = svc(), params: unknown[] = []) => call('POST', '/db/query', { sql, params }, who);
const rpc = (sql: string, who: Caller = svc()) => call('POST', '/db/rpc', { jsonrpc: '2.0', id: 1, method: 'db.query', params: { sql } }, who);

let alice: { id: string; token: string };
let bobId: string;
let callers: Array<[string, Caller]>;

beforeAll(async () => {
  s = await startTestServer();
  const a = await call('POST', '/auth/register', { email: 'alice@example.com', password: 'correct horse battery staple 1', data: { plan: 'pro' } });
  expect(a.status, a.text).toBe(200);
  alice = { id: a.body.user.id, token: a.body.access_token };
  const b = await call('POST', '/auth/register', { email: 'bob@example.com', password: 'correct horse battery staple 2' });
  expect(b.status, b.text).toBe(200);
  bobId = b.body.user.id;
  // bob's e-mail verified, and app metadata set, by an administrator
  expect((await call('PATCH', `/auth/users/${bobId}`, { email_verified: true, app_metadata: { tier: 2 } }, svc())).status).toBe(200);
  expect((await call('POST', '/webhooks', { url: 'https://example.com/hook', events: ['insert'] }, svc())).status).toBe(201);
  expect((await call('PUT', '/secrets/HIDDEN_VALUE', { value: 'sekrit' }, svc())).status).toBe(200);
  expect((await query(`create table notes (id uuid primary key default gen_random_uuid(), owner uuid references auth.users, body text)`)).status).toBe(200);
  callers = [
    ['service role', svc()],
    ['publishable key', { key: s.keys.publishable }],
    ['Bearer user', { key: s.keys.publishable, token: alice.token }],
  ];
});
afterAll(() => s.close());

/** Statements that name a reserved table, in the spellings a caller might try. */
const RESERVED_SQL = [
  'select * from _svc_auth.users',
  'select password_hash from _svc_auth.users',
  'select * from "_svc_auth".users',
  'select * from "_SVC_AUTH".users',
  'select * from _SVC_AUTH.USERS',
  'select * from "_svc_auth.users"',
  'select * from public."_svc_auth.users"',
  'select hash from _svc_auth.refresh_tokens',
  'select * from _svc_auth.sessions',
  'select value from _svc_auth.config',
  'select * from _svc_meta.change_log',
  'select * from _svc_meta.tables',
  'select * from _svc_meta.rls',
  'select * from _svc_meta.functions',
  'select * from _svc_webhooks.webhooks',
  'select secret from "_svc_webhooks.webhooks"',
  'select * from _svc_secrets.values',
  'select * from "_svc_secrets.values"',
  'select * from _svc_storage.objects',
  'select * from _svc_storage.buckets',
  'select * from _svc_functions.jobs',
  'select count(*) from notes join _svc_auth.users u on u.id = notes.owner',
  'select (select password_hash from _svc_auth.users limit 1) as h',
  'select * from notes where exists (select 1 from _svc_auth.sessions)',
  'with u as (select * from _svc_auth.users) select * from u',
  'select id from notes union select id from _svc_auth.users',
  `select id from _svc_auth.users where id = 'x'`,
  `insert into _svc_auth.users (id, created_at, updated_at) values ('x', 'now', 'now')`,
  `insert into notes (body) select password_hash from _svc_auth.users`,
  `update _svc_auth.users set role = 'admin'`,
  `update notes set body = u.password_hash from _svc_auth.users u`,
  'delete from _svc_meta.change_log',
  'drop table _svc_webhooks.deliveries',
  'alter table _svc_auth.users add column x text',
  'create table _svc_auth.mine (id int)',
  'create table _svc_mine (id int)',
  'create index _svc_mine on notes (body)',
  'create index on _svc_auth.users (email)',
  'drop index "_svc_auth.users_role"',
  'drop index _svc_auth.users_role',
  'alter table notes rename to _svc_notes',
  'create table leak (id uuid primary key references _svc_auth.users (id))',
  'alter table _svc_meta_tables enable row level security',
  'create policy p on _svc_meta_tables using (true)',
];

describe('the reserved _svc_* tables', () => {
  it('are refused to every caller through /db/query, 400 invalid_request, and nothing changes', async () => {
    for (const sql of RESERVED_SQL) {
      for (const [who, c] of callers) {
        const r = await query(sql, c);
        expect(r.status, `${who}: ${sql}: ${r.text}`).toBe(400);
        expect(r.body.error.code, `${who}: ${sql}`).toBe('invalid_request');
        expect(r.text).not.toMatch(/\$argon|\$scrypt|whsec_|sekrit/);
      }
    }
    // the same statements as the service role left everything as it was
    expect((await call('POST', '/auth/login', { email: 'alice@example.com', password: 'correct horse battery staple 1' })).status).toBe(200);
    expect((await call('GET', '/secrets', undefined, svc())).body.secrets.map((e: { name: string }) => e.name)).toEqual(['HIDDEN_VALUE']);
    expect((await call('GET', '/webhooks', undefined, svc())).body.webhooks).toHaveLength(1);
    expect((await query('select count(*) as n from notes')).body.rows).toEqual([{ n: 0 }]);
  });

  it('are refused through JSON-RPC db.query', async () => {
    for (const sql of ['select * from _svc_auth.users', 'select secret from "_svc_webhooks.webhooks"', 'delete from _svc_secrets.values']) {
      for (const [who, c] of callers) {
        const r = await rpc(sql, c);
        expect(r.status, `${who}: ${r.text}`).toBe(200);
        expect(r.body.error.data.code, `${who}: ${sql}`).toBe('invalid_request');
        expect(r.body.result).toBeUndefined();
      }
    }
  });

  it('are not tables of the rows API, /db/schema or GraphQL', async () => {
    for (const t of ['_svc_auth.users', '"_svc_auth.users"', '_svc_meta.tables', 'auth.users']) {
      const r = await call('GET', `/db/tables/${t}/rows`, undefined, svc());
      expect(r.status, `${t}: ${r.text}`).toBe(400);
    }
    const schema = await call('GET', '/db/schema', undefined, svc());
    expect(schema.status).toBe(200);
    expect(schema.text).not.toContain('_svc_');
    const tables = await call('GET', '/db/tables', undefined, svc());
    expect(tables.text).not.toContain('_svc_');
    const gql = await call('POST', '/db/graphql', { query: '{ __schema { types { name fields { name } } } }' }, svc());
    expect(gql.status).toBe(200);
    expect(gql.text).not.toMatch(/_svc_|password_hash/);
  });
});

describe('auth.users', () => {
  it('reads as Supabase users read it, for the service role: these columns only, no hash or token', async () => {
    const r = await query('select * from auth.users order by email');
    expect(r.status, r.text).toBe(200);
    expect(r.body.columns).toEqual([
      { name: 'id', type: 'uuid' },
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
    const a = (await call('GET', `/auth/users/${alice.id}`, undefined, svc())).body;
    const b = (await call('GET', `/auth/users/${bobId}`, undefined, svc())).body;
    expect(r.body.rows).toEqual([
      {
        id: alice.id,
        email: 'alice@example.com',
        phone: null,
        created_at: a.created_at,
        updated_at: a.updated_at,
        last_sign_in_at: a.last_sign_in_at,
        email_confirmed_at: null,
        raw_user_meta_data: { plan: 'pro' },
        raw_app_meta_data: {},
        is_anonymous: false,
      },
      {
        id: bobId,
        email: 'bob@example.com',
        phone: null,
        created_at: b.created_at,
        updated_at: b.updated_at,
        last_sign_in_at: b.last_sign_in_at,
        email_confirmed_at: b.created_at,
        raw_user_meta_data: {},
        raw_app_meta_data: { tier: 2 },
        is_anonymous: false,
      },
    ]);
    expect(r.text).not.toMatch(/password|hash|\$argon|\$scrypt/);
    const hash = await query('select password_hash from auth.users');
    expect(hash.status).toBe(400);
    expect(hash.text).not.toMatch(/\$argon|\$scrypt/);
  });

  it('joins, filters, aggregates and serves as a CTE or subquery', async () => {
    expect((await query(`insert into notes (owner, body) values ($1, 'a1'), ($1, 'a2'), ($2, 'b1')`, svc(), [alice.id, bobId])).status).toBe(200);
    const j = await query(`select u.email, count(n.id) as notes from auth.users u left join notes n on n.owner = u.id group by u.email order by u.email`);
    expect(j.body.rows).toEqual([
      { email: 'alice@example.com', notes: 2 },
      { email: 'bob@example.com', notes: 1 },
    ]);
    const pt = await query(`select email, raw_user_meta_data ->> 'plan' as plan from auth.users where id = $1`, svc(), [alice.id]);
    expect(pt.body.rows).toEqual([{ email: 'alice@example.com', plan: 'pro' }]);
    // the same point lookup again meets the cached translation on the synchronous path
    expect((await query(`select email, raw_user_meta_data ->> 'plan' as plan from auth.users where id = $1`, svc(), [bobId])).body.rows).toEqual([{ email: 'bob@example.com', plan: null }]);
    const cte = await query(`with confirmed as (select id from auth.users where email_confirmed_at is not null) select body from notes where owner in (select id from confirmed)`);
    expect(cte.body.rows).toEqual([{ body: 'b1' }]);
    const rp = await rpc(`select count(*) as n from auth.users where not is_anonymous`);
    expect(rp.body.result.rows).toEqual([{ n: 2 }]);
  });

  it('is read-only, even for the service role', async () => {
    for (const sql of [`insert into auth.users (id, email) values (gen_random_uuid(), 'x@example.com')`, `update auth.users set email = 'x@example.com'`, 'delete from auth.users', 'drop table auth.users', 'alter table auth.users add column x text', 'create index users_email_x on auth.users (email)']) {
      const r = await query(sql);
      expect(r.status, `${sql}: ${r.text}`).toBe(400);
      expect(r.body.error.code).toBe('invalid_request');
      expect(r.body.error.message).toContain('auth.users is read-only');
    }
    expect((await query('select count(*) as n from auth.users')).body.rows).toEqual([{ n: 2 }]);
  });

  it('is refused to a publishable key and to a signed-in user with 401 missing_scope', async () => {
    for (const [who, c] of callers.slice(1)) {
      for (const sql of ['select email from auth.users', `select email from auth.users where id = '${alice.id}'`, `select email from auth.users where id = '${alice.id}'`, 'select n.body from notes n join auth.users u on u.id = n.owner']) {
        const r = await query(sql, c);
        expect(r.status, `${who}: ${sql}`).toBe(401);
        expect(r.body.error.code).toBe('missing_scope');
        expect(r.body.error.message).toContain('auth.users');
      }
      const r = await rpc('select email from auth.users', c);
      expect(r.body.error.data.code, who).toBe('missing_scope');
    }
  });
});
