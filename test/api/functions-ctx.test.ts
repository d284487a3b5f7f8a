import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, deploy, invoke } from '../helpers/functions.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// ctx as the caller: the same answers as the HTTP API gives that caller (scopes and RLS).
// Functions may reach loopback here (as the issue allows for tests), to call a local server.
let s: TestServer;
let web: Server;
let webUrl = '';
const svc = () => ({ key: s.keys.service });

interface User {
  id: string;
  token: string;
}
let alice: User;
let bob: User;
const OWN = "data->>'owner' = auth.uid()";

async function register(email: string): Promise<User> {
  const r = await call(s, 'POST', '/auth/register', { email, password: 'correct horse battery staple 1' });
  expect(r.status, r.text).toBe(200);
  return { id: r.body.user.id, token: r.body.access_token };
}

// One function that runs any ctx.db operation, answering its value or its error's code.
const DB_FN = `export default async ({ op, args }, ctx) => {
  try { return { ok: await ctx.db[op](...args) }; } catch (e) { return { code: e.code, status: e.status, message: e.message }; }
};`;

beforeAll(async () => {
  s = await startTestServer({ outboundLoopback: ['function'] });
  web = createServer((req, res) => {
    if (req.url === '/json') {
      res.setHeader('content-type', 'application/json');
      res.setHeader('x-test', 'yes');
      res.end(JSON.stringify({ hello: 'world', method: req.method, auth: req.headers.authorization ?? null }));
    } else if (req.url === '/private') {
      res.statusCode = 302;
      res.setHeader('location', 'http://169.254.169.254/latest/meta-data/');
      res.end();
    } else if (req.url === '/echo') {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => res.end(`${req.method} ${body}`));
    } else if (req.url === '/big') {
      res.end(Buffer.alloc(5 * 1024 * 1024 + 10, 97));
    } else res.end('plain');
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  webUrl = `http://127.0.0.1:${(web.address() as { port: number }).port}`;
  alice = await register('alice-fn@example.com');
  bob = await register('bob-fn@example.com');
  expect((await call(s, 'POST', '/db/tables', { name: 'todos' }, svc())).status).toBe(201);
  const put = await call(s, 'PUT', '/db/tables/todos/rls', { enabled: true, policies: { select: OWN, insert: OWN, update: OWN, delete: OWN } }, svc());
  expect(put.status, put.text).toBe(200);
  await deploy(s, 'db', DB_FN);
});
afterAll(async () => {
  await new Promise((r) => web.close(r));
  await s.close();
});

const dbOp = (op: string, args: unknown[], who: { key?: string; token?: string } = {}) => invoke(s, 'db', { op, args }, who);

describe('ctx.user', () => {
  it('is null with a key alone and {id, role} with a Bearer user', async () => {
    await deploy(s, 'whoami', 'export default (a, ctx) => ctx.user;');
    expect((await invoke(s, 'whoami')).body.result).toBeNull();
    expect((await invoke(s, 'whoami', null, { key: s.keys.service })).body.result).toBeNull();
    expect((await invoke(s, 'whoami', null, { token: alice.token })).body.result).toEqual({ id: alice.id, role: 'authenticated' });
  });
});

describe('ctx.db as the caller, under RLS', () => {
  it('insert, get, list, update and delete as a user; the same rows as the HTTP API shows them', async () => {
    const ins = await dbOp('insert', ['todos', { owner: alice.id, t: 'mine' }], { token: alice.token });
    expect(ins.status, ins.text).toBe(200);
    const row = ins.body.result.ok;
    expect(row).toMatchObject({ id: expect.any(String), data: { owner: alice.id, t: 'mine' } });
    const http = await call(s, 'GET', `/db/tables/todos/rows/${row.id}`, undefined, { token: alice.token });
    expect(http.body).toEqual(row);
    expect((await dbOp('get', ['todos', row.id], { token: alice.token })).body.result.ok).toEqual(row);
    const list = await dbOp('list', ['todos', { filter: 't.eq.mine', count: 'exact' }], { token: alice.token });
    const httpList = await call(s, 'GET', '/db/tables/todos/rows?filter=t.eq.mine&count=exact', undefined, { token: alice.token });
    expect(list.body.result.ok).toEqual(httpList.body);
    expect(list.body.result.ok.rows).toEqual([row]);
    const upd = await dbOp('update', ['todos', row.id, { t: 'changed' }], { token: alice.token });
    expect(upd.body.result.ok.data).toEqual({ owner: alice.id, t: 'changed' });
    expect((await dbOp('delete', ['todos', row.id], { token: alice.token })).body.result.ok).toEqual({ deleted: true });
    expect((await call(s, 'GET', `/db/tables/todos/rows/${row.id}`, undefined, svc())).status).toBe(404);
  });

  it("another user's rows are hidden and a forged owner is rls_denied; the service key bypasses RLS", async () => {
    const mine = (await dbOp('insert', ['todos', { owner: alice.id, t: 'private' }], { token: alice.token })).body.result.ok;
    expect((await dbOp('get', ['todos', mine.id], { token: bob.token })).body.result).toMatchObject({ code: 'not_found', status: 404 });
    expect((await dbOp('list', ['todos'], { token: bob.token })).body.result.ok.rows).toEqual([]);
    expect((await dbOp('update', ['todos', mine.id, { t: 'x' }], { token: bob.token })).body.result.code).toBe('not_found');
    const forged = await dbOp('insert', ['todos', { owner: alice.id, t: 'forged' }], { token: bob.token });
    expect(forged.body.result).toMatchObject({ code: 'rls_denied', status: 403 });
    expect((await dbOp('insert', ['todos', { owner: null }])).body.result.code).toBe('rls_denied');
    expect((await dbOp('list', ['todos', { filter: 't.eq.private' }], { key: s.keys.service })).body.result.ok.rows).toEqual([mine]);
  });

  it('query(sql, params) answers what POST /db/query answers the same caller', async () => {
    await dbOp('insert', ['todos', { owner: bob.id, t: 'bobs' }], { token: bob.token });
    const sql = "select data->>'t' as t from todos order by t";
    for (const who of [{ token: alice.token }, { token: bob.token }, { key: s.keys.service }, {}]) {
      const viaFn = await dbOp('query', [sql, []], who);
      const viaHttp = await call(s, 'POST', '/db/query', { sql }, who);
      expect(viaHttp.status).toBe(200);
      expect(viaFn.body.result.ok).toEqual(viaHttp.body);
    }
    const p = await dbOp('query', ["select data->>'t' as t from todos where data->>'t' = $1", ['bobs']], { token: bob.token });
    expect(p.body.result.ok.rows).toEqual([{ t: 'bobs' }]);
    // a write through the publishable key's db.query is refused as on /db/query
    const w = await dbOp('query', ['delete from todos', []]);
    const wh = await call(s, 'POST', '/db/query', { sql: 'delete from todos' });
    expect(w.body.result.code).toBe(wh.body.error.code);
  });

  it("a key without data scopes cannot use ctx.db (missing_scope), as it could not use /db", async () => {
    const { secret } = s.server.projects.createKey(s.projectId, 'fn-only', ['functions:invoke'], false);
    const r = await dbOp('list', ['todos'], { key: secret });
    expect(r.status, r.text).toBe(200);
    expect(r.body.result).toMatchObject({ code: 'missing_scope', status: 401 });
    expect((await dbOp('insert', ['todos', {}], { key: secret })).body.result.code).toBe('missing_scope');
  });

  it('bad arguments are invalid_field, not a crash', async () => {
    expect((await dbOp('get', [42, 'x'])).body.result).toMatchObject({ code: 'invalid_field', status: 400 });
    expect((await dbOp('list', ['todos', 'filter'])).body.result.code).toBe('invalid_field');
    expect((await dbOp('get', ['no_such_table', 'x'])).body.result.code).toBe('not_found');
  });
});

describe('ctx.secrets', () => {
  it('reads a secret set through PUT /secrets/{name} only when listed in the secrets option', async () => {
    const put = await call(s, 'PUT', '/secrets/STRIPE_KEY', { value: 'sk_test_fn' }, svc());
    expect(put.status, put.text).toBe(200);
    expect((await call(s, 'PUT', '/secrets/OTHER_KEY', { value: 'not for you' }, svc())).status).toBe(200);
    const src = `export default (name, ctx) => { try { return { value: ctx.secrets.get(name) }; } catch (e) { return { error: e.message }; } };`;
    await deploy(s, 'sec', src, { secrets: ['STRIPE_KEY', 'UNSET_KEY'] });
    expect((await invoke(s, 'sec', 'STRIPE_KEY')).body.result).toEqual({ value: 'sk_test_fn' });
    expect((await invoke(s, 'sec', 'UNSET_KEY')).body.result).toEqual({ value: null });
    expect((await invoke(s, 'sec', 'OTHER_KEY')).body.result).toEqual({ error: 'the secret "OTHER_KEY" is not listed in the function\'s "secrets" option' });
    // a new value is read on the next call
    await call(s, 'PUT', '/secrets/STRIPE_KEY', { value: 'sk_test_two' }, svc());
    expect((await invoke(s, 'sec', 'STRIPE_KEY')).body.result).toEqual({ value: 'sk_test_two' });
  });

  it("another project's function never reads this project's secrets", async () => {
    const p = s.server.projects.create('other-sec');
    const src = 'export default (n, ctx) => ctx.secrets.get("STRIPE_KEY");';
    const d = await call(s, 'PUT', '/functions/sec', { source: src, secrets: ['STRIPE_KEY'] }, { key: p.service });
    expect(d.status, d.text).toBe(201);
    expect((await invoke(s, 'sec', null, { key: p.publishable })).body.result).toBeNull();
  });
});

describe('ctx.fetch', () => {
  it('answers status, headers, text() and json(); sends method, headers and body', async () => {
    const src = `export default async (base, ctx) => {
      const r = await ctx.fetch(base + '/json', { headers: { authorization: 'Bearer t' } });
      const e = await ctx.fetch(base + '/echo', { method: 'POST', body: 'payload' });
      return { status: r.status, type: r.headers['content-type'], x: r.headers['x-test'], json: await r.json(), echo: await e.text() };
    };`;
    await deploy(s, 'fetcher', src);
    const r = await invoke(s, 'fetcher', webUrl);
    expect(r.status, r.text).toBe(200);
    expect(r.body.result).toEqual({ status: 200, type: 'application/json', x: 'yes', json: { hello: 'world', method: 'GET', auth: 'Bearer t' }, echo: 'POST payload' });
  });

  it('at most 10 calls per invocation; a response over 5 MiB and a redirect to a private address are refused', async () => {
    const src = `export default async (base, ctx) => {
      const out = [];
      for (let i = 0; i < 11; i++) { try { await ctx.fetch(base + '/'); out.push('ok'); } catch (e) { out.push(e.code); } }
      return out;
    };`;
    await deploy(s, 'many', src);
    const r = await invoke(s, 'many', webUrl);
    expect(r.body.result).toEqual([...Array(10).fill('ok'), 'rate_limited']);
    const one = 'export default async (url, ctx) => { try { return (await ctx.fetch(url)).status; } catch (e) { return e.code; } };';
    await deploy(s, 'one', one);
    expect((await invoke(s, 'one', `${webUrl}/private`)).body.result).toBe('outbound_blocked');
    expect((await invoke(s, 'one', `${webUrl}/big`)).body.result).toBe('response_too_large');
    expect((await invoke(s, 'one', 'file:///etc/passwd')).body.result).toBe('outbound_blocked');
  });
});

describe('ctx.log', () => {
  it('joins its arguments (JSON for values) as info lines, in order with console.*', async () => {
    await deploy(s, 'logger', 'export default (a, ctx) => { ctx.log("a", 1, { b: [2] }, null); console.error("e"); console.debug("d"); return 0; };');
    const r = await invoke(s, 'logger');
    expect(r.body.logs.map((l: { level: string; message: string }) => [l.level, l.message])).toEqual([
      ['info', 'a 1 {"b":[2]} null'],
      ['error', 'e'],
      ['debug', 'd'],
    ]);
  });
});
