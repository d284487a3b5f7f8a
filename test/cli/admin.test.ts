import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { cliJson, killAll, poll, runCli, startServe, tempDir, type ServeProcess } from '../helpers/cli.js';

// `project`, `key` and `operator` commands run as separate processes on the data folder of a
// running `serve`; their effect on the server is observed over HTTP. One server for the file;
// the tests are independent (each makes its own projects, keys, operators) and run concurrently.

const KEY = /^svc_live_[A-Za-z0-9_-]{16,}$/;
const OPERATOR = /^lcd_[A-Za-z0-9_-]{16,}$/;
const STACK = /\n\s+at .+:\d+/;

let dir: string;
let s: ServeProcess;

beforeAll(async () => {
  dir = tempDir();
  s = await startServe(['--data-dir', dir]);
});

// note: the "cli" vitest project does not inherit the root timeouts; spawned processes on a busy machine need them.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

afterAll(async () => {
  if (s) expect((await s.stop()).code).toBe(0);
  await killAll();
});

const cli = (...args: string[]) => runCli([...args, '--data-dir', dir]);
const json = <T>(...args: string[]) => cliJson<T>([...args, '--data-dir', dir]);
const status = async (path: string, key: string): Promise<number> => (await s.req(path, { key })).status;
/** Polls until the key gets `want` on GET /health/key (a change made by the CLI reaches the server within 1 s). */
const keyStatusBecomes = (key: string, want: number): Promise<boolean> => poll(async () => (await status('/health/key', key)) === want, 2000);

interface CreatedProject {
  project_id: string;
  name: string;
  keys: { publishable: string; service: string };
}
interface KeyOut {
  id: string;
  project_id: string;
  name: string;
  kind: string;
  hint: string;
  role: string;
  scopes: string[];
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  key?: string;
}

describe.concurrent('project', () => {
  it('create NAME --json prints the id and two keys that the running server accepts', async () => {
    const p = await json<CreatedProject>('project', 'create', 'shop');
    expect(p.name).toBe('shop');
    expect(p.project_id).toMatch(/^[a-z0-9]+$/);
    expect(p.keys.publishable).toMatch(KEY);
    expect(p.keys.service).toMatch(KEY);
    expect(existsSync(join(dir, 'projects', p.project_id))).toBe(true);
    expect(await keyStatusBecomes(p.keys.service, 200)).toBe(true);
    const body = (await (await s.req('/health/key', { key: p.keys.service })).json()) as { project_id: string; role: string };
    expect(body).toMatchObject({ project_id: p.project_id, role: 'service_role' });
  });

  it('create without --json prints the id and the keys as text', async () => {
    const r = await cli('project', 'create', 'text-output');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/project text-output created: [a-z0-9]+/);
    expect(r.stdout.match(/svc_live_[A-Za-z0-9_-]+/g)).toHaveLength(2);
  });

  it('list shows every project, as a table and as JSON', async () => {
    const p = await json<CreatedProject>('project', 'create', 'listed');
    const list = await json<{ projects: { id: string; name: string; created_at: string }[] }>('project', 'list');
    expect(list.projects.map((x) => x.id)).toEqual(expect.arrayContaining([s.info.project_id, p.project_id]));
    expect(list.projects.find((x) => x.id === p.project_id)).toMatchObject({ name: 'listed', created_at: expect.any(String) as string });
    const text = await cli('project', 'list');
    expect(text.code).toBe(0);
    expect(text.stdout.split('\n')[0]).toMatch(/^id\s+name\s+created_at$/);
    expect(text.stdout).toContain(p.project_id);
    expect(text.stdout).toContain('listed');
  });

  it('delete ID removes its folder, and the running server rejects its keys with 401', async () => {
    const p = await json<CreatedProject>('project', 'create', 'doomed');
    expect(await keyStatusBecomes(p.keys.service, 200)).toBe(true);
    // the server opens the project for a request that logs to it
    expect(await status('/live', p.keys.service)).toBe(200);

    const r = await json<{ deleted: string }>('project', 'delete', p.project_id);
    expect(r).toEqual({ deleted: p.project_id });
    expect(existsSync(join(dir, 'projects', p.project_id))).toBe(false);
    expect(await keyStatusBecomes(p.keys.service, 401)).toBe(true);
    expect(await status('/health/key', p.keys.publishable)).toBe(401);
    expect(existsSync(join(dir, 'projects', p.project_id))).toBe(false);

    const list = await json<{ projects: { id: string }[] }>('project', 'list');
    expect(list.projects.map((x) => x.id)).not.toContain(p.project_id);
    // other projects are untouched
    expect(await status('/health/key', s.info.keys.service)).toBe(200);
  });

  it('delete of an unknown id, and create with an invalid name, fail with exit 1 and a message', async () => {
    const del = await cli('project', 'delete', 'no-such-project');
    expect(del.code).toBe(1);
    expect(del.stderr).toContain('not found');
    expect(del.stderr).not.toMatch(STACK);

    const bad = await cli('project', 'create', '../escape');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('name');
    expect(bad.stderr).not.toMatch(STACK);
  });
});

