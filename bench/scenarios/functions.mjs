// Functions (issue 16, "Performance"): warm invoke of a trivial function over HTTP against
// the authenticated no-op route (GET /health/key) on the same kind of server, same run; the
// bare baseline of an in-process isolated-vm call of the same function; cold start (the first
// call after a deploy of a 10 KB source) p50/p99.
import { spawn } from 'node:child_process';
import { apiCall, median, oncePerServer, ROOT, servers, startServer } from '../lib/index.mjs';

const TRIVIAL = 'export default () => 1;';
const key = (info) => ({ 'x-service-key': info.keys.publishable });
const svc = (info) => ({ 'x-service-key': info.keys.service, 'content-type': 'application/json' });
const COLD_RUNS = Number(process.env.BENCH_FUNCTIONS_COLD_RUNS || 40);
const DURATION = process.env.BENCH_DURATION || '3s';

const deployTrivial = oncePerServer((server) => apiCall(server, 'PUT', '/functions/one', { source: TRIVIAL }, svc(server.info)));

const warmScenario = (http, minRatio) => ({
  name: `POST /functions/one (\`return 1\`, warm) vs GET /health/key, same server (${http === 'uws' ? 'uWS' : 'node:http'})`,
  baseline: { server: servers.edge(http), path: '/health/key', headers: key },
  target: {
    server: servers.edge(http),
    path: '/functions/one',
    method: 'POST',
    headers: key,
    setup: async (server) => {
      await deployTrivial(server);
      return {};
    },
  },
  targets: { minRatio },
});

/** A 10 KB module: a handler plus padding functions the compiler must parse. */
function tenKb(i) {
  let src = `export default (a) => ${i} + helper0(1);\n`;
  for (let n = 0; src.length < 10 * 1024; n++) src += `function helper${n}(x) { const t = [x, ${n}, 'padding to make the module ten kilobytes long']; return t.length + x; }\n`;
  return src;
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

/** The bare in-process isolated-vm loop (bench/bare-ivm.mjs) in its own Node with the flag. */
function bareIvm(seconds) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--no-node-snapshot', 'bench/bare-ivm.mjs', String(seconds), '50'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`bare-ivm exited ${code}`))));
  });
}

async function warmHttpRps(server, log) {
  // note: a short single-connection loop is enough for the per-call overhead figure; the wrk scenario above gives req/s.
  const url = `${server.url}/functions/one`;
  const headers = key(server.info);
  for (let i = 0; i < 200; i++) await (await fetch(url, { method: 'POST', headers })).text();
  const n = 1000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await (await fetch(url, { method: 'POST', headers })).text();
  const us = ((performance.now() - t0) * 1000) / n;
  log(`  sequential warm invoke: ${us.toFixed(0)} µs/call`);
  return us;
}

export default {
  id: 'functions',
  title: 'Functions: warm invoke and cold start',
  scenarios: [warmScenario('uws', 0.25), warmScenario('node', 0.25)],
  checks: [
    {
      name: 'bare isolate call, per-call overhead and cold start',
      run: async ({ log }) => {
        const seconds = Math.max(1, parseInt(DURATION, 10) || 3);
        const bare = await bareIvm(seconds);
        log(`  bare isolated-vm: ${Math.round(bare.calls_per_s)} calls/s (50 in flight)`);
        const bareSeq = await new Promise((resolve, reject) => {
          const p = spawn(process.execPath, ['--no-node-snapshot', 'bench/bare-ivm.mjs', '1', '1'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
          let out = '';
          p.stdout.on('data', (d) => (out += d));
          p.on('error', reject);
          p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`bare-ivm exited ${code}`))));
        });
        const server = await startServer(servers.edge('uws', { id: 'edge-uws-fn-cold' }));
        try {
          await apiCall(server, 'PUT', '/functions/one', { source: TRIVIAL }, svc(server.info));
          const httpUs = await warmHttpRps(server, log);
          const cold = [];
          const warm = [];
          for (let i = 0; i < COLD_RUNS; i++) {
            const name = `cold${i}`;
            await apiCall(server, 'PUT', `/functions/${name}`, { source: tenKb(i) }, svc(server.info));
            const t0 = performance.now();
            const r = await apiCall(server, 'POST', `/functions/${name}`, undefined, key(server.info));
            cold.push(performance.now() - t0);
            if (r.result !== i + 4) throw new Error(`cold${i} answered ${JSON.stringify(r)}`);
            const t1 = performance.now();
            await apiCall(server, 'POST', `/functions/${name}`, undefined, key(server.info));
            warm.push(performance.now() - t1);
          }
          const p50 = pct(cold, 50);
          const p99 = pct(cold, 99);
          log(`  cold start: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms over ${COLD_RUNS}`);
          return [
            { metric: 'bare in-process isolated-vm call of `return 1` (warm isolate, 50 in flight)', value: `${Math.round(bare.calls_per_s).toLocaleString('en-US')} calls/s`, target: '—', pass: null },
            { metric: 'bare in-process call, one at a time', value: `${bareSeq.us_per_call.toFixed(0)} µs/call`, target: '—', pass: null },
            { metric: 'warm invoke over HTTP (uWS), one connection, one at a time', value: `${httpUs.toFixed(0)} µs/call`, target: '—', pass: null },
            { metric: 'overhead of HTTP + pipeline + ctx + JSON over the bare call', value: `${(httpUs - bareSeq.us_per_call).toFixed(0)} µs/call`, target: 'reported', pass: null },
            { metric: `cold start: first invoke after deploy of a 10 KB source, client round trip, p50 of ${COLD_RUNS}`, value: `${p50.toFixed(1)} ms`, target: '—', pass: null },
            { metric: `cold start p99 of ${COLD_RUNS}`, value: `${p99.toFixed(1)} ms`, target: '< 100 ms', pass: p99 < 100 },
            { metric: 'context: the second (warm) invoke of the same functions, median', value: `${median(warm).toFixed(1)} ms`, target: '—', pass: null },
          ];
        } finally {
          await server.stop();
        }
      },
    },
  ],
};
