import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { BIN, cliEnv, exitWithin, killAll, startServe, tempDir } from '../helpers/cli.js';

// Black-box tests: a `serve --ephemeral` does not outlive what started it (docs/operations.md,
// "Ephemeral mode"): its stdin pipe closing, its parent dying, and a SIGTERM sent to `npx`
// stop it, and its temporary folder is deleted.

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const REPO = fileURLToPath(new URL('../../', import.meta.url));
/** Server processes that are not our children (their parent was killed); killed in afterAll if still there. */
const orphans = new Set<number>();

afterAll(async () => {
  for (const pid of orphans) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await killAll();
});

/** The ephemeral folders serve created under a TMPDIR. */
const ephemeralDirs = (tmp: string): string[] => readdirSync(tmp).filter((n) => n.startsWith('platform-edge-'));

/** True while a process with this id runs (a zombie waiting for its reaper does not count). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  if (process.platform !== 'linux') return true;
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** True when a TCP connection to the port is refused. */
const refused = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });

interface Spawned {
  proc: ChildProcess;
  out(): string;
  err(): string;
  /** The process itself ended (its exit code or signal). */
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Every holder of its stdout/stderr pipes ended: the process and whatever it started with them. */
  closed: Promise<void>;
}

function spawnTracked(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Spawned {
  const proc = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  const closed = new Promise<void>((resolve) => proc.once('close', () => resolve()));
  return { proc, out: () => out, err: () => err, exit, closed };
}

/** Waits until stdout holds a line that parses as the serve JSON line; returns it. */
async function serveLine(s: Spawned): Promise<{ url: string }> {
  const end = Date.now() + 20_000;
  for (;;) {
    const line = s
      .out()
      .split('\n')
      .find((l) => l.startsWith('{'));
    if (line !== undefined) return JSON.parse(line) as { url: string };
    if (Date.now() > end) throw new Error(`no JSON line in 20 s; stdout: ${s.out()} stderr: ${s.err()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Resolves true when `p` settles within `ms`. */
const within = (p: Promise<unknown>, ms: number): Promise<boolean> =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())]);

/** The serve process id from the ps-like list of a process's children (Linux /proc). */
function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

describe('serve --ephemeral follows what started it', () => {
  it('stdin a pipe: ending it stops the server: exit 0, the folder is deleted; what is written to it is ignored', async () => {
    const tmp = tempDir();
    const s = await startServe(['--ephemeral'], { env: { TMPDIR: tmp }, stdin: 'pipe' });
    s.proc.stdin!.write('anything the parent writes is ignored\n');
    expect((await s.req('/health')).status).toBe(200);
    expect(ephemeralDirs(tmp)).toHaveLength(1);

    s.proc.stdin!.end();
    expect(await within(s.exited, 15_000)).toBe(true);
    const r = await s.exited;
    expect(r.signal).toBeNull();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('platform-edge: stdin closed, shutting down\n');
    expect(ephemeralDirs(tmp)).toEqual([]);
  });

  it('without --ephemeral (and not started by npm) a closed stdin pipe does not stop it', async () => {
    const s = await startServe(['--data-dir', tempDir()], { stdin: 'pipe', env: { npm_lifecycle_event: '' } });
    s.proc.stdin!.end();
    // note: a bound, not a timing measure: well past the moment the end of stdin is seen.
    expect(await exitWithin(s, 1500)).toBeNull();
    expect((await s.req('/health')).status).toBe(200);
    const r = await s.stop('SIGTERM');
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain('stdin closed');
  });

  it('its parent killed with SIGKILL: the server shuts down within seconds and deletes its folder', async () => {
    const tmp = tempDir();
    // An intermediate parent: sh starts serve in the background, prints its pid and waits.
    const sh = spawnTracked('sh', ['-c', '"$@" & echo "$!"; wait', 'sh', process.execPath, BIN, 'serve', '--ephemeral', '--json', '--host', '127.0.0.1', '--port', '0'], {
      cwd: tempDir(),
      env: cliEnv({ TMPDIR: tmp }),
    });
    const info = await serveLine(sh);
    const pid = Number(sh.out().split('\n')[0]);
    orphans.add(pid);
    expect(running(pid)).toBe(true);
    expect(ephemeralDirs(tmp)).toHaveLength(1);
    expect((await fetch(`${info.url}/health`)).status).toBe(200);

    sh.proc.kill('SIGKILL');
    expect(await sh.exit).toEqual({ code: null, signal: 'SIGKILL' });
    // serve holds the same stdout/stderr pipes: they close when it has exited.
    expect(await within(sh.closed, 15_000)).toBe(true);
    expect(sh.err()).toContain('platform-edge: parent process exited, shutting down\n');
    expect(ephemeralDirs(tmp)).toEqual([]);
    expect(await refused(Number(new URL(info.url).port))).toBe(true);
    expect(running(pid)).toBe(false);
  });

  it('a persistent serve started by npm (npm_lifecycle_event set) also stops when its parent dies; its folder stays', async () => {
    const dir = tempDir();
    const sh = spawnTracked('sh', ['-c', '"$@" & echo "$!"; wait', 'sh', process.execPath, BIN, 'serve', '--data-dir', dir, '--json', '--host', '127.0.0.1', '--port', '0'], {
      cwd: tempDir(),
      env: cliEnv({ npm_lifecycle_event: 'start' }),
    });
    const info = await serveLine(sh);
    const pid = Number(sh.out().split('\n')[0]);
    orphans.add(pid);
    sh.proc.kill('SIGKILL');
    expect(await within(sh.closed, 15_000)).toBe(true);
    expect(sh.err()).toContain('platform-edge: parent process exited, shutting down\n');
    expect(await refused(Number(new URL(info.url).port))).toBe(true);
    expect(running(pid)).toBe(false);
    expect(readdirSync(dir).sort()).toEqual(expect.arrayContaining(['control.db', 'master.key', 'projects']));
  });

  it('SIGTERM to `npx platform-edge serve --ephemeral` stops the server and deletes its folder', async () => {
    // A folder where the package is installed (a link to this repository, built).
    const project = tempDir();
    writeFileSync(join(project, 'package.json'), '{"name":"app","private":true}\n');
    mkdirSync(join(project, 'node_modules', '.bin'), { recursive: true });
    symlinkSync(REPO, join(project, 'node_modules', 'platform-edge'));
    symlinkSync('../platform-edge/bin/platform-edge.js', join(project, 'node_modules', '.bin', 'platform-edge'));
    const tmp = tempDir();
    const npx = spawnTracked('npx', ['--no-install', 'platform-edge', 'serve', '--ephemeral', '--json', '--host', '127.0.0.1', '--port', '0'], {
      cwd: project,
      env: cliEnv({ TMPDIR: tmp }),
    });
    const info = await serveLine(npx);
    for (const child of childPids(npx.proc.pid!)) {
      orphans.add(child);
      for (const grandchild of childPids(child)) orphans.add(grandchild);
    }
    expect(ephemeralDirs(tmp)).toHaveLength(1);
    expect((await fetch(`${info.url}/health`)).status).toBe(200);

    npx.proc.kill('SIGTERM');
    expect(await npx.exit).toEqual({ code: null, signal: 'SIGTERM' });
    expect(await within(npx.closed, 15_000)).toBe(true);
    expect(npx.err()).toContain('platform-edge: parent process exited, shutting down\n');
    expect(ephemeralDirs(tmp)).toEqual([]);
    expect(await refused(Number(new URL(info.url).port))).toBe(true);
    for (const pid of orphans) expect(running(pid)).toBe(false);
  });
});