describe.concurrent('key', () => {
  const project = (): string => s.info.project_id;

  it('create --scopes data:read --json prints a key that the running server accepts with exactly that scope', async () => {
    const k = await json<KeyOut>('key', 'create', '--project', project(), '--scopes', 'data:read', '--name', 'reader');
    expect(k.key).toMatch(KEY);
    expect(k).toMatchObject({ project_id: project(), name: 'reader', role: 'anon', scopes: ['data:read'], revoked_at: null });
    expect(k.id).toMatch(/^key_/);
    expect(Object.keys(k)).not.toContain('sealed');

    expect(await keyStatusBecomes(k.key!, 200)).toBe(true);
    const who = (await (await s.req('/health/key', { key: k.key! })).json()) as { project_id: string; key_id: string; role: string; scopes: string[] };
    expect(who).toMatchObject({ project_id: project(), key_id: k.id, role: 'anon', scopes: ['data:read'] });

    // the scope is enforced: the live log needs auth:admin
    const live = await s.req('/live', { key: k.key! });
    expect(live.status).toBe(401);
    expect(((await live.json()) as { error: { code: string } }).error.code).toBe('missing_scope');
  });

  it('create --service makes a service_role key with every scope', async () => {
    const k = await json<KeyOut>('key', 'create', '--project', project(), '--service');
    expect(k.role).toBe('service_role');
    expect(k.scopes).toContain('auth:admin');
    expect(await keyStatusBecomes(k.key!, 200)).toBe(true);
    const who = (await (await s.req('/health/key', { key: k.key! })).json()) as { role: string };
    expect(who.role).toBe('service_role');
    expect(await status('/live', k.key!)).toBe(200);
  });

  it('list never shows a secret (nor its sealed copy), as a table and as JSON', async () => {
    const k = await json<KeyOut>('key', 'create', '--project', project(), '--scopes', 'storage:read,data:read');
    const secrets = [k.key!, s.info.keys.publishable, s.info.keys.service];

    const list = await cli('key', 'list', '--project', project(), '--json');
    expect(list.code).toBe(0);
    const keys = (JSON.parse(list.stdout) as { keys: KeyOut[] }).keys;
    expect(keys.find((x) => x.id === k.id)).toMatchObject({ scopes: ['storage:read', 'data:read'], role: 'anon', revoked_at: null });
    expect(keys.map((x) => x.kind)).toEqual(expect.arrayContaining(['publishable', 'service', 'custom']));
    for (const x of keys) {
      expect(Object.keys(x)).not.toContain('key');
      expect(Object.keys(x)).not.toContain('sealed');
    }

    const text = await cli('key', 'list', '--project', project());
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(k.id);
    for (const out of [list.stdout, text.stdout]) {
      for (const secret of secrets) expect(out).not.toContain(secret);
      expect(out).not.toContain('v1.');
    }
  });

  it('revoke KEY_ID: the running server answers 401 for the key', async () => {
    const k = await json<KeyOut>('key', 'create', '--project', project(), '--scopes', 'data:read');
    expect(await keyStatusBecomes(k.key!, 200)).toBe(true);

    const before = Date.now();
    const r = await json<KeyOut>('key', 'revoke', k.id);
    expect(r.id).toBe(k.id);
    // revoked now: an ISO time between the command's start and its end
    expect(r.revoked_at).toBe(new Date(Date.parse(r.revoked_at!)).toISOString());
    expect(Date.parse(r.revoked_at!)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(r.revoked_at!)).toBeLessThanOrEqual(Date.now());
    expect(await keyStatusBecomes(k.key!, 401)).toBe(true);
    const res = await s.req('/health/key', { key: k.key! });
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');

    const keys = (await json<{ keys: KeyOut[] }>('key', 'list', '--project', project())).keys;
    expect(keys.find((x) => x.id === k.id)?.revoked_at).toBe(r.revoked_at);
    // other keys still work
    expect(await status('/health/key', s.info.keys.service)).toBe(200);
  });

  it('an unknown scope is a usage error (exit 2, a clear message) and creates nothing', async () => {
    const { project_id } = await json<CreatedProject>('project', 'create', 'scoped');
    const r = await cli('key', 'create', '--project', project_id, '--scopes', 'data:read,data:everything', '--json');
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('unknown scope "data:everything"');
    expect(r.stderr).toContain('data:read');
    expect(r.stderr).not.toMatch(STACK);
    const keys = (await json<{ keys: KeyOut[] }>('key', 'list', '--project', project_id)).keys;
    expect(keys.map((k) => k.kind).sort()).toEqual(['publishable', 'service']);
  });

  it('errors: unknown project, unknown key id, missing --project or --scopes', async () => {
    const [noProject, noKey, missingProject, missingScopes] = await Promise.all([
      cli('key', 'create', '--project', 'nope', '--scopes', 'data:read'),
      cli('key', 'revoke', 'key_doesnotexist'),
      cli('key', 'list'),
      cli('key', 'create', '--project', project()),
    ]);
    expect(noProject.code).toBe(1);
    expect(noProject.stderr).toContain('not found');
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toContain('not found');
    expect(missingProject.code).toBe(2);
    expect(missingProject.stderr).toContain('--project');
    expect(missingScopes.code).toBe(2);
    expect(missingScopes.stderr).toContain('--scopes');
    for (const r of [noProject, noKey, missingProject, missingScopes]) expect(r.stderr).not.toMatch(STACK);
  });
});

