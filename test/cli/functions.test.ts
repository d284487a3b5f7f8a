import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { killAll, poll, runCli, startServe } from '../helpers/cli.js';

// A function runs under the built CLI: the server is one Node process without flags, and its
// one child is the functions' sandbox process, which it starts with --no-node-snapshot (isolated-vm
// needs it; docs/api.md "Sandbox").

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });
afterAll(killAll);

const refused = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });

/** The Node processes whose parent is `pid` (from /proc), with their command lines. */
function childrenOf(pid: number): { pid: number; cmdline: string[] }[] {
  const text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  return text === '' ? [] : text.split(/\s+/).map((p) => ({ pid: Number(p), cmdline: readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').filter(Boolean) }));
}

describe('functions under `platform-edge serve`', () => {
  it('deploys and invokes a function under `node bin/platform-edge.js serve`: one server process, whose child is the sandbox process; SIGTERM exits 0', async () => {
    const s = await startServe(['--ephemeral']);
    const key = s.info.keys.service;
    const put = await s.req('/functions/hello', {
      method: 'PUT',
      key,
      headers: { 'content-type': 'application/typescript' },
      body: 'export default async (a: { name: string }, ctx) => { ctx.log("hi"); return `hello ${a.name}`; };',
    });
    expect(put.status, await put.clone().text()).toBe(201);
    const inv = await s.req('/functions/hello', { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'cli' }) });
    expect(inv.status).toBe(200);
    expect(await inv.json()).toMatchObject({ result: 'hello cli', logs: [{ level: 'info', message: 'hi' }], version: 1 });
    // note: the server is the process started (no flag, no second Node in between).
    expect(readFileSync(`/proc/${s.proc.pid!}/cmdline`, 'utf8').split('\0').filter(Boolean).slice(1, 3)).toEqual([expect.stringMatching(/bin\/platform-edge\.js$/), 'serve']);
    // note: beside it, esbuild's service process, which compiled the TypeScript source.
    const kids = childrenOf(s.proc.pid!).filter((k) => !k.cmdline.some((a) => a.startsWith('--service=')));
    expect(kids.map((k) => k.cmdline.slice(1, 3))).toEqual([['--no-node-snapshot', expect.stringMatching(/build\/chunks\/functions-sandbox\.mjs$/)]]);
    const r = await s.stop('SIGTERM');
    expect(r).toMatchObject({ code: 0, signal: null });
    expect(await refused(s.port)).toBe(true);
    expect(await poll(async () => { try { process.kill(kids[0]!.pid, 0); return false; } catch { return true; } }, 5000)).toBe(true);
  });

  it('run as a program (as npx runs it): functions run, and the one child is the sandbox process', async () => {
    const s = await startServe(['--ephemeral'], { direct: true });
    const key = s.info.keys.service;
    const put = await s.req('/functions/one', { method: 'PUT', key, headers: { 'content-type': 'application/javascript' }, body: 'export default () => 1;' });
    expect(put.status, await put.clone().text()).toBe(201);
    const inv = await s.req('/functions/one', { method: 'POST', key });
    expect(await inv.json()).toMatchObject({ result: 1, version: 1 });
    expect(childrenOf(s.proc.pid!).map((k) => k.cmdline.slice(1, 3))).toEqual([['--no-node-snapshot', expect.stringMatching(/build\/chunks\/functions-sandbox\.mjs$/)]]);
    const r = await s.stop('SIGTERM');
    expect(r).toMatchObject({ code: 0, signal: null });
  });

  it('a bad option exits 2 and names it', async () => {
    const r = await runCli(['serve', '--no-such-option']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--no-such-option');
  });

  it('the sandbox process starts with the first call, not with the server, with an empty environment, and kill -9 of the server ends it', async () => {
    const s = await startServe(['--ephemeral'], { direct: true });
    expect(childrenOf(s.proc.pid!)).toEqual([]);
    const key = s.info.keys.service;
    const put = await s.req('/functions/one', { method: 'PUT', key, headers: { 'content-type': 'application/javascript' }, body: 'export default () => 1;' });
    expect(put.status, await put.clone().text()).toBe(201);
    const [sandbox] = childrenOf(s.proc.pid!);
    expect(sandbox!.cmdline.join(' ')).toContain('functions-sandbox.mjs');
    // note: none of the server's environment (settings, credentials) reaches the process that runs user code.
    expect(readFileSync(`/proc/${s.proc.pid!}/environ`, 'utf8')).not.toBe('');
    // (Node itself sets NODE_CHANNEL_FD and NODE_CHANNEL_SERIALIZATION_MODE for the IPC channel.)
    const names = readFileSync(`/proc/${sandbox!.pid}/environ`, 'utf8').split('\0').filter(Boolean).map((v) => v.slice(0, v.indexOf('=')));
    expect(names.sort()).toEqual(['NODE_CHANNEL_FD', 'NODE_CHANNEL_SERIALIZATION_MODE']);
    s.proc.kill('SIGKILL');
    expect((await s.exited).signal).toBe('SIGKILL');
    expect(await poll(async () => { try { process.kill(sandbox!.pid, 0); return false; } catch { return true; } }, 5000)).toBe(true);
  });
});
