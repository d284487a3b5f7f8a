import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
