import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The CLI entry; it runs build/platform-edge.cjs, built before the test run (`npm test` builds first). */
export const BIN = fileURLToPath(new URL('../../bin/platform-edge.js', import.meta.url));
const BUNDLE = fileURLToPath(new URL('../../build/platform-edge.cjs', import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface ServeInfo {
  url: string;
  project_id: string;
  keys: { publishable: string; service: string };
  operator_token: string;
}

export interface ServeProcess {
  readonly info: ServeInfo;
  readonly url: string;
  readonly port: number;
  readonly proc: ChildProcess;
  /** Everything the process wrote to stderr so far. */
  stderr(): string;
  /** Resolves when the process exited. */
  readonly exited: Promise<CliResult>;
  /** fetch relative to the server; `key` goes into X-Service-Key. */
  req(path: string, init?: RequestInit & { key?: string }): Promise<Response>;
  /** Sends a signal and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<CliResult>;
}

const live = new Set<ChildProcess>();
const dirs = new Set<string>();
let cwd: string | null = null;
/** Processes run in a scratch folder, so a missing --data-dir never writes ./.platform-edge into the repository. */
const scratch = (): string => (cwd ??= tempDir('pe-cli-cwd-'));

/** The environment for spawned CLIs: ours, minus any PLATFORM_EDGE_* setting except the HTTP backend. */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('PLATFORM_EDGE_') || k === 'PLATFORM_EDGE_HTTP') env[k] = v;
  }
  return { ...env, ...extra };
}

function assertBundle(): void {
  if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run \`npm run build\` before the CLI tests`);
}

function collect(proc: ChildProcess): { out: () => string; err: () => string; exited: Promise<CliResult> } {
  let stdout = '';
  let stderr = '';
  proc.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  proc.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<CliResult>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('close', (code, signal) => {
      live.delete(proc);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { out: () => stdout, err: () => stderr, exited };
}

// note: at most this many short CLI processes at once per test worker; tests may fire many in
// parallel, and a 2-core machine gains nothing from more.
const MAX_PARALLEL = 3;
let running = 0;
const waiting: (() => void)[] = [];

async function slot(): Promise<() => void> {
  if (running >= MAX_PARALLEL) await new Promise<void>((r) => waiting.push(r));
  running++;
  return () => {
    running--;
    waiting.shift()?.();
  };
}

/** Runs one CLI command to completion (killed after `timeoutMs`, default 30 s). */
export async function runCli(args: string[], opts: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<CliResult> {
  assertBundle();
  const release = await slot();
  try {
    return await runOnce(args, opts);
  } finally {
    release();
  }
}

async function runOnce(args: string[], opts: { env?: Record<string, string>; timeoutMs?: number }): Promise<CliResult> {
  const proc = spawn(process.execPath, [BIN, ...args], { cwd: scratch(), env: cliEnv(opts.env), stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(proc);
  const { exited } = collect(proc);
  const timer = setTimeout(() => proc.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
  try {
    return await exited;
  } finally {
    clearTimeout(timer);
  }
}

/** Runs a CLI command that must succeed with --json output; returns the parsed line. */
export async function cliJson<T = Record<string, unknown>>(args: string[]): Promise<T> {
  const r = await runCli([...args, '--json']);
  if (r.code !== 0) throw new Error(`platform-edge ${args.join(' ')} exited ${String(r.code)}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/**
 * Starts `platform-edge serve --json --host 127.0.0.1 --port 0 …` and waits for its one
 * JSON line. Its stdin is /dev/null unless `stdin: 'pipe'`. The process is killed by
 * killAll() if a test does not stop it. TMPDIR is a
 * folder killAll() removes (unless the caller sets it), so even a killed `--ephemeral`
 * server leaves nothing behind.
 */
export async function startServe(
  args: string[],
  opts: { env?: Record<string, string>; stdin?: 'ignore' | 'pipe'; /** run the entry as a program (its `#!` line), as npx does, instead of `node <entry>` */ direct?: boolean } = {},
): Promise<ServeProcess> {
  assertBundle();
  const argv = ['serve', '--json', '--host', '127.0.0.1', '--port', '0', ...args];
  const proc = spawn(opts.direct ? BIN : process.execPath, opts.direct ? argv : [BIN, ...argv], {
    cwd: scratch(),
    env: cliEnv({ TMPDIR: tempDir('pe-cli-tmp-'), ...opts.env }),
    stdio: [opts.stdin ?? 'ignore', 'pipe', 'pipe'],
  });
  live.add(proc);
  const { out, err, exited } = collect(proc);
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve printed no JSON line in 15 s; stderr: ${err()}`)), 15_000);
    const check = (): void => {
      const nl = out().indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        proc.stdout?.off('data', check);
        resolve(out().slice(0, nl));
      }
    };
    proc.stdout?.on('data', check);
    void exited.then((r) => {
      clearTimeout(timer);
      reject(new Error(`serve exited (${String(r.code)}) before printing: ${r.stderr}`));
    });
  });
  const info = JSON.parse(line) as ServeInfo;
  const url = info.url;
  return {
    info,
    url,
    port: Number(new URL(url).port),
    proc,
    stderr: err,
    exited,
    req(path, init = {}) {
      const { key, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (key !== undefined) headers.set('x-service-key', key);
      return fetch(url + path, { ...rest, headers });
    },
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}

/** A fresh temporary folder, removed by killAll(). */
export function tempDir(prefix = 'pe-cli-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.add(dir);
  return dir;
}

/** Kills every process these helpers started that is still running, and removes the temporary folders. */
export async function killAll(): Promise<void> {
  const waits = [...live].map(
    (p) =>
      new Promise<void>((resolve) => {
        p.once('close', () => resolve());
        p.kill('SIGKILL');
      }),
  );
  await Promise.all(waits);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs.clear();
  cwd = null;
}

/** Calls `check` until it returns true or `withinMs` passed; returns the last result. */
export async function poll(check: () => Promise<boolean>, withinMs = 2000, everyMs = 50): Promise<boolean> {
  const end = Date.now() + withinMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= end) return false;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Resolves with the exit if the process ends within `ms`, else null (the process keeps running). */
export function exitWithin(p: ServeProcess, ms: number): Promise<CliResult | null> {
  return Promise.race([p.exited, new Promise<null>((r) => setTimeout(() => r(null), ms).unref())]);
}