describe.concurrent('operator', () => {
  const asOperator = (token: string, path: string) =>
    fetch(`${s.url}${path}`, { headers: { authorization: `Bearer ${token}`, 'x-service-project': s.info.project_id } });

  it('create EMAIL, then login EMAIL prints an lcd_ token the running server accepts', async () => {
    const op = await json<{ id: string; email: string }>('operator', 'create', 'Ops@Example.com');
    expect(op.email).toBe('ops@example.com');
    expect(op.id).toMatch(/^op_/);

    const before = Date.now();
    const login = await json<{ operator_token: string; expires_at: string }>('operator', 'login', 'ops@example.com');
    const after = Date.now();
    expect(login.operator_token).toMatch(OPERATOR);
    // valid 7 days from the login (docs/operations.md)
    const week = 7 * 86_400_000;
    expect(Date.parse(login.expires_at)).toBeGreaterThanOrEqual(before + week - 1000);
    expect(Date.parse(login.expires_at)).toBeLessThanOrEqual(after + week);
    expect(await poll(async () => (await asOperator(login.operator_token, '/health/key')).status === 200)).toBe(true);
    const who = (await (await asOperator(login.operator_token, '/health/key')).json()) as { project_id: string; operator: string };
    expect(who).toMatchObject({ project_id: s.info.project_id, operator: 'ops@example.com' });
    const projects = await asOperator(login.operator_token, '/_admin/projects');
    expect(projects.status).toBe(200);
    expect(((await projects.json()) as { projects: { id: string }[] }).projects.map((p) => p.id)).toContain(s.info.project_id);

    // text mode prints just the token
    const text = await cli('operator', 'login', 'ops@example.com');
    expect(text.code).toBe(0);
    expect(text.stdout.trim()).toMatch(OPERATOR);
  });

  it('create --password: POST /_admin/login with the password gives a working token; a wrong one is 401 invalid_credentials', async () => {
    const [r, nopw] = await Promise.all([
      cli('operator', 'create', 'pw@example.com', '--password', 'correct horse battery'),
      cli('operator', 'create', 'nopw@example.com'),
    ]);
    expect(r.code).toBe(0);
    expect(nopw.code).toBe(0);
    const login = (body: unknown) =>
      fetch(`${s.url}/_admin/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

    const ok = await login({ email: 'pw@example.com', password: 'correct horse battery' });
    expect(ok.status).toBe(200);
    const { token } = (await ok.json()) as { token: string };
    expect(token).toMatch(OPERATOR);
    expect((await asOperator(token, '/live')).status).toBe(200);

    for (const body of [
      { email: 'pw@example.com', password: 'wrong horse battery' },
      { email: 'nopw@example.com', password: 'no password was ever set' },
      { email: 'nobody@example.com', password: 'whatever it is' },
    ]) {
      const bad = await login(body);
      expect(bad.status).toBe(401);
      expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('invalid_credentials');
    }
  });

  it('errors: duplicate e-mail, unknown e-mail, too short a password, missing EMAIL', async () => {
    await json('operator', 'create', 'dup@example.com');
    const [dup, unknown, short, missing] = await Promise.all([
      cli('operator', 'create', 'dup@example.com'),
      cli('operator', 'login', 'ghost@example.com'),
      cli('operator', 'create', 'short@example.com', '--password', 'short'),
      cli('operator', 'login'),
    ]);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain('already exists');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('ghost@example.com');
    expect(short.code).toBe(1);
    expect(short.stderr).toContain('password');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('EMAIL');
    for (const r of [dup, unknown, short, missing]) {
      expect(r.stdout).toBe('');
      expect(r.stderr).not.toMatch(STACK);
    }
  });
});
