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
  expires_in: number;
  user: Record<string, unknown> & { id: string };
  tokens: Record<string, unknown>;
}

let n = 0;
const uniqueEmail = (): string => `user${++n}-${Date.now()}@example.com`;
const PASSWORD = 'correct horse battery';

const post = (path: string, body: unknown, init: { key?: string | null; token?: string } = {}): Promise<Response> =>
  s.req(path, {
    method: 'POST',
    key: init.key,
    headers: { 'content-type': 'application/json', ...(init.token ? { authorization: `Bearer ${init.token}` } : {}) },
    body: JSON.stringify(body),
  });

const withToken = (path: string, token: string, init: RequestInit & { key?: string | null } = {}): Promise<Response> =>
  s.req(path, { ...init, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...init.headers } });

async function register(body: Record<string, unknown> = {}): Promise<Session> {
  const res = await post('/auth/register', { email: uniqueEmail(), password: PASSWORD, ...body });
  expect(res.status).toBe(200);
  return (await res.json()) as Session;
}

const b64url = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');

describe('register', () => {
  it('returns a session shaped as the contract says and creates the profiles row', async () => {
    const email = uniqueEmail();
    const res = await post('/auth/register', { email: `  ${email.toUpperCase()} `, password: PASSWORD, name: 'Ada', data: { theme: 'dark' } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Session;
    expect(body.access_token).toMatch(/^lca_/);
    expect(body.refresh_token).toMatch(/^lcr_[0-9A-Za-z]{32}$/);
    expect(body.expires_in).toBe(900);
    expect(body.user).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      email,
      name: 'Ada',
      role: 'authenticated',
      email_verified: false,
      user_metadata: { theme: 'dark' },
      metadata: { theme: 'dark' },
      app_metadata: {},
      is_anonymous: false,
      created_at: expect.any(String),
    });
    expect(body.tokens).toMatchObject({ access_token: body.access_token, refresh_token: body.refresh_token, expires_in: 900 });
    expect(await readProfile(body.user.id)).toMatchObject({ id: body.user.id, name: 'Ada' });
  });

  it('logs the profiles insert as a data change (live log)', async () => {
    const before = (await (await s.req('/live', { key: s.keys.service })).json()) as { seq: number };
    await register();
    const after = (await (await s.req(`/live?since=${before.seq}`, { key: s.keys.service })).json()) as {
      events: { kind: string; label?: string }[];
    };
    expect(after.events).toContainEqual(expect.objectContaining({ kind: 'change', label: 'insert into profiles' }));
  });

  it('rejects a duplicate e-mail with 409 conflict (case-insensitive)', async () => {
    const email = uniqueEmail();
    expect((await post('/auth/register', { email, password: PASSWORD })).status).toBe(200);
    const res = await post('/auth/register', { email: email.toUpperCase(), password: PASSWORD });
    expect(res.status).toBe(409);
    expect((await errorOf(res)).code).toBe('conflict');
  });

  it.each([
    ['invalid e-mail', { email: 'not-an-email', password: PASSWORD }, 'email'],
    ['missing e-mail', { password: PASSWORD }, 'email'],
    ['short password', { email: 'short@example.com', password: 'seven77' }, 'password'],
    ['long password', { email: 'long@example.com', password: 'x'.repeat(257) }, 'password'],
    ['metadata not an object', { email: 'meta@example.com', password: PASSWORD, user_metadata: [1] }, 'user_metadata'],
  ])('%s is 400 invalid_field', async (_name, body, field) => {
    const res = await post('/auth/register', body);
    expect(res.status).toBe(400);
    const body2 = (await res.json()) as { error: { code: string; details?: { field: string } } };
    expect(body2.error.code).toBe('invalid_field');
    expect(body2.error.details?.field).toBe(field);
  });

  it('takes user_metadata of up to 16 KiB (16,384 bytes of JSON, UTF-8) and a name of up to 200 characters; more is 400 invalid_field', async () => {
    // {"s":"…"} is 8 bytes around the string
    const meta = (s: string): Record<string, string> => ({ s });
    expect(Buffer.byteLength(JSON.stringify(meta('x'.repeat(16_376))))).toBe(16_384);
    expect(Buffer.byteLength(JSON.stringify(meta('é'.repeat(8_188))))).toBe(16_384);
    for (const m of [meta('x'.repeat(16_376)), meta('é'.repeat(8_188))]) {
      const res = await post('/auth/register', { email: uniqueEmail(), password: PASSWORD, user_metadata: m });
      expect(res.status).toBe(200);
      expect(((await res.json()) as Session).user.user_metadata).toEqual(m);
    }
    // one byte more, in ASCII or as a two-byte character (16,197 characters of JSON, 16,386 bytes)
    for (const m of [meta('x'.repeat(16_377)), meta('é'.repeat(8_189))]) {
      const res = await post('/auth/register', { email: uniqueEmail(), password: PASSWORD, user_metadata: m });
      expect(res.status).toBe(400);
      expect(await errorOf(res)).toEqual({ code: 'invalid_field', message: 'user_metadata: must be at most 16384 bytes', details: { field: 'user_metadata' } });
    }
    const named = await post('/auth/register', { email: uniqueEmail(), password: PASSWORD, name: 'n'.repeat(200) });
    expect(named.status).toBe(200);
    expect(((await named.json()) as Session).user.name).toBe('n'.repeat(200));
    const tooLong = await post('/auth/register', { email: uniqueEmail(), password: PASSWORD, name: 'n'.repeat(201) });
    expect(tooLong.status).toBe(400);
    expect(await errorOf(tooLong)).toEqual({ code: 'invalid_field', message: 'name: must be at most 200 characters', details: { field: 'name' } });
  });

  it('accepts a password of exactly 8 and 256 characters', async () => {
    expect((await post('/auth/register', { email: uniqueEmail(), password: '12345678' })).status).toBe(200);
    expect((await post('/auth/register', { email: uniqueEmail(), password: 'y'.repeat(256) })).status).toBe(200);
  });

  it('needs an API key', async () => {
    const res = await post('/auth/register', { email: uniqueEmail(), password: PASSWORD }, { key: null });
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe('unauthorized');
  });
});

