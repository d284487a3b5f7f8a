// The native realtime bench client (bench/rt-client.c), compiled with `cc -O2` into bench/.build/ on
// first use (or when the source is newer), and driven over its stdin/stdout: open targets, count the
// deliveries, stop → latency summary. Load only on 127.0.0.1.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT } from './server.mjs';

const SRC = join(ROOT, 'bench', 'rt-client.c');
const BIN = join(ROOT, 'bench', '.build', 'rt-client');

/** The client binary, built when missing or older than its source. */
export function nativeClientBinary() {
  let fresh = false;
  try {
    fresh = statSync(BIN).mtimeMs >= statSync(SRC).mtimeMs;
  } catch {
    // note: not built yet.
  }
  if (!fresh) {
    mkdirSync(join(ROOT, 'bench', '.build'), { recursive: true });
    const r = spawnSync(process.env.CC || 'cc', ['-O2', '-o', BIN, SRC], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('bench: cannot compile bench/rt-client.c (set BENCH_RT_CLIENT=node to use the Node client)');
  }
  return BIN;
}

/**
 * Opens targets ({ kind: 'sse'|'ws', url, protocols? }, all on one 127.0.0.1 port) in one native
 * client process; resolves once every one got its ready event. Returns { pid, count(), stop() }:
 * count() → { delivered, closed }; stop() → { n, p50, p99, max, sse: {…}, ws: {…} } over every change's commit-to-receipt latency (ms).
 */
export async function nativeClients(targets, { timeoutMs = 120_000 } = {}) {
  const bin = nativeClientBinary();
  const port = new URL(targets[0].url).port;
  const dir = mkdtempSync(join(tmpdir(), 'rt-client-'));
  const file = join(dir, 'targets');
  writeFileSync(
    file,
    targets
      .map((t) => {
        const u = new URL(t.url);
        if (u.port !== port || u.hostname !== '127.0.0.1') throw new Error('bench: the native client connects to one 127.0.0.1 port');
        const protos = t.protocols?.length ? ` ${t.protocols.join(',')}` : '';
        return `${t.kind} ${u.pathname}${u.search}${protos}\n`;
      })
      .join(''),
  );
  const child = spawn(bin, [port, file], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const waiting = [];
  let exited = null;
  lines.on('line', (l) => waiting.shift()?.resolve(l));
  child.on('exit', (code) => {
    exited = code;
    rmSync(dir, { recursive: true, force: true });
    for (const w of waiting.splice(0)) w.reject(new Error(`bench: rt-client exited (${code})`));
  });
  const next = () => new Promise((resolve, reject) => (exited !== null ? reject(new Error('bench: rt-client exited')) : waiting.push({ resolve, reject })));
  const first = next();
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  let line;
  try {
    line = await first;
  } finally {
    clearTimeout(timer);
  }
  if (!line.startsWith('ready ')) {
    child.kill('SIGKILL');
    throw new Error(`bench: rt-client: ${line.replace(/^error /, '')}`);
  }
  const ask = async (cmd) => {
    const p = next();
    child.stdin.write(`${cmd}\n`);
    return p;
  };
  return {
    pid: child.pid,
    count: async () => {
      const [, d, c] = (await ask('count')).split(' ');
      return { delivered: Number(d), closed: Number(c) };
    },
    stop: async () => {
      if (exited !== null) throw new Error('bench: rt-client exited');
      const f = (await ask('stop')).split(' ').slice(1).map(Number);
      const at = (i) => ({ n: f[i], p50: f[i + 1], p99: f[i + 2], max: f[i + 3] });
      return { ...at(0), sse: at(4), ws: at(8) };
    },
    kill: () => {
      if (exited === null) child.kill('SIGKILL');
    },
  };
}
