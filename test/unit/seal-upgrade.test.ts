// A unit test, not an API test: it restarts servers in-process on one data folder and reads
// project.db to check what is stored at rest (docs/architecture.md "Tests").
import { createCipheriv, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { jwtVerify } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createServer, type EdgeServer } from '../../src/server.js';

// Values sealed by versions before the v2 format (`v1.<iv>.<tag>.<ct>`, AES-256-GCM directly
// under master.key, no additional data) keep opening after an upgrade and are rewritten as v2
// in place on first use. The old format is written here as the old code wrote it.
const dataDir = mkdtempSync(join(tmpdir(), 'pe-seal-upgrade-'));
let server: EdgeServer | null = null;
afterAll(async () => {
  await server?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const V2 = /^v2\.[\w-]{16}\.[\w-]{22}\.[\w-]+$/;

function sealV1(plain: string): string {
  const key = Buffer.from(readFileSync(join(dataDir, 'master.key'), 'utf8').trim(), 'hex');
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
  return ['v1', iv, c.getAuthTag(), body].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}

/** What the server logged (message and error message), as `serve` prints it. */
const logged: string[] = [];

async function start(): Promise<{ url: string; server: EdgeServer }> {
  await server?.close();
  const s = createServer(
    loadConfig({ port: 0, host: '127.0.0.1', dataDir, rateLimit: { enabled: false }, authRefreshReuseIntervalS: 3600 }, process.env),
    (msg, err) => logged.push(`${msg}: ${err instanceof Error ? err.message : String(err)}`),
  );
  server = s;
  const { url } = await s.listen();
  return { url, server: s };
}

function withDb<T>(file: string, fn: (db: Database.Database) => T): T {
  const db = new Database(file, { fileMustExist: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}
const projectDb = (id: string): string => join(dataDir, 'projects', id, 'project.db');
const controlDb = (): string => join(dataDir, 'control.db');
const jwtSecret = (id: string): string =>
  withDb(projectDb(id), (db) => db.prepare(`SELECT value FROM "_svc_auth.config" WHERE key = 'jwt_secret'`).pluck().get() as string);
const sealedCopies = (id: string): Record<string, string> =>
  Object.fromEntries(withDb(controlDb(), (db) => db.prepare('SELECT kind, sealed FROM api_keys WHERE project_id = ? AND sealed IS NOT NULL').raw().all(id) as [string, string][]));

describe('a JWT secret sealed in the v1 format', () => {
  it('keeps signing and verifying, is rewritten as v2, and refresh-token derivation is unchanged', async () => {
    let s = await start();
    const { project, publishable } = s.server.projects.create('jwt-v1');
    const id = project.id;
    const post = (url: string, path: string, body: unknown, token?: string) =>
      fetch(url + path, {
        method: 'POST',
        headers: { 'x-service-key': publishable, 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      });
    // Opening the project once creates its tables (migrations run on first use).
    expect((await fetch(`${s.url}/db/tables`, { headers: { 'x-service-key': publishable } })).status).toBe(200);
    await s.server.close();

    const plain = randomBytes(32).toString('base64url');
    const v1 = sealV1(plain);
    withDb(projectDb(id), (db) => db.prepare(`INSERT INTO "_svc_auth.config" (key, value) VALUES ('jwt_secret', ?)`).run(v1));

    s = await start();
    const reg = await post(s.url, '/auth/register', { email: 'old@example.com', password: 'long enough password' });
    expect(reg.status).toBe(200);
    const first = (await reg.json()) as { access_token: string; refresh_token: string };
    // signed with the secret the v1 value holds
    const { payload } = await jwtVerify(first.access_token.slice('lca_'.length), Buffer.from(plain, 'base64url'), { audience: id });
    expect(payload.sub).toBeTypeOf('string');
    const rotated = await post(s.url, '/auth/refresh', { refresh_token: first.refresh_token });
    expect(rotated.status).toBe(200);
    const pair = await rotated.text();
    // rewritten in place as v2, never in the clear
    const stored = jwtSecret(id);
    expect(stored).toMatch(V2);
    expect(stored).not.toContain(plain);

    s = await start();
    expect(jwtSecret(id)).toBe(stored);
    const { access_token } = JSON.parse(pair) as { access_token: string };
    expect((await fetch(`${s.url}/auth/me`, { headers: { 'x-service-key': publishable, authorization: `Bearer ${access_token}` } })).status).toBe(200);
    // within the reuse interval the same refresh answers the same pair: the successor is
    // derived under the same secret, now read from its v2 form
    const again = await post(s.url, '/auth/refresh', { refresh_token: first.refresh_token });
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(pair);
    expect(jwtSecret(id)).toBe(stored);
  });

  it('a v2 secret copied from another project does not open there: the request fails with 500, nothing is rewritten', async () => {
    let s = await start();
    const a = s.server.projects.create('copy-from');
    const b = s.server.projects.create('copy-to');
    const register = (url: string, key: string) =>
      fetch(`${url}/auth/register`, {
        method: 'POST',
        headers: { 'x-service-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'x@example.com', password: 'long enough password' }),
      });
    expect((await register(s.url, a.publishable)).status).toBe(200);
    expect((await fetch(`${s.url}/db/tables`, { headers: { 'x-service-key': b.publishable } })).status).toBe(200);
    await s.server.close();
    const copied = jwtSecret(a.project.id);
    withDb(projectDb(b.project.id), (db) => db.prepare(`INSERT INTO "_svc_auth.config" (key, value) VALUES ('jwt_secret', ?)`).run(copied));

    s = await start();
    logged.length = 0;
    const res = await register(s.url, b.publishable);
    expect(res.status).toBe(500);
    const { error } = (await res.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe('internal');
    expect(error.message).toMatch(/^internal error \(request [\w-]+\)$/);
    expect(logged).toEqual([
      expect.stringMatching(
        new RegExp(
          `^request [\\w-]+ failed: the sealed jwt value "jwt_secret" of project ${b.project.id} does not open: it was sealed for another project, purpose or name, altered, or sealed under another master key$`,
        ),
      ),
    ]);
    expect(jwtSecret(b.project.id)).toBe(copied);
    expect((await register(s.url, a.publishable)).status).toBe(409);
  });
});

describe('bootstrap keys sealed in the v1 format (control.db)', () => {
  it('still open, are rewritten as v2 in their rows, and a copy moved to another row does not open', async () => {
    let s = await start();
    const { project, publishable, service } = s.server.projects.create('default', { sealKeys: true });
    const id = project.id;
    expect(s.server.control.sealedKeys(id)).toEqual({ publishable, service });
    const fresh = sealedCopies(id);
    expect(fresh['publishable']).toMatch(V2);
    expect(fresh['service']).toMatch(V2);
    await s.server.close();

    withDb(controlDb(), (db) => {
      const set = db.prepare('UPDATE api_keys SET sealed = ? WHERE project_id = ? AND kind = ?');
      set.run(sealV1(publishable), id, 'publishable');
      set.run(sealV1(service), id, 'service');
    });
    s = await start();
    expect(s.server.control.sealedKeys(id)).toEqual({ publishable, service });
    const resealed = sealedCopies(id);
    expect(resealed['publishable']).toMatch(V2);
    expect(resealed['service']).toMatch(V2);
    expect(s.server.control.sealedKeys(id)).toEqual({ publishable, service });
    expect(sealedCopies(id)).toEqual(resealed);
    expect((await fetch(`${s.url}/health/key`, { headers: { 'x-service-key': publishable } })).status).toBe(200);

    // the sealed copy of the service key, moved into the publishable key's row
    withDb(controlDb(), (db) => db.prepare('UPDATE api_keys SET sealed = ? WHERE project_id = ? AND kind = ?').run(resealed['service'], id, 'publishable'));
    expect(() => s.server.control.sealedKeys(id)).toThrow(/^the sealed keys value "key_\w+" of project \w+ does not open: it was sealed for another project, purpose or name/);
  });
});