describe('login', () => {
  it('returns a session for the right password', async () => {
    const email = uniqueEmail();
    const reg = await post('/auth/register', { email, password: PASSWORD });
    const { user } = (await reg.json()) as Session;
    const res = await post('/auth/login', { email: ` ${email.toUpperCase()}`, password: PASSWORD });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Session;
    expect(body.user.id).toBe(user.id);
    expect(body.access_token).toMatch(/^lca_/);
    const me = await withToken('/auth/me', body.access_token);
    expect(me.status).toBe(200);
  });

  it('wrong password and unknown e-mail give the same 401 invalid_credentials', async () => {
    const email = uniqueEmail();
    await post('/auth/register', { email, password: PASSWORD });
    const wrong = await post('/auth/login', { email, password: 'wrong password!' });
    const unknown = await post('/auth/login', { email: uniqueEmail(), password: PASSWORD });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    const a = await errorOf(wrong);
    const b = await errorOf(unknown);
    expect(a.code).toBe('invalid_credentials');
    expect(b).toEqual(a);
  });
});

describe('bearer verification', () => {
  it('GET /auth/me answers the user of the token', async () => {
    const sess = await register({ name: 'Me' });
    const res = await withToken('/auth/me', sess.access_token);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: sess.user.id, name: 'Me', email: sess.user.email });
  });

  it('GET /auth/me without a token is 401', async () => {
    const res = await s.req('/auth/me');
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe('unauthorized');
  });

  it('a token of another project is 401 with this project key', async () => {
    const other = s.createProject('other');
    const res = await s.req('/auth/register', {
      method: 'POST',
      key: other.publishable,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: uniqueEmail(), password: PASSWORD }),
    });
    expect(res.status).toBe(200);
    const foreign = (await res.json()) as Session;
    expect((await withToken('/auth/me', foreign.access_token, { key: other.publishable })).status).toBe(200);
    const cross = await withToken('/auth/me', foreign.access_token);
    expect(cross.status).toBe(401);
    expect((await errorOf(cross)).code).toBe('unauthorized');
    const own = await register();
    expect((await withToken('/auth/me', own.access_token, { key: other.publishable })).status).toBe(401);
  });

  it('a tampered token is 401', async () => {
    const sess = await register();
    const [h, p, sig] = sess.access_token.slice(4).split('.');
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString()) as Record<string, unknown>;
    const forged = `lca_${h}.${b64url({ ...claims, role: 'service_role' })}.${sig}`;
    const res = await withToken('/auth/me', forged);
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe('unauthorized');
    const badSig = `lca_${h}.${p}.${sig!.slice(0, -2)}${sig!.endsWith('AA') ? 'BB' : 'AA'}`;
    expect((await withToken('/auth/me', badSig)).status).toBe(401);
  });

  it('an alg:none token is 401', async () => {
    const sess = await register();
    const claims = JSON.parse(Buffer.from(sess.access_token.slice(4).split('.')[1]!, 'base64url').toString());
    const none = `lca_${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(claims)}.`;
    const res = await withToken('/auth/me', none);
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe('unauthorized');
  });

  it('garbage after lca_ is 401', async () => {
    const res = await withToken('/auth/me', 'lca_not.a.jwt');
    expect(res.status).toBe(401);
  });
});

