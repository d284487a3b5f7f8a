// CPU per warm invoke, A/B (issue 16 "Performance"): two builds of the server side by side in
// one run, each serving `export default () => 1` at POST /functions/one and the no-op
// `GET /health/key`; wrk runs interleaved (A, B, A, B, …) and the figure is the server
// process's user+system CPU time (/proc/PID/stat) per completed request, which depends far
// less on other load than req/s does. Each directory is a checkout with a built server
// (`node build/build.mjs`) and node_modules.
//   node bench/cpu-ab.mjs <dirA> <dirB> [rounds=4] [duration=5s] [uws|node]
import { apiCall, cpuMs, median, runWrk, servers, startServer } from './lib/index.mjs';

const [dirA, dirB, roundsArg, durationArg, httpArg] = process.argv.slice(2);
if (!dirA || !dirB) {
  process.stderr.write('usage: node bench/cpu-ab.mjs <dirA> <dirB> [rounds=4] [duration=5s] [uws|node]\n');
  process.exit(2);
}
const rounds = Number(roundsArg ?? 4);
const duration = durationArg ?? '5s';
const http = httpArg ?? 'uws';
const log = (m) => process.stderr.write(`${m}\n`);

const start = async (dir, id) => {
  const s = await startServer(servers.edge(http, { cwd: dir, id }));
  await apiCall(s, 'PUT', '/functions/one', { source: 'export default () => 1;' }, { 'x-service-key': s.info.keys.service, 'content-type': 'application/json' });
  return s;
};

const measure = async (s, path, method) => {
  const headers = { 'x-service-key': s.info.keys.publishable };
  const c0 = cpuMs(s.pid);
  const r = await runWrk(s.url, { path, method, headers, duration });
  const c1 = cpuMs(s.pid);
  return { rps: r.rps, us: ((c1 - c0) * 1000) / r.requests, non2xx: r.non2xx };
};

const a = await start(dirA, 'A');
const b = await start(dirB, 'B');
const out = { A: { invoke: [], noop: [], rps: [] }, B: { invoke: [], noop: [], rps: [] } };
try {
  for (const s of [a, b]) await runWrk(s.url, { path: '/functions/one', method: 'POST', headers: { 'x-service-key': s.info.keys.publishable }, duration: '2s' }).catch(() => {});
  for (let i = 0; i < rounds; i++) {
    for (const [name, s] of i % 2 === 0 ? [['A', a], ['B', b]] : [['B', b], ['A', a]]) {
      const inv = await measure(s, '/functions/one', 'POST');
      const noop = await measure(s, '/health/key', 'GET');
      out[name].invoke.push(inv.us);
      out[name].noop.push(noop.us);
      out[name].rps.push(inv.rps / noop.rps);
      log(`round ${i + 1} ${name}: invoke ${inv.us.toFixed(1)} µs/req (${Math.round(inv.rps)} req/s${inv.non2xx ? `, non-2xx ${inv.non2xx}` : ''}), /health/key ${noop.us.toFixed(1)} µs/req (${Math.round(noop.rps)} req/s), req/s ratio ${((inv.rps / noop.rps) * 100).toFixed(0)} %`);
    }
  }
} finally {
  await a.stop();
  await b.stop();
}
const f = (xs) => xs.map((x) => x.toFixed(1)).join(', ');
const summary = {};
for (const n of ['A', 'B']) {
  const o = out[n];
  summary[n] = { invoke_cpu_us: median(o.invoke), noop_cpu_us: median(o.noop), cpu_ratio: median(o.noop) / median(o.invoke), rps_ratio: median(o.rps) };
  log(`${n}: invoke CPU ${f(o.invoke)} µs/req (median ${median(o.invoke).toFixed(1)}); /health/key ${f(o.noop)} (median ${median(o.noop).toFixed(1)}); req/s ratios ${o.rps.map((x) => `${(x * 100).toFixed(0)} %`).join(', ')}`);
}
log(`B ÷ A invoke CPU per request: ${(summary.B.invoke_cpu_us / summary.A.invoke_cpu_us).toFixed(2)}`);
process.stdout.write(`${JSON.stringify({ http, rounds, duration, summary })}\n`);
