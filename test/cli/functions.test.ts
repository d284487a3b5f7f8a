import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { killAll, poll, runCli, startServe } from '../helpers/cli.js';

// A function runs under the built CLI: bin/platform-edge.js runs Node again with
// --no-node-snapshot (isolated-vm needs it), passes signals on and returns the child's exit.

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
  it('deploys and invokes a function; the server runs in a child Node with --no-node-snapshot; SIGTERM passes through with exit 0', async () => {
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
    const kids = childrenOf(s.proc.pid!);
    expect(kids).toHaveLength(1);
    expect(kids[0]!.cmdline.slice(1, 2)).toEqual(['--no-node-snapshot']);
    const r = await s.stop('SIGTERM');
    expect(r).toMatchObject({ code: 0, signal: null });
    expect(await refused(s.port)).toBe(true);
  });

  it('run as a program (as npx runs it), the entry starts Node with --no-node-snapshot itself: no second server, functions run', async () => {
    const s = await startServe(['--ephemeral'], { direct: true });
    const key = s.info.keys.service;
    const put = await s.req('/functions/one', { method: 'PUT', key, headers: { 'content-type': 'application/javascript' }, body: 'export default () => 1;' });
    expect(put.status, await put.clone().text()).toBe(201);
    const inv = await s.req('/functions/one', { method: 'POST', key });
    expect(await inv.json()).toMatchObject({ result: 1, version: 1 });
    // note: its one child is the functions' sandbox process (docs/api.md "Sandbox"), not a second server.
    expect(childrenOf(s.proc.pid!).map((k) => k.cmdline.slice(1, 3))).toEqual([['--no-node-snapshot', expect.stringMatching(/build\/chunks\/functions-sandbox\.mjs$/)]]);
    // note: `env -S` execs Node in place: the spawned process is the server itself.
    const cmdline = readFileSync(`/proc/${s.proc.pid!}/cmdline`, 'utf8').split('\0').filter(Boolean);
    expect(cmdline.slice(1, 2)).toEqual(['--no-node-snapshot']);
    const r = await s.stop('SIGTERM');
    expect(r).toMatchObject({ code: 0, signal: null });
  });

  it('the exit code of the child is the exit code of the command', async () => {
    const r = await runCli(['serve', '--no-such-option']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--no-such-option');
  });

  it('kill -9 of the entry ends the server too', async () => {
    const s = await startServe(['--ephemeral']);
    const child = childrenOf(s.proc.pid!)[0]!.pid;
    s.proc.kill('SIGKILL');
    expect((await s.exited).signal).toBe('SIGKILL');
    expect(await poll(async () => refused(s.port), 5000)).toBe(true);
    expect(await poll(async () => { try { process.kill(child, 0); return false; } catch { return true; } }, 5000)).toBe(true);
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
