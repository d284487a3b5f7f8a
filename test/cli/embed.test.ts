import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as Api from '../../src/index.js';
import { cliEnv, killAll, tempDir } from '../helpers/cli.js';

// The programmatic API as a user gets it: `import { startEdge } from 'platform-edge'`, the
// built package (build/index.mjs through package.json "exports"), and the CI recipe of
// docs/operations.md run as written under Vitest.

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const PACKAGE = 'platform-edge';
let api: typeof Api;

beforeAll(async () => {
  if (!existsSync(join(REPO, 'build', 'index.mjs'))) throw new Error('build/index.mjs is missing: run `npm run build` before the CLI tests');
  // note: the package imports itself by name (package.json "exports"), as a user's code does.
  api = (await import(/* @vite-ignore */ PACKAGE)) as typeof Api;
});

afterAll(killAll);

const ephemeralDirs = (tmp: string): string[] => readdirSync(tmp).filter((n) => n.startsWith('platform-edge-'));

/** Runs a command to its end (killed after 60 s). */
function run(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    p.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), 60_000);
    p.once('error', reject);
    p.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

describe('startEdge', () => {
  it.each(['uws', 'node'] as const)('starts an ephemeral server (%s) with the default project; close() stops it and deletes the folder', async (http) => {
    const edge = await api.startEdge({ http });
    try {
      expect(Object.keys(edge).sort()).toEqual(['close', 'dataDir', 'http', 'keys', 'operatorToken', 'port', 'projectId', 'url']);
      expect(edge.http).toBe(http);
      expect(edge.url).toBe(`http://127.0.0.1:${edge.port}`);
      expect(edge.port).toBeGreaterThan(0);
      expect(edge.keys.publishable).toMatch(/^svc_live_/);
      expect(edge.keys.service).toMatch(/^svc_live_/);
      expect(existsSync(join(edge.dataDir, 'projects', edge.projectId))).toBe(true);

      const svc = await fetch(`${edge.url}/health/key`, { headers: { 'x-service-key': edge.keys.service } });
      expect(svc.status).toBe(200);
      expect(await svc.json()).toMatchObject({ project_id: edge.projectId, role: 'service_role' });
      const pub = await fetch(`${edge.url}/health/key`, { headers: { 'x-service-key': edge.keys.publishable } });
      expect(await pub.json()).toMatchObject({ project_id: edge.projectId, role: 'anon' });
      const op = await fetch(`${edge.url}/health/key`, { headers: { authorization: `Bearer ${edge.operatorToken}`, 'x-service-project': edge.projectId } });
      expect(await op.json()).toMatchObject({ project_id: edge.projectId, operator: 'admin@localhost' });
    } finally {
      await edge.close();
    }
    expect(existsSync(edge.dataDir)).toBe(false);
    await expect(fetch(`${edge.url}/health`)).rejects.toThrow();
    // a second close() is the same, settled, promise
    await expect(edge.close()).resolves.toBeUndefined();
  });

  it('on a persistent dataDir: the folder stays, and a second start serves the same project and keys', async () => {
    const dir = tempDir();
    const first = await api.startEdge({ dataDir: dir });
    await first.close();
    expect(existsSync(join(dir, 'projects', first.projectId))).toBe(true);
    const second = await api.startEdge({ dataDir: dir });
    try {
      expect(second.projectId).toBe(first.projectId);
      expect(second.keys).toEqual(first.keys);
      expect(second.dataDir).toBe(realpathSync(dir));
    } finally {
      await second.close();
    }
    expect(existsSync(join(dir, 'control.db'))).toBe(true);
  });

  it('a port in use rejects with the message serve prints, and leaves no ephemeral folder', async () => {
    const holder = createNetServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    const port = (holder.address() as AddressInfo).port;
    const tmp = tempDir();
    // note: the temporary directory is the process's (os.tmpdir()); this file's tests run one at a time.
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    try {
      await expect(api.startEdge({ port, http: 'node' })).rejects.toThrow(
        `cannot listen on 127.0.0.1:${port}: port ${port} is already in use by another process (choose another with --port)`,
      );
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      holder.close();
    }
    expect(ephemeralDirs(tmp)).toEqual([]);
  });

  it('ephemeral: true with a dataDir is a TypeError, and nothing is created', async () => {
    const dir = join(tempDir(), 'data');
    await expect(api.startEdge({ ephemeral: true, dataDir: dir })).rejects.toThrow(new TypeError('startEdge: give either ephemeral: true or dataDir, not both'));
    expect(existsSync(dir)).toBe(false);
  });
});

describe('the CI recipe of docs/operations.md', () => {
  it('passes as written, under Vitest, against the package, and leaves nothing in the temporary directory', async () => {
    const project = tempDir();
    const tmp = tempDir();
    writeFileSync(join(project, 'package.json'), '{"name":"app","private":true,"type":"module"}\n');
    mkdirSync(join(project, 'node_modules'));
    symlinkSync(REPO, join(project, 'node_modules', 'platform-edge'));
    symlinkSync(realpathSync(join(REPO, 'node_modules', 'vitest')), join(project, 'node_modules', 'vitest'));
    const written = await run(process.execPath, [join(REPO, '.ci', 'recipe.mjs'), project], { cwd: project, env: cliEnv() });
    expect(written).toEqual({ code: 0, out: 'vitest.config.ts\ntest/edge.setup.ts\ntest/health.test.ts\n' });

    // note: a fresh Vitest, not a worker of this one.
    const env = Object.fromEntries(Object.entries(cliEnv({ TMPDIR: tmp })).filter(([k]) => !k.startsWith('VITEST') && k !== 'NODE_OPTIONS' && k !== 'TEST'));
    const r = await run(process.execPath, [join(project, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--reporter=dot'], { cwd: project, env: { ...env, NO_COLOR: '1' } });
    expect(r.out).toMatch(/Tests\s+1 passed \(1\)/);
    expect(r.code).toBe(0);
    expect(ephemeralDirs(tmp)).toEqual([]);
  });
});
