// Auth benchmarks (issue 3, "Performance"): GET /auth/me against the foundation's
// key-authenticated no-op route on the same server, and the argon2-bound sign-up/sign-in
// rates with the event loop's responsiveness while hashing.
import { performance } from 'node:perf_hooks';
import { median, servers, startServer } from '../lib/index.mjs';

const PASSWORD = 'bench password 1';
const keyHeaders = (info) => ({ 'x-service-key': info.keys.publishable });
let seq = 0;
const uniqueEmail = () => `bench-${process.pid}-${Date.now()}-${++seq}@example.com`;

async function post(url, path, info, body) {
  const res = await fetch(url + path, {
    method: 'POST',
    headers: { ...keyHeaders(info), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(json).slice(0, 200)}`);
  return json;
}

/** Registers one user and sends its access token with the key. */
async function withUserToken(server) {
  const s = await post(server.url, '/auth/register', server.info, { email: uniqueEmail(), password: PASSWORD });
  return { headers: { ...keyHeaders(server.info), authorization: `Bearer ${s.access_token}` } };
}

const meScenario = (http, minRatio) => ({
  name: `GET /auth/me (Bearer) vs GET /health/key, same server (${http === 'uws' ? 'uWS' : 'node:http'})`,
  baseline: { server: servers.edge(http), path: '/health/key', headers: keyHeaders },
  target: { server: servers.edge(http), path: '/auth/me', setup: withUserToken },
  targets: minRatio === undefined ? {} : { minRatio },
});

/**
 * Runs `op` from `concurrency` loops for `ms`, while probing GET /health every 20 ms;
 * returns ops/s and the probe latencies (the event loop's responsiveness while hashing).
 */
async function hashLoad(url, op, { concurrency = 8, ms = 5000 } = {}) {
  const end = performance.now() + ms;
  let done = 0;
  const probes = [];
  const opMs = [];
  const worker = async () => {
    while (performance.now() < end) {
      const t = performance.now();
      await op();
      opMs.push(performance.now() - t);
      done++;
    }
  };
  const prober = async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      await (await fetch(`${url}/health`)).arrayBuffer();
      probes.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const t0 = performance.now();
  await Promise.all([...Array.from({ length: concurrency }, worker), prober()]);
  const sorted = probes.sort((a, b) => a - b);
  return {
    rate: done / ((performance.now() - t0) / 1000),
    opP50: median(opMs),
    p50: median(sorted),
    p99: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))],
  };
}

const fmt = (x, unit) => `${x.toFixed(unit === '/s' ? 1 : 2)} ${unit}`;

export default {
  id: 'auth',
  title: 'Auth: token verification and argon2-bound sign-up/sign-in',
  scenarios: [meScenario('uws', 0.6), meScenario('node', 0.6)],
  checks: [
    {
      name: 'register and login rate (argon2id 19 MiB, t=2), event loop while hashing',
      run: async ({ log }) => {
        const server = await startServer(servers.edge('uws'));
        try {
          const { url, info } = server;
          const reg = await hashLoad(url, () => post(url, '/auth/register', info, { email: uniqueEmail(), password: PASSWORD }));
          const email = uniqueEmail();
          await post(url, '/auth/register', info, { email, password: PASSWORD });
          const login = await hashLoad(url, () => post(url, '/auth/login', info, { email, password: PASSWORD }));
          log(`  register ${reg.rate.toFixed(1)}/s, login ${login.rate.toFixed(1)}/s`);
          return [
            { metric: 'POST /auth/register, 8 concurrent clients, 5 s', value: fmt(reg.rate, '/s'), target: 'report', pass: null },
            { metric: 'POST /auth/login, 8 concurrent clients, 5 s', value: fmt(login.rate, '/s'), target: 'report', pass: null },
            // note: were hashing on the main thread, with 8 clients hashing the loop would nearly always be busy and a
            // probe would wait about one hash (or more); off it, probes only share the cores with the hashing threads.
            { metric: 'GET /health latency p50 / p99 during register load', value: `${fmt(reg.p50, 'ms')} / ${fmt(reg.p99, 'ms')}`, target: 'p50 < ½ of a register', pass: reg.p50 < reg.opP50 / 2, note: `register p50 ${fmt(reg.opP50, 'ms')}` },
            { metric: 'GET /health latency p50 / p99 during login load', value: `${fmt(login.p50, 'ms')} / ${fmt(login.p99, 'ms')}`, target: 'p50 < ½ of a login', pass: login.p50 < login.opP50 / 2, note: `login p50 ${fmt(login.opP50, 'ms')}` },
            { metric: 'context: POST /auth/register latency p50 under that load', value: fmt(reg.opP50, 'ms'), target: '—', pass: null },
            { metric: 'context: POST /auth/login latency p50 under that load', value: fmt(login.opP50, 'ms'), target: '—', pass: null },
          ];
        } finally {
          await server.stop();
        }
      },
    },
  ],
};
