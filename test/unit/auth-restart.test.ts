// A unit test, not an API test: it restarts servers in-process on one data folder and reads
// project.db to check what is stored at rest (docs/architecture.md "Tests").
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { jwtVerify } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createServer, type EdgeServer } from '../../src/server.js';

// Revocations survive a restart: the new process reloads recent ones from the project database.
const dataDir = mkdtempSync(join(tmpdir(), 'pe-auth-restart-'));
let server: EdgeServer | null = null;
afterAll(async () => {
  await server?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function start(): Promise<{ url: string; server: EdgeServer }> {
  const s = createServer(loadConfig({ port: 0, host: '127.0.0.1', dataDir, rateLimit: { enabled: false } }, process.env));
  const { url } = await s.listen();
  return { url, server: s };
}

describe('after a restart', () => {
  it('a logged-out or rotated access token still fails, a live one still works', async () => {
    let s = await start();
    server = s.server;
    const { publishable } = s.server.projects.create('restart');
    const headers = (token?: string): Record<string, string> => ({
      'x-service-key': publishable,
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    });
    const post = async (url: string, path: string, body: unknown, token?: string) =>
      fetch(url + path, { method: 'POST', headers: headers(token), body: JSON.stringify(body) });
    const signup = async (email: string) =>
      (await (await post(s.url, '/auth/register', { email, password: 'long enough password' })).json()) as {
        access_token: string;
        refresh_token: string;
      };
    const out = await signup('out@example.com');
    const rotated = await signup('rot@example.com');
    const live = await signup('live@example.com');
    expect((await post(s.url, '/auth/logout', {}, out.access_token)).status).toBe(204);
    expect((await post(s.url, '/auth/refresh', { refresh_token: rotated.refresh_token })).status).toBe(200);
    await s.server.close();
    server = null;

    s = await start();
    server = s.server;
    const me = (token: string) => fetch(`${s.url}/auth/me`, { headers: headers(token) });
    expect((await me(out.access_token)).status).toBe(401);
    expect((await me(rotated.access_token)).status).toBe(401);
    expect((await me(live.access_token)).status).toBe(200);
  });
});

describe('the signing secret at rest', () => {
  const secretOf = (projectId: string): string => {
    const db = new Database(join(dataDir, 'projects', projectId, 'project.db'), { readonly: true, fileMustExist: true });
    try {
      return (db.prepare(`SELECT value FROM "_svc_auth.config" WHERE key = 'jwt_secret'`).get() as { value: string }).value;
    } finally {
      db.close();
    }
  };
  const register = async (url: string, key: string, email: string) =>
    fetch(`${url}/auth/register`, {
      method: 'POST',
      headers: { 'x-service-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'long enough password' }),
    });

  it('is stored sealed with the master key, never in the clear', async () => {
    const s = await start();
    server = s.server;
    const { project, publishable } = s.server.projects.create('sealed');
    const id = project.id;
    expect((await register(s.url, publishable, 'a@example.com')).status).toBe(200);
    const stored = secretOf(id);
    expect(stored).toMatch(/^v2\.[\w-]{16}\.[\w-]{22}\.[\w-]+$/);
    await s.server.close();
    server = null;
  });

  it('a secret an older version stored in the clear keeps signing and is sealed on first use', async () => {
    let s = await start();
    server = s.server;
    const { project, publishable } = s.server.projects.create('legacy');
    const id = project.id;
    // Opening the project once creates its tables (migrations run on first use).
    expect((await fetch(`${s.url}/db/tables`, { headers: { 'x-service-key': publishable } })).status).toBe(200);
    await s.server.close();
    server = null;
    const plain = randomBytes(32).toString('base64url');
    const db = new Database(join(dataDir, 'projects', id, 'project.db'));
    db.prepare(`INSERT INTO "_svc_auth.config" (key, value) VALUES ('jwt_secret', ?)`).run(plain);
    db.close();

    s = await start();
    server = s.server;
    const res = await register(s.url, publishable, 'old@example.com');
    expect(res.status).toBe(200);
    const { access_token, user } = (await res.json()) as { access_token: string; user: { id: string } };
    // The token is signed with the old secret, so tokens issued before the upgrade stay valid.
    const { payload } = await jwtVerify(access_token.slice('lca_'.length), Buffer.from(plain, 'base64url'), { audience: id });
    expect(payload.sub).toBe(user.id);
    expect(payload.email).toBe('old@example.com');
    expect(secretOf(id)).toMatch(/^v2\./);
    expect(secretOf(id)).not.toContain(plain);
  });
});
