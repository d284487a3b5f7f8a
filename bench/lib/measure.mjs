// Running scenarios: interleaved target/baseline wrk runs, medians, verdicts.
//
// A scenario file (bench/scenarios/NAME.mjs) default-exports a section:
//   {
//     id: 'edge',                       // marker id in docs/benchmarks.md: <!-- bench:edge:start -->
//     title: 'Edge …',                  // heading used if the doc has no markers yet
//     scenarios: [Scenario, …],         // wrk comparisons, see below
//     checks: [{ name, run: async (ctx) => CheckRow[] }],   // optional, non-wrk measurements
//   }
// Scenario:
//   {
//     name: 'GET /health (uWS)',
//     baseline: Side, target: Side,
//     targets: { minRatio: 0.8, maxP99Ratio?: 3, notModified?: true },   // omit minRatio → reported for information;
//                                                   // notModified: the answers are 304s (wrk counts them as non-2xx)
//   }
// Side:
//   {
//     server: ServerSpec (see server.mjs, e.g. servers.bareUws, servers.edge('uws')),
//     path: '/health',
//     headers?: { name: value } | (info) => ({ … }),  // info = the server's JSON line (keys, …)
//     method?, body?,                                 // non-GET: sent through bench/lua/request.lua
//     script?: path of a Lua file (luaScript('x.lua')),
//     expectStatus?: 200,                             // the sanity request must answer this (default: any 2xx)
//     setup?: async (server) => Partial<Side>,        // runs once before measuring (create rows, keys, …);
//                                                     // server = {info, url, pid}; returned fields override
//   }
// CheckRow: { metric, value (string), target (string), pass: true|false|null (null = info), note? }
import { performance } from 'node:perf_hooks';
import { DEFAULTS, runWrk } from './wrk.mjs';
import { cpuMs, rssMb, ServerPool } from './server.mjs';
import { median } from './stats.mjs';

export const PAIRS = Number(process.env.BENCH_PAIRS || 3);

const log = (msg) => process.stderr.write(`${msg}\n`);

async function resolveSide(side, server) {
  let s = { ...side };
  if (typeof s.headers === 'function') s.headers = s.headers(server.info);
  if (s.setup) {
    const extra = (await s.setup(server)) ?? {};
    s = { ...s, ...extra };
    if (typeof s.headers === 'function') s.headers = s.headers(server.info);
  }
  return s;
}

/** One request before the load: fails fast when the route does not answer as expected. */
async function sanity(server, side) {
  const res = await fetch(new URL(side.path ?? '/', server.url), {
    method: side.method ?? 'GET',
    headers: side.headers ?? {},
    body: side.body === undefined ? undefined : typeof side.body === 'string' ? side.body : JSON.stringify(side.body),
  });
  const text = await res.text();
  const ok = side.expectStatus !== undefined ? res.status === side.expectStatus : res.status >= 200 && res.status < 300;
  if (!ok) throw new Error(`${server.spec.label} ${side.path}: sanity request answered ${res.status}: ${text.slice(0, 200)}`);
}

/** One wrk run plus the server's CPU time per request (µs) and CPU use (share of one core). */
async function measured(server, side) {
  const c0 = cpuMs(server.pid);
  const t0 = performance.now();
  const r = await runWrk(server.url, wrkOpts(side));
  const c1 = cpuMs(server.pid);
  const wall = performance.now() - t0;
  const cpu = c0 === null || c1 === null ? NaN : c1 - c0;
  return { ...r, cpuUsPerReq: (cpu * 1000) / r.requests, cpuShare: cpu / wall };
}

function wrkOpts(side, duration) {
  return { path: side.path, headers: side.headers, method: side.method, body: side.body, script: side.script, duration };
}

const summarize = (runs) => ({
  rps: median(runs.map((r) => r.rps)),
  p50: median(runs.map((r) => r.p50)),
  p99: median(runs.map((r) => r.p99)),
  cpuUsPerReq: median(runs.map((r) => r.cpuUsPerReq)),
  cpuShare: median(runs.map((r) => r.cpuShare)),
  non2xx: runs.reduce((a, r) => a + r.non2xx, 0),
  socketErrors: runs.reduce((a, r) => a + r.socketErrors, 0),
  runs: runs.map((r) => ({ rps: r.rps, p50: r.p50, p99: r.p99, cpuUsPerReq: r.cpuUsPerReq, cpuShare: r.cpuShare })),
});

/**
 * Measures one scenario: a warm-up of each side, then PAIRS pairs of runs, alternating
 * which side goes first (B T, T B, B T, …) so slow drift of the machine cancels out.
 * ratio = median of the per-pair ratios target/baseline (each pair ran back to back).
 */
