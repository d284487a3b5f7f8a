// SQL fairness between projects (issue 11 item 1): project B's `select 1` through
// POST /db/query, alone and while project A floods the SQL worker pool with slow cross
// joins, on one server, interleaved (alone, under flood, under flood, alone, …).
// Target: B's p99 under A's flood < 100 ms. Reported with the same-run baseline (B alone).
//
// B behaves (wrk -c2: two statements at a time); A keeps 16 statements of ~0.3 s in flight
// (its running ones and the rest waiting: its share of the pool is always full). A third
// run floods with wrk -c50: beyond A's 2 running + 32 waiting every request is a 429 that
// wrk resends at once (thousands a second), i.e. an HTTP flood as well, for information.
// A last server lets A use every worker (PLATFORM_EDGE_SQL_PROJECT_JOBS=3): then B can
// only be scheduled ahead of A's queue, and waits for one of A's statements to end — the
// "at most one statement's time" bound, reported for information.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiCall, DEFAULTS, median, PAIRS, redact, ROOT, runWrk, startServer } from '../lib/index.mjs';
import { seconds } from '../lib/wrk.mjs';

const node = process.execPath;
const SLOW = 'select count(*) as c from nums a, nums b where a.n * b.n = -1';
const ROWS = 2000;

/** Our server on a data folder of its own (not --ephemeral: the CLI adds project B to it). */
async function start(extraEnv, aConnections) {
  const dir = mkdtempSync(join(tmpdir(), 'pe-bench-fair-'));
  const server = await startServer({
    id: `edge-fair-${Object.values(extraEnv).join('-') || 'default'}-${aConnections}`,
    label: 'platform-edge (uws)',
    cmd: [node, 'bin/platform-edge.js', 'serve', '--port', '0', '--json', '--data-dir', dir],
    env: { PLATFORM_EDGE_HTTP: 'uws', PLATFORM_EDGE_RATE_LIMIT: 'off', ...extraEnv },
  });
  const made = spawnSync(node, ['bin/platform-edge.js', 'project', 'create', 'b', '--json', '--data-dir', dir], { cwd: ROOT, encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`project create failed: ${made.stderr}`);
  const b = JSON.parse(made.stdout.trim().split('\n').pop());
  const a = { key: server.info.keys.service };
  const h = (key) => ({ 'x-service-key': key, 'content-type': 'application/json' });
  await apiCall(server, 'POST', '/db/query', { sql: 'create table nums (id bigserial primary key, n int)' }, h(a.key));
  await apiCall(server, 'POST', '/db/query', { sql: `insert into nums (n) with recursive c(x) as (select 1 union all select x + 1 from c where x < ${ROWS}) select x from c` }, h(a.key));
  // note: the server sees the new project's keys within 250 ms (control.db polling); wait until B's key works.
  for (let i = 0; ; i++) {
    const r = await fetch(`${server.url}/db/query`, { method: 'POST', headers: h(b.keys.service), body: JSON.stringify({ sql: 'select 1 as one' }) });
    await r.text();
    if (r.status === 200) break;
    if (i > 50) throw new Error(`project B's key is not accepted: ${r.status}`);
    await new Promise((res) => setTimeout(res, 100));
  }
  const t0 = performance.now();
  await apiCall(server, 'POST', '/db/query', { sql: SLOW }, h(a.key));
  const slowMs = performance.now() - t0;
  return {
    server,
    slowMs,
    a: { path: '/db/query', method: 'POST', headers: h(a.key), body: { sql: SLOW }, connections: aConnections },
    b: { path: '/db/query', method: 'POST', headers: h(b.keys.service), body: { sql: 'select 1 as one' }, connections: 2 },
    async stop() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** B alone and B under A's flood, PAIRS interleaved pairs; medians. */
async function measure(env, aConnections, log) {
  const s = await start(env, aConnections);
  try {
    log(`  A's statement alone: ${s.slowMs.toFixed(0)} ms`);
    const floodFor = `${seconds(DEFAULTS.duration) + 3}s`;
    const alone = [];
    const flooded = [];
    const floods = [];
    let command = null;
    for (let i = 0; i < PAIRS; i++) {
      for (const which of i % 2 === 0 ? ['alone', 'flood'] : ['flood', 'alone']) {
        if (which === 'alone') {
          const r = await runWrk(s.server.url, s.b);
          alone.push(r);
          log(`  pair ${i + 1} B alone      p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  ${Math.round(r.rps)} req/s${r.non2xx ? `  non-2xx ${r.non2xx}` : ''}`);
        } else {
          const flood = runWrk(s.server.url, { ...s.a, duration: floodFor });
          // note: B starts once A's running and queued statements fill its share of the pool.
          await new Promise((res) => setTimeout(res, 2000));
          const r = await runWrk(s.server.url, s.b);
          const f = await flood;
          flooded.push(r);
          floods.push(f);
          command = { b: r.command, a: f.command };
          log(`  pair ${i + 1} B under A    p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  ${Math.round(r.rps)} req/s${r.non2xx ? `  non-2xx ${r.non2xx}` : ''}  (A: ${f.requests} answers, ${f.non2xx} of them 429 or statement_timeout)`);
        }
      }
    }
    return {
      slowMs: s.slowMs,
      aloneP99: median(alone.map((r) => r.p99)),
      floodP99: median(flooded.map((r) => r.p99)),
      floodP50: median(flooded.map((r) => r.p50)),
      ratio: median(flooded.map((r, i) => r.p99 / alone[i].p99)),
      bErrors: [...alone, ...flooded].reduce((n, r) => n + r.non2xx + r.socketErrors, 0),
      a429: median(floods.map((f) => f.non2xx / Math.max(1, f.requests))),
      command: { b: redact(command.b), a: redact(command.a) },
    };
  } finally {
    await s.stop();
  }
}

const ms = (v) => `${v.toFixed(1)} ms`;

export default {
  id: 'sql-fairness',
  title: 'SQL fairness: one project flooding the worker pool',
  scenarios: [],
  checks: [
    {
      name: "B's select 1 while A floods the pool (default settings: 3 workers; per project 2, at most the cores but one)",
      run: async ({ log }) => {
        const r = await measure({}, 16, log);
        log(`  commands: ${r.command.b}  |  ${r.command.a}`);
        return [
          { metric: "B's p99 alone (same run)", value: ms(r.aloneP99), target: 'baseline', pass: null },
          { metric: "B's p99 while A floods", value: ms(r.floodP99), target: '< 100 ms', pass: r.floodP99 < 100 && r.bErrors === 0, note: `p50 ${ms(r.floodP50)}; ${r.ratio.toFixed(1)}× alone; B errors ${r.bErrors}` },
          { metric: "A's statement alone; share of A's requests refused (429, or 400 statement_timeout after waiting 5 s)", value: `${r.slowMs.toFixed(0)} ms; ${(r.a429 * 100).toFixed(0)} %`, target: 'info', pass: null },
        ];
      },
    },
    {
      name: "B's select 1 while A floods with 50 connections (most of A's requests are 429s)",
      run: async ({ log }) => {
        const r = await measure({}, 50, log);
        return [
          {
            metric: "B's p99 while A floods with 50 connections",
            value: ms(r.floodP99),
            target: 'info',
            pass: null,
            note: `alone ${ms(r.aloneP99)}; p50 ${ms(r.floodP50)}; ${(r.a429 * 100).toFixed(0)} % of A's requests refused; B errors ${r.bErrors}`,
          },
        ];
      },
    },
    {
      name: "B's select 1 while A floods, A allowed every worker (PLATFORM_EDGE_SQL_PROJECT_JOBS=3)",
      run: async ({ log }) => {
        const r = await measure({ PLATFORM_EDGE_SQL_PROJECT_JOBS: '3' }, 16, log);
        return [
          {
            metric: "B's p99 while A holds every worker",
            value: ms(r.floodP99),
            target: `≤ one A statement (${r.slowMs.toFixed(0)} ms alone)`,
            pass: null,
            note: `alone ${ms(r.aloneP99)}; p50 ${ms(r.floodP50)}; B errors ${r.bErrors}`,
          },
        ];
      },
    },
  ],
};
