import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { killAll, startServe, tempDir, type ServeProcess } from '../helpers/cli.js';

// Secrets at rest and in the server's output, against a real `serve` process (its stdout and
// stderr are the server's output). The canary test reads the data folder's files as bytes:
// what is at rest is the point of it. The AAD test edits the project file between two runs.

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });
afterAll(killAll);

/** Every file under a folder (the control store, each project's file, WAL and shared memory). */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

const JSON_HEADERS = { 'content-type': 'application/json' };

describe('the canary: a secret never leaves in clear', () => {
  it('is absent from every response, error, the live log, the server output, the project file and its WAL', async () => {
    const dir = tempDir('pe-secrets-canary-');
    const canary = `canary-${randomBytes(12).toString('hex')}`;
    const forms = [canary, Buffer.from(canary).toString('base64'), Buffer.from(canary).toString('base64url'), Buffer.from(canary).toString('hex')];
    const s: ServeProcess = await startServe(['--data-dir', dir]);
    const key = s.info.keys.service;
    const seen: string[] = [];
    const call = async (path: string, init: RequestInit = {}, k: string = key): Promise<Response> => {
      const res = await s.req(path, { ...init, key: k });
      seen.push(`${res.status} ${JSON.stringify([...res.headers])} ${await res.clone().text()}`);
      return res;
    };

    expect((await call('/secrets/PAYMENT_KEY', { method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify({ value: canary }) })).status).toBe(200);
    // writes that fail, each carrying the canary
    const failing: [string, RequestInit, number][] = [
      ['/secrets/bad%20name', { method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify({ value: canary }) }, 400],
      ['/secrets/PAYMENT_KEY', { method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify({ value: canary, secret: canary }) }, 400],
      ['/secrets/PAYMENT_KEY', { method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify({ value: canary.repeat(3000) }) }, 400],
      ['/secrets/PAYMENT_KEY', { method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify({ [canary]: 1, value: 'x' }) }, 400],
      ['/secrets/PAYMENT_KEY', { method: 'PUT', headers: JSON_HEADERS, body: `{"value":"${canary}"` }, 400],
      ['/secrets/flags/f', { method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify({ value: canary, rollout: canary }) }, 400],
    ];
    for (const [path, init, status] of failing) expect((await call(path, init)).status).toBe(status);
    expect((await call('/secrets/PAYMENT_KEY', { method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify({ value: canary }) }, s.info.keys.publishable)).status).toBe(403);
    // reads: the listing, flags, evaluate, the live log
    expect((await call('/secrets')).status).toBe(200);
    expect((await call('/secrets/flags')).status).toBe(200);
    expect((await call('/secrets/flags/evaluate')).status).toBe(200);
    expect((await call('/live?since=0')).status).toBe(200);
    for (const text of seen) for (const f of forms) expect(text).not.toContain(f);
    expect(seen.join('\n')).toContain('"value":"********"');

    // at rest while running: project file, WAL, control store
    const whileRunning = filesUnder(dir);
    expect(whileRunning.some((p) => p.endsWith('project.db-wal'))).toBe(true);
    const check = (paths: string[]): void => {
      for (const p of paths) {
        const bytes = readFileSync(p);
        for (const f of forms) expect(bytes.includes(Buffer.from(f)), `${f} in ${p}`).toBe(false);
      }
    };
    check(whileRunning);
    const out = await s.stop();
    expect(out.code).toBe(0);
    check(filesUnder(dir));
    for (const f of forms) {
      expect(out.stdout).not.toContain(f);
      expect(out.stderr).not.toContain(f);
    }
  });
});

describe('AAD binding in the project file', () => {
  it('a ciphertext moved to another row fails the read with 500 internal, logged, never the other value', async () => {
    const dir = tempDir('pe-secrets-aad-');
    const first = await startServe(['--data-dir', dir]);
    const { keys, project_id: projectId } = first.info;
    for (const [name, value] of [
      ['ALPHA', 'alpha-plaintext'],
      ['EMAIL_FROM', 'from@example.com'],
    ]) {
      const res = await first.req(`/secrets/${name}`, { method: 'PUT', key: keys.service, headers: JSON_HEADERS, body: JSON.stringify({ value }) });
      expect(res.status).toBe(200);
    }
    expect((await first.stop()).code).toBe(0);

    // move ALPHA's ciphertext into the row of the setting EMAIL_FROM (which the listing shows in clear)
    const db = new Database(join(dir, 'projects', projectId, 'project.db'));
    const alpha = (db.prepare('SELECT value FROM "_svc_secrets.values" WHERE name = ?').get('ALPHA') as { value: string }).value;
    expect(db.prepare('UPDATE "_svc_secrets.values" SET value = ? WHERE name = ?').run(alpha, 'EMAIL_FROM').changes).toBe(1);
    db.close();

    const second = await startServe(['--data-dir', dir]);
    expect(second.info.project_id).toBe(projectId);
    const res = await second.req('/secrets', { key: keys.service });
    const text = await res.text();
    expect(res.status).toBe(500);
    const requestId = res.headers.get('x-request-id')!;
    expect(JSON.parse(text)).toEqual({ error: { code: 'internal', message: `internal error (request ${requestId})` } });
    expect(text).not.toContain('alpha-plaintext');
    // logged with the request id and the record, never a value
    const logged = second.stderr();
    expect(logged).toContain(`request ${requestId} failed`);
    expect(logged).toContain(`the sealed secrets value "EMAIL_FROM" of project ${projectId} does not open`);
    expect(logged).not.toContain('alpha-plaintext');
    // rewriting the setting repairs it
    const fixed = await second.req('/secrets/EMAIL_FROM', { method: 'PUT', key: keys.service, headers: JSON_HEADERS, body: JSON.stringify({ value: 'new@example.com' }) });
    expect(fixed.status).toBe(200);
    const list = (await (await second.req('/secrets', { key: keys.service })).json()) as { secrets: { name: string; value: string }[] };
    expect(list.secrets.map((e) => [e.name, e.value])).toEqual([
      ['ALPHA', '********'],
      ['EMAIL_FROM', 'new@example.com'],
    ]);
    expect((await second.stop()).code).toBe(0);
  });
});
