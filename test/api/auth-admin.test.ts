import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ rateLimit: { enabled: false } });
});
afterAll(() => s.close());

interface Session {
  access_token: string;
  refresh_token: string;
  user: Record<string, unknown> & { id: string; email: string };
}

let n = 0;
const uniqueEmail = (tag = 'user'): string => `${tag}${++n}@example.com`;
const PASSWORD = 'correct horse battery';

function send(method: string, path: string, body?: unknown, key: string | null = s.keys.service, headers: Record<string, string> = {}) {
  return s.req(path, {
    method,
    key,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function register(extra: Record<string, unknown> = {}, tag?: string): Promise<Session> {
  const res = await send('POST', '/auth/register', { email: uniqueEmail(tag), password: PASSWORD, ...extra }, s.keys.publishable);
  expect(res.status).toBe(200);
  return (await res.json()) as Session;
}

const operator = (): Record<string, string> => ({ authorization: `Bearer ${s.operatorToken}`, 'x-service-project': s.projectId });

/** The profiles table's columns, read from a backup (GET /_admin/backup): no endpoint lists them. */
function profileColumns(): Promise<Record<string, string>> {
  return s.readBackup((db) => {
    const rows = db.prepare("SELECT name, type FROM pragma_table_info('profiles')").all() as { name: string; type: string }[];
    return Object.fromEntries(rows.map((r) => [r.name, r.type]));
  });
}

/** A profiles row, read from a backup (GET /_admin/backup). */
function profile(id: string): Promise<Record<string, unknown> | undefined> {
  return s.readBackup((db) => db.prepare('SELECT * FROM profiles WHERE id = ?').get(id) as Record<string, unknown> | undefined);
}

describe('admin access', () => {
  it('the publishable key lacks auth:admin (401 missing_scope)', async () => {
    const res = await send('GET', '/auth/users', undefined, s.keys.publishable);
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe('missing_scope');
  });

  it('an operator session with X-Service-Project is an administrator', async () => {
    const res = await send('GET', '/auth/users', undefined, null, operator());
    expect(res.status).toBe(200);
  });

  it('a user bearer token does not make a publishable key an administrator', async () => {
    const u = await register();
    const res = await send('PATCH', `/auth/users/${u.user.id}`, { app_metadata: { x: 1 } }, s.keys.publishable, {
      authorization: `Bearer ${u.access_token}`,
    });
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe('missing_scope');
  });
});

describe('GET /auth/users', () => {
  it('pages and searches by e-mail', async () => {
    const made: string[] = [];
    for (let i = 0; i < 3; i++) made.push((await register({}, 'pager')).user.email);
    const page = await send('GET', '/auth/users?email=PAGER&limit=2');
    expect(page.status).toBe(200);
    const body = (await page.json()) as { users: { email: string }[]; limit: number; offset: number; next_offset: number | null; total: number };
    // newest first
    expect(body.users.map((u) => u.email)).toEqual([made[2], made[1]]);
    expect(body).toMatchObject({ limit: 2, offset: 0, next_offset: 2, total: 3 });
    const rest = (await (await send('GET', '/auth/users?email=pager&limit=2&offset=2')).json()) as typeof body;
    expect(rest.users.map((u) => u.email)).toEqual([made[0]]);
    expect(rest.next_offset).toBeNull();
    const none = (await (await send('GET', '/auth/users?email=%25')).json()) as typeof body;
    expect(none.total).toBe(0);
  });

  it('takes limit 1-1000 (default 100) and rejects anything else with 400 invalid_field', async () => {
    const limitOf = async (q: string): Promise<number> => {
      const res = await send('GET', `/auth/users${q}`);
      expect(res.status, q).toBe(200);
      return ((await res.json()) as { limit: number }).limit;
    };
    expect([await limitOf(''), await limitOf('?limit=1'), await limitOf('?limit=1000')]).toEqual([100, 1, 1000]);
    for (const bad of ['0', '1001', '-1', '2.5', 'ten']) {
      const res = await send('GET', `/auth/users?limit=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(await errorOf(res), bad).toEqual({ code: 'invalid_field', message: 'limit: must be an integer from 1 to 1000', details: { field: 'limit' } });
    }
  });
});

describe('PATCH /auth/users/{id}', () => {
  it('sets app_metadata, user_metadata and email_verified; the user sees them', async () => {
    const u = await register({ user_metadata: { a: 1 } });
    // note: read first, so a cached copy would show if the write did not replace it.
    const before = await s.req('/auth/me', { headers: { authorization: `Bearer ${u.access_token}` } });
    expect(await before.json()).toMatchObject({ app_metadata: {}, email_verified: false });
    const res = await send('PATCH', `/auth/users/${u.user.id}`, {
      app_metadata: { plan: 'pro' },
      user_metadata: { b: 2 },
      email_verified: true,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ app_metadata: { plan: 'pro' }, user_metadata: { a: 1, b: 2 }, email_verified: true });
    const me = await s.req('/auth/me', { headers: { authorization: `Bearer ${u.access_token}` } });
    expect(await me.json()).toMatchObject({ app_metadata: { plan: 'pro' }, email_verified: true });
  });

  it('a role must be built in or defined; the new role reaches the next token', async () => {
    const u = await register();
    const undefinedRole = await send('PATCH', `/auth/users/${u.user.id}`, { role: 'editor' });
    expect(undefinedRole.status).toBe(400);
    expect((await errorOf(undefinedRole)).code).toBe('invalid_field');
    expect((await send('PUT', '/auth/roles', { roles: [{ name: 'editor', description: 'edits' }] })).status).toBe(200);
    const ok = await send('PATCH', `/auth/users/${u.user.id}`, { role: 'editor' });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ role: 'editor' });
    expect((await send('PATCH', `/auth/users/${u.user.id}`, { role: 'anon' })).status).toBe(200);
    expect((await send('PATCH', `/auth/users/${u.user.id}`, { role: 'editor' })).status).toBe(200);
    const refreshed = await send('POST', '/auth/refresh', { refresh_token: u.refresh_token }, s.keys.publishable);
    const next = (await refreshed.json()) as Session;
    const claims = JSON.parse(Buffer.from(next.access_token.slice(4).split('.')[1]!, 'base64url').toString());
    expect(claims).toMatchObject({ role: 'editor', sub: u.user.id, aud: s.projectId });
  });

  it('unknown user is 404, unknown field is 400', async () => {
    const missing = await send('PATCH', '/auth/users/00000000-0000-7000-8000-000000000000', { email_verified: true });
    expect(missing.status).toBe(404);
    expect((await errorOf(missing)).code).toBe('not_found');
    const u = await register();
    const bad = await send('PATCH', `/auth/users/${u.user.id}`, { password: 'x' });
    expect(bad.status).toBe(400);
    expect((await errorOf(bad)).code).toBe('invalid_field');
  });

  it('DELETE removes the user and profile and revokes their tokens', async () => {
    const u = await register();
    expect((await send('DELETE', `/auth/users/${u.user.id}`)).status).toBe(204);
    expect(await profile(u.user.id)).toBeUndefined();
    const me = await s.req('/auth/me', { headers: { authorization: `Bearer ${u.access_token}` } });
    expect(me.status).toBe(401);
    expect((await send('GET', `/auth/users/${u.user.id}`)).status).toBe(404);
  });
});

describe('roles', () => {
  it('lists built-in and defined roles; removing an assigned role is 409', async () => {
    // note: 'editor' is still assigned by an earlier test, so it stays in the list.
    const roles = [{ name: 'editor' }, { name: 'moderator', description: 'mods' }, { name: 'anon' }];
    expect((await send('PUT', '/auth/roles', roles)).status).toBe(200);
    const list = (await (await send('GET', '/auth/roles')).json()) as { roles: { name: string; built_in: boolean }[] };
    expect(list.roles.map((r) => r.name)).toEqual(['authenticated', 'anon', 'editor', 'moderator']);
    const u = await register();
    expect((await send('PATCH', `/auth/users/${u.user.id}`, { role: 'moderator' })).status).toBe(200);
    const drop = await send('PUT', '/auth/roles', { roles: [] });
    expect(drop.status).toBe(409);
    expect((await errorOf(drop)).code).toBe('conflict');
  });

  it.each([['service_role'], ['Bad Name'], ['']])('rejects the role name %j', async (name) => {
    const res = await send('PUT', '/auth/roles', { roles: [{ name }] });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe('invalid_field');
  });
});

describe('user fields', () => {
  it('adds columns to profiles; register validates required and typed fields', async () => {
    const put = await send('PUT', '/auth/user-fields', {
      fields: [
        { name: 'username', type: 'text', required: true, in_signup: true },
        { name: 'age', type: 'int8', required: false, in_signup: true },
        { name: 'newsletter', type: 'bool', in_signup: true },
        { name: 'birthday', type: 'timestamptz', in_signup: true },
        { name: 'score', type: 'float8', required: false, in_signup: false },
      ],
    });
    expect(put.status).toBe(200);
    const pub = await send('GET', '/auth/user-fields', undefined, s.keys.publishable);
    expect(pub.status).toBe(200);
    expect(((await pub.json()) as { fields: unknown[] }).fields).toContainEqual({ name: 'username', type: 'text', required: true, in_signup: true });
    expect(await profileColumns()).toMatchObject({ username: 'TEXT', age: 'INT8', newsletter: 'BOOLEAN', score: 'FLOAT8' });

    const missing = await send('POST', '/auth/register', { email: uniqueEmail(), password: PASSWORD }, s.keys.publishable);
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: { code: 'invalid_field', details: { field: 'username' } } });
    const typed = await send('POST', '/auth/register', { email: uniqueEmail(), password: PASSWORD, username: 'u', age: 'old' }, s.keys.publishable);
    expect(typed.status).toBe(400);
    expect(await typed.json()).toMatchObject({ error: { code: 'invalid_field', details: { field: 'age' } } });
    const badDate = await send('POST', '/auth/register', { email: uniqueEmail(), password: PASSWORD, username: 'u', birthday: 'soon' }, s.keys.publishable);
    expect(await badDate.json()).toMatchObject({ error: { code: 'invalid_field', details: { field: 'birthday' } } });

    const ok = await register({ username: 'ada', age: 36, newsletter: true, birthday: '1815-12-10T00:00:00Z', name: 'Ada' });
    expect(await profile(ok.user.id)).toMatchObject({ name: 'Ada', username: 'ada', age: 36, newsletter: 1, birthday: '1815-12-10T00:00:00.000Z' });
  });

  it('changes a column type when every value converts, and drops removed fields', async () => {
    await send('PUT', '/auth/user-fields', { fields: [{ name: 'level', type: 'text', in_signup: true }] });
    const u = await register({ level: '42' });
    const retype = await send('PUT', '/auth/user-fields', { fields: [{ name: 'level', type: 'int8', in_signup: true }] });
    expect(retype.status).toBe(200);
    expect(await profileColumns()).toMatchObject({ level: 'INT8' });
    expect(await profileColumns()).not.toHaveProperty('username');
    expect(await profile(u.user.id)).toMatchObject({ level: 42 });

    await send('PUT', '/auth/user-fields', { fields: [{ name: 'level', type: 'text', in_signup: true }] });
    await register({ level: 'not a number' });
    const bad = await send('PUT', '/auth/user-fields', { fields: [{ name: 'level', type: 'int8', in_signup: true }] });
    expect(bad.status).toBe(409);
    expect((await errorOf(bad)).code).toBe('conflict');
    expect(await profileColumns()).toMatchObject({ level: 'TEXT' });

    expect((await send('PUT', '/auth/user-fields', { fields: [] })).status).toBe(200);
    expect(await profileColumns()).not.toHaveProperty('level');
  });

  it.each([['id'], ['email'], ['name'], ['created_at'], ['_svc_x'], ['Bad-Name']])('rejects the field name %j', async (name) => {
    const res = await send('PUT', '/auth/user-fields', { fields: [{ name, type: 'text' }] });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe('invalid_field');
  });

  it('rejects an unknown type and needs auth:admin to write', async () => {
    const res = await send('PUT', '/auth/user-fields', { fields: [{ name: 'x', type: 'jsonb' }] });
    expect(res.status).toBe(400);
    const pub = await send('PUT', '/auth/user-fields', { fields: [] }, s.keys.publishable);
    expect(pub.status).toBe(401);
    expect((await errorOf(pub)).code).toBe('missing_scope');
  });
});
