// Cost of table privileges on the hot reads (issue 17 item 5, GRANT/REVOKE), A/B: two builds of
// the server side by side in one run (A: the baseline checkout, B: this one), plus B again with a
// REVOKE recorded on another table (C: the privileges map is not empty, so every read looks its
// table up). Each server has a 1000-row table made through raw SQL; wrk runs interleaved
// (A, B, C, then C, B, A, …) and the figure is the server process's user+system CPU time
// (/proc/PID/stat) per completed request, which depends far less on other load than req/s does.
// Each directory is a checkout with a built server (`node build/build.mjs`) and node_modules.
//   node bench/grants-ab.mjs <dirA> <dirB> [rounds=4] [duration=5s] [uws|node]
import { apiCall, cpuMs, median, runWrk, servers, startServer } from './lib/index.mjs';

const [dirA, dirB, roundsArg, durationArg, httpArg] = process.argv.slice(2);
if (!dirA || !dirB) {
  process.stderr.write('usage: node bench/grants-ab.mjs <dirA> <dirB> [rounds=4] [duration=5s] [uws|node]\n');
  process.exit(2);
}
const rounds = Number(roundsArg ?? 4);
const duration = durationArg ?? '5s';
const http = httpArg ?? 'uws';
const log = (m) => process.stderr.write(`${m}\n`);
const svc = (s) => ({ 'x-service-key': s.info.keys.service, 'content-type': 'application/json' });

const start = async (dir, id, revoke) => {
  const s = await startServer(servers.edge(http, { cwd: dir, id }));
  const sql = async (text) => apiCall(s, 'POST', '/db/query', { sql: text }, svc(s));
  await sql(`create table bench_g (id uuid primary key default gen_random_uuid(), title text not null, n int);
             create table other_g (id uuid primary key default gen_random_uuid(), title text);
             insert into bench_g (title, n) with recursive r(i) as (select 1 union all select i + 1 from r where i < 1000) select 'row ' || i, i from r`);
  if (revoke) await sql('revoke insert on other_g from anon');
  s.rowId = (await sql('select id from bench_g where n = 500')).rows[0].id;
  return s;
};

const CASES = {
  get: (s) => ({ path: `/db/tables/bench_g/rows/${s.rowId}`, headers: { 'x-service-key': s.info.keys.publishable } }),
  lookup: (s) => ({ path: '/db/query', method: 'POST', headers: svc(s), body: { sql: 'select id, title, n from bench_g where id = $1', params: [s.rowId] } }),
};

const measure = async (s, c) => {
  const c0 = cpuMs(s.pid);
  const r = await runWrk(s.url, { ...c, duration });
  const c1 = cpuMs(s.pid);
  if (r.non2xx) throw new Error(`non-2xx answers: ${r.non2xx}`);
  return { rps: r.rps, us: ((c1 - c0) * 1000) / r.requests };
};

const all = { A: await start(dirA, 'A', false), B: await start(dirB, 'B', false), C: await start(dirB, 'C', true) };
const out = {};
for (const n of Object.keys(all)) out[n] = { get: [], lookup: [] };
try {
  for (const s of Object.values(all)) for (const c of Object.values(CASES)) await runWrk(s.url, { ...c(s), duration: '2s' });
  for (let i = 0; i < rounds; i++) {
    const order = i % 2 === 0 ? ['A', 'B', 'C'] : ['C', 'B', 'A'];
    for (const n of order) {
      for (const [k, c] of Object.entries(CASES)) {
        const m = await measure(all[n], c(all[n]));
        out[n][k].push(m.us);
        log(`round ${i + 1} ${n} ${k}: ${m.us.toFixed(1)} µs CPU/req (${Math.round(m.rps)} req/s)`);
      }
    }
  }
} finally {
  for (const s of Object.values(all)) await s.stop();
}
const summary = {};
for (const [n, o] of Object.entries(out)) summary[n] = { get_cpu_us: median(o.get), lookup_cpu_us: median(o.lookup) };
for (const n of ['B', 'C']) {
  log(`${n} ÷ A CPU per request: rows API get ${(summary[n].get_cpu_us / summary.A.get_cpu_us).toFixed(3)}, /db/query point lookup ${(summary[n].lookup_cpu_us / summary.A.lookup_cpu_us).toFixed(3)}`);
}
process.stdout.write(`${JSON.stringify({ http, rounds, duration, summary, runs: out })}\n`);
