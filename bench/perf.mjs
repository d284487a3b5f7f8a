// Where a request's CPU goes, JIT and native and kernel alike: `perf record -g` of our server
// under wrk load, each sample charged to its nearest JavaScript frame (native and kernel
// frames below a JS frame count for it; samples with no JS frame are grouped by their first
// user-space frame). This is how docs/benchmarks.md "Where the time goes" was measured.
// Usage: node bench/perf.mjs [uws|node] [PATH] [--key] [--duration 4s] [--top 30] [--method POST --body JSON] [--deploy SOURCE]
//   --deploy deploys SOURCE as the function `one` first (e.g. POST /functions/one --deploy 'export default () => 1;').
//   --key sends the service key (X-Service-Key); --body sends a JSON body with content-type JSON.
// Needs Linux `perf` (Debian: apt-get install -y linux-perf) and wrk. Load only on 127.0.0.1,
// bounded in time. The server runs with --perf-basic-prof (JIT symbol map in /tmp).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiCall, cpuMs, requireWrk, runWrk, servers, startServer } from './lib/index.mjs';

const argv = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = argv.indexOf(name);
  return i === -1 ? dflt : argv.splice(i, 2)[1];
};
const duration = flag('--duration', '4s');
const top = Number(flag('--top', '30'));
const method = flag('--method', 'GET');
const body = flag('--body', undefined);
const deploy = flag('--deploy', undefined);
const useKey = argv.includes('--key');
const [http = 'uws', path = '/health'] = argv.filter((a) => !a.startsWith('--'));

requireWrk();
if (spawnSync('perf', ['--version']).status !== 0) {
  process.stderr.write('bench/perf.mjs needs Linux perf (Debian: apt-get install -y linux-perf)\n');
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), 'edge-perf-'));
// note: --perf-basic-prof also turns on V8's isolate log; it goes to /dev/null, not the repository.
const server = await startServer(servers.edge(http, { id: `edge-${http}-perf`, nodeArgs: ['--perf-basic-prof', '--logfile=/dev/null', '--no-logfile-per-isolate'] }));
if (deploy !== undefined) await apiCall(server, 'PUT', '/functions/one', { source: deploy }, { 'x-service-key': server.info.keys.service, 'content-type': 'application/json' });
const headers = useKey ? { 'x-service-key': server.info.keys.service } : {};
const load = body === undefined ? { path, headers, method } : { path, method, body, headers: { ...headers, 'content-type': 'application/json' } };
await runWrk(server.url, { ...load, duration: '2s' });
const data = join(dir, 'perf.data');
const cpu0 = cpuMs(server.pid);
const [wrk] = await Promise.all([
  runWrk(server.url, { ...load, duration }),
  new Promise((resolve) => setTimeout(resolve, 500)).then(() =>
    spawnSync('perf', ['record', '-F', '2999', '-g', '-p', String(server.pid), '-o', data, '--', 'sleep', String(Math.max(1, parseFloat(duration) - 1))], { stdio: 'ignore' }),
  ),
]);
const cpuPerReq = ((cpuMs(server.pid) - cpu0) * 1000) / Math.max(1, wrk.requests ?? wrk.rps * parseFloat(duration));
const script = spawnSync('perf', ['script', '-i', data], { encoding: 'utf8', maxBuffer: 1 << 30 }).stdout;
await server.stop();
if (process.env.PERF_KEEP) process.stderr.write(`kept ${data}\n`); else rmSync(dir, { recursive: true, force: true });

const clean = (f) => f.replace(/^[0-9a-f]+ /, '').replace(/\+0x[0-9a-f]+/, '').replace(/ \(.*\)$/, '').replace(/file:\/\/.*?\/build\//, 'build/');
const counts = new Map();
let total = 0;
const count = (stack) => {
  if (!stack.length) return;
  total++;
  const js = stack.find((f) => f.includes('JS:'));
  let key;
  if (js) key = `${stack[0].includes('[kernel') ? '[kernel under] ' : ''}${clean(js)}`;
  else {
    const user = stack.find((f) => !f.includes('[kernel'));
    key = stack[0].includes('[kernel') ? `[kernel via] ${user ? clean(user) : '?'}` : `[native] ${clean(user)}`;
  }
  counts.set(key, (counts.get(key) ?? 0) + 1);
};
let stack = [];
for (const line of script.split('\n')) {
  if (line.trim() === '' || !/^\s/.test(line)) {
    count(stack);
    stack = [];
  } else stack.push(line.trim());
}
count(stack);

process.stdout.write(`${wrk.command}\n${Math.round(wrk.rps)} req/s, server CPU ${cpuPerReq.toFixed(1)} µs/request, ${total} samples\n\n`);
for (const [k, n] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  process.stdout.write(`${((n / total) * 100).toFixed(1).padStart(5)} %  ${k}\n`);
}