describe('refresh and logout', () => {
  it('refresh rotates: the old pair stops working at once', async () => {
    const sess = await register();
    const res = await post('/auth/refresh', { refresh_token: sess.refresh_token });
    expect(res.status).toBe(200);
    const next = (await res.json()) as Session;
    expect(next.refresh_token).not.toBe(sess.refresh_token);
    expect(next.access_token).not.toBe(sess.access_token);
    expect(next.user.id).toBe(sess.user.id);
    expect((await withToken('/auth/me', next.access_token)).status).toBe(200);
    const oldAccess = await withToken('/auth/me', sess.access_token);
    expect(oldAccess.status).toBe(401);
  });

  it('reusing a refresh token within the reuse interval answers the pair already issued', async () => {
    const sess = await register();
    const first = (await (await post('/auth/refresh', { refresh_token: sess.refresh_token })).json()) as Session;
    const again = await post('/auth/refresh', { refresh_token: sess.refresh_token });
    expect(again.status).toBe(200);
    const body = (await again.json()) as Session;
    expect([body.access_token, body.refresh_token]).toEqual([first.access_token, first.refresh_token]);
    expect((await withToken('/auth/me', first.access_token)).status).toBe(200);
  });

  it('with the reuse interval off, reusing a refresh token revokes the whole session', async () => {
    const strict = await startTestServer({ authRefreshReuseIntervalS: 0 });
    try {
      const p = (path: string, body: unknown) => strict.req(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const sess = (await (await p('/auth/register', { email: uniqueEmail(), password: PASSWORD })).json()) as Session;
      const first = (await (await p('/auth/refresh', { refresh_token: sess.refresh_token })).json()) as Session;
      const reuse = await p('/auth/refresh', { refresh_token: sess.refresh_token });
      expect(reuse.status).toBe(401);
      expect(await errorOf(reuse)).toEqual({ code: 'unauthorized', message: 'refresh token already used; the session has been revoked' });
      // the legitimate successor pair is revoked too
      expect((await strict.req('/auth/me', { headers: { authorization: `Bearer ${first.access_token}` } })).status).toBe(401);
      expect((await p('/auth/refresh', { refresh_token: first.refresh_token })).status).toBe(401);
    } finally {
      await strict.close();
    }
  });

  it('logout revokes the session: access and refresh tokens fail', async () => {
    const sess = await register();
    const other = await post('/auth/login', { email: sess.user.email, password: PASSWORD });
    const otherSess = (await other.json()) as Session;
    const out = await withToken('/auth/logout', sess.access_token, { method: 'POST' });
    expect(out.status).toBe(204);
    const me = await withToken('/auth/me', sess.access_token);
    expect(me.status).toBe(401);
    expect((await errorOf(me)).code).toBe('unauthorized');
    expect((await post('/auth/refresh', { refresh_token: sess.refresh_token })).status).toBe(401);
    // another session of the same user is untouched
    expect((await withToken('/auth/me', otherSess.access_token)).status).toBe(200);
  });

  it('logout needs a bearer token', async () => {
    const res = await post('/auth/logout', {});
    expect(res.status).toBe(401);
  });

  it('an unknown or malformed refresh token is rejected', async () => {
    const unknown = await post('/auth/refresh', { refresh_token: 'lcr_' + 'a'.repeat(32) });
    expect(unknown.status).toBe(401);
    const bad = await post('/auth/refresh', { refresh_token: 42 });
    expect(bad.status).toBe(400);
    expect((await errorOf(bad)).code).toBe('invalid_field');
  });
});

describe('PATCH /auth/me', () => {
  it('persists name and merges user_metadata', async () => {
    const sess = await register({ user_metadata: { a: 1, b: 2 } });
    expect(await (await withToken('/auth/me', sess.access_token)).json()).toMatchObject({ user_metadata: { a: 1, b: 2 } });
    const res = await withToken('/auth/me', sess.access_token, {
      method: 'PATCH',
      body: JSON.stringify({ name: 'New Name', user_metadata: { b: null, c: 3 } }),
    });
    expect(res.status).toBe(200);
    const me = await (await withToken('/auth/me', sess.access_token)).json();
    expect(me).toMatchObject({ name: 'New Name', user_metadata: { a: 1, c: 3 } });
    expect((me as { user_metadata: object }).user_metadata).not.toHaveProperty('b');
    expect(await readProfile(sess.user.id)).toMatchObject({ name: 'New Name' });
  });

  it.each([['app_metadata', { admin: true }], ['role', 'admin'], ['email_verified', true]])(
    'a user cannot set their own %s (403, unchanged)',
    async (field, value) => {
      const sess = await register();
      const res = await withToken('/auth/me', sess.access_token, { method: 'PATCH', body: JSON.stringify({ [field]: value }) });
      expect(res.status).toBe(403);
      expect((await errorOf(res)).code).toBe('forbidden');
      const me = (await (await withToken('/auth/me', sess.access_token)).json()) as Record<string, unknown>;
      expect(me).toMatchObject({ app_metadata: {}, role: 'authenticated', email_verified: false });
    },
  );

  it('a registered user cannot change e-mail here', async () => {
    const sess = await register();
    const res = await withToken('/auth/me', sess.access_token, {
      method: 'PATCH',
      body: JSON.stringify({ email: uniqueEmail(), password: PASSWORD }),
    });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe('invalid_field');
  });
});

describe('anonymous users', () => {
  it('signs in anonymously and upgrades with e-mail and password, keeping the id and data', async () => {
    const res = await s.req('/auth/anonymous', { method: 'POST' });
    expect(res.status).toBe(200);
    const anon = (await res.json()) as Session;
    expect(anon.user).toMatchObject({ is_anonymous: true, email: null, role: 'authenticated' });
    expect(await readProfile(anon.user.id)).toMatchObject({ id: anon.user.id });
    const meta = await withToken('/auth/me', anon.access_token, { method: 'PATCH', body: JSON.stringify({ user_metadata: { cart: [1, 2] } }) });
    expect(meta.status).toBe(200);
    const email = uniqueEmail();
    const up = await withToken('/auth/me', anon.access_token, { method: 'PATCH', body: JSON.stringify({ email, password: PASSWORD }) });
    expect(up.status).toBe(200);
    expect(await up.json()).toMatchObject({ id: anon.user.id, email, is_anonymous: false, user_metadata: { cart: [1, 2] } });
    const login = await post('/auth/login', { email, password: PASSWORD });
    expect(login.status).toBe(200);
    expect(((await login.json()) as Session).user.id).toBe(anon.user.id);
  });

  it('upgrading to a taken e-mail is 409', async () => {
    const taken = await register();
    const anon = (await (await s.req('/auth/anonymous', { method: 'POST' })).json()) as Session;
    const res = await withToken('/auth/me', anon.access_token, {
      method: 'PATCH',
      body: JSON.stringify({ email: taken.user.email, password: PASSWORD }),
    });
    expect(res.status).toBe(409);
    expect((await errorOf(res)).code).toBe('conflict');
  });
});

/** Reads a profiles row from a backup (GET /_admin/backup: a side effect the API has no other endpoint for yet). */
function readProfile(id: string): Promise<Record<string, unknown> | undefined> {
  return s.readBackup((db) => db.prepare('SELECT * FROM profiles WHERE id = ?').get(id) as Record<string, unknown> | undefined);
}