export async function runScenario(sc, pool) {
  const [bServer, tServer] = await Promise.all([pool.get(sc.baseline.server), pool.get(sc.target.server)]);
  const b = await resolveSide(sc.baseline, bServer);
  const t = await resolveSide(sc.target, tServer);
  await sanity(bServer, b);
  await sanity(tServer, t);
  log(`  warm-up ${DEFAULTS.warmup} each`);
  await runWrk(bServer.url, wrkOpts(b, DEFAULTS.warmup));
  await runWrk(tServer.url, wrkOpts(t, DEFAULTS.warmup));
  const bRuns = [];
  const tRuns = [];
  let command = null;
  for (let i = 0; i < PAIRS; i++) {
    const order = i % 2 === 0 ? ['b', 't'] : ['t', 'b'];
    for (const which of order) {
      const r = which === 'b' ? await measured(bServer, b) : await measured(tServer, t);
      (which === 'b' ? bRuns : tRuns).push(r);
      if (which === 't') command = r.command;
      log(`  pair ${i + 1} ${which === 'b' ? 'baseline' : 'target  '} ${Math.round(r.rps)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  cpu ${r.cpuUsPerReq.toFixed(1)} µs/req (${(r.cpuShare * 100).toFixed(0)} % of a core)${r.non2xx ? `  non-2xx ${r.non2xx}` : ''}`);
    }
  }
  const ratios = tRuns.map((r, i) => r.rps / bRuns[i].rps);
  const p99Ratios = tRuns.map((r, i) => r.p99 / bRuns[i].p99);
  const result = {
    name: sc.name,
    baselineLabel: sc.baseline.server.label,
    targetLabel: sc.target.server.label,
    baseline: summarize(bRuns),
    target: summarize(tRuns),
    ratio: median(ratios),
    ratios,
    p99Ratio: median(p99Ratios),
    // what the req/s ratio would be if both servers were CPU-bound on a quiet machine
    cpuRatio: median(tRuns.map((r, i) => bRuns[i].cpuUsPerReq / r.cpuUsPerReq)),
    targets: sc.targets ?? {},
    targetRssMb: rssMb(tServer.pid),
    command: redact(command),
  };
  result.verdict = verdict(result);
  return result;
}

function verdict(r) {
  // note: wrk counts 3xx with the errors; a scenario measuring 304s says `notModified: true`.
  if (!r.targets.notModified && (r.target.non2xx || r.baseline.non2xx)) return 'ERROR';
  if (r.target.socketErrors || r.baseline.socketErrors) return 'ERROR';
  const { minRatio, maxP99Ratio } = r.targets;
  if (minRatio === undefined || minRatio === null) return 'INFO';
  if (r.ratio < minRatio) return 'FAIL';
  if (maxP99Ratio !== undefined && r.p99Ratio > maxP99Ratio) return 'FAIL';
  return 'PASS';
}

/** Hides credentials in a printed command (keys are per-run anyway). */
export function redact(cmd) {
  return cmd?.replace(/\b(svc_live|svc_test|lcd|lca)_[A-Za-z0-9_.-]+/g, (_m, p) => `<${p}_…>`) ?? null;
}

/**
 * Runs a whole section (optionally only scenarios whose name includes `filter`).
 * Returns { id, title, startedAt, load, results, checks, errors }.
 */
export async function runSection(section, { filter } = {}) {
  const pool = new ServerPool();
  const out = { id: section.id, title: section.title, startedAt: new Date(), results: [], checks: [], errors: [] };
  try {
    for (const sc of section.scenarios ?? []) {
      if (filter && !sc.name.toLowerCase().includes(filter.toLowerCase())) continue;
      log(`[${section.id}] ${sc.name}`);
      try {
        out.results.push(await runScenario(sc, pool));
      } catch (err) {
        log(`  error: ${err.message}`);
        out.errors.push({ name: sc.name, message: err.message.split('\n')[0] });
      }
    }
    await pool.stopAll();
    for (const check of section.checks ?? []) {
      if (filter && !check.name.toLowerCase().includes(filter.toLowerCase())) continue;
      log(`[${section.id}] ${check.name}`);
      try {
        const rows = await check.run({ log });
        for (const row of rows) log(`  ${row.metric}: ${row.value} (target ${row.target}) ${row.pass === null ? 'INFO' : row.pass ? 'PASS' : 'FAIL'}`);
        out.checks.push({ name: check.name, rows });
      } catch (err) {
        log(`  error: ${err.message}`);
        out.errors.push({ name: check.name, message: err.message.split('\n')[0] });
      }
    }
  } finally {
    await pool.stopAll();
  }
  return out;
}
