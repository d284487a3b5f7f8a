// Webhook benchmarks (issue 13, "Performance"): insert req/s with 5 webhooks registered vs
// none (two servers, same build, same run), and deliveries/s against a bare fetch (undici)
// POST loop to the same local receiver. Every target is 127.0.0.1; every run is bounded.
// BENCH_WEBHOOK_DELIVERIES (default 5000): rows of the delivery check; BENCH_WEBHOOK_CONCURRENCY:
// the insert target's PLATFORM_EDGE_WEBHOOK_CONCURRENCY (to see the dispatch cost apart from delivering).
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { apiCall, oncePerServer, servers, startServer } from '../lib/index.mjs';

const svc = (info) => ({ 'x-service-key': info.keys.service, 'content-type': 'application/json' });
const INSERT_BODY = { data: { city: 'c1', n: 1, note: 'benchmark row' } };
const DELIVERIES = Number(process.env.BENCH_WEBHOOK_DELIVERIES || 5000);
const CONCURRENCY = 64;

/** A receiver on 127.0.0.1 that answers every POST 204 after reading it; counts them. */
let receiver = null;
function startReceiver() {
  if (receiver) return receiver;
  receiver = new Promise((resolve) => {
    const state = { count: 0, connections: 0, url: '' };
    const server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
      req.resume();
      req.on('end', () => {
        state.count++;
        res.writeHead(204);
        res.end();
      });
    });
    server.on('connection', () => state.connections++);
    server.listen(0, '127.0.0.1', () => {
      state.url = `http://127.0.0.1:${server.address().port}/hook`;
      state.close = () => new Promise((r) => server.close(r));
      server.unref();
      resolve(state);
    });
  });
  return receiver;
}

const api = (server, method, path, body) => apiCall(server, method, path, body, svc(server.info));

const withTable = oncePerServer((server) => api(server, 'POST', '/db/tables', { name: 'bench_hooks', type: 'document' }));
const withHooks = oncePerServer(async (server) => {
  await withTable(server);
  const rx = await startReceiver();
  for (let i = 0; i < 5; i++) await api(server, 'POST', '/webhooks', { url: rx.url, events: ['insert', 'update', 'delete'], table: 'bench_hooks' });
});

const insertSide = (server, setup) => ({
  server,
  method: 'POST',
  body: INSERT_BODY,
  headers: svc,
  setup: async (s) => {
    await setup(s);
    return { path: '/db/tables/bench_hooks/rows' };
  },
});

/** Inserts `n` rows through one NDJSON import; resolves when the receiver has `n` more requests. */
async function deliveriesPerSecond(server, rx, n) {
  const before = rx.count;
  const body = Array.from({ length: n }, (_, i) => JSON.stringify({ data: { i } })).join('\n');
  const t0 = performance.now();
  const res = await fetch(`${server.url}/db/tables/bench_hooks/import`, { method: 'POST', headers: { ...svc(server.info), 'content-type': 'application/x-ndjson' }, body });
  if (res.status !== 200) throw new Error(`import answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
  await res.arrayBuffer();
  const deadline = t0 + 120_000;
  while (rx.count - before < n) {
    if (performance.now() > deadline) throw new Error(`only ${rx.count - before} of ${n} deliveries in 120 s`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return n / ((performance.now() - t0) / 1000);
}

/** The baseline: `n` signed-size JSON POSTs from a bare fetch loop, `CONCURRENCY` at once. */
async function barePerSecond(rx, n) {
  const payload = JSON.stringify({ id: '01a2181c-321a-723c-b41c-0ca3014e132a', type: 'db.insert', table: 'bench_hooks', record: { id: '01a2181c-321a-723c-b41c-0ca3014e132a', data: { i: 1 }, created_at: new Date().toISOString(), updated_at: new Date().toISOString() }, old_record: null, occurred_at: new Date().toISOString() });
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < n) {
      next++;
      const res = await fetch(rx.url, { method: 'POST', headers: { 'content-type': 'application/json', 'webhook-id': 'x', 'webhook-timestamp': '1', 'webhook-signature': 'v1,x' }, body: payload });
      await res.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return n / ((performance.now() - t0) / 1000);
}

export default {
  id: 'webhooks',
  title: 'Webhooks: insert rate with 5 webhooks, delivery rate',
  scenarios: [
    {
      name: 'POST rows (insert) with 5 webhooks (delivering to a local receiver) vs with none',
      baseline: insertSide(servers.edge('uws', { id: 'edge-uws-nohooks' }), withTable),
      target: insertSide(servers.edge('uws', { id: 'edge-uws-hooks', extraEnv: process.env.BENCH_WEBHOOK_CONCURRENCY ? { PLATFORM_EDGE_WEBHOOK_CONCURRENCY: process.env.BENCH_WEBHOOK_CONCURRENCY } : {} }), withHooks),
      targets: { minRatio: 0.9 },
    },
  ],
  checks: [
    {
      name: `deliveries/s (${DELIVERIES} rows imported, one webhook) vs a bare fetch POST loop (${CONCURRENCY} concurrent) to the same receiver`,
      run: async ({ log }) => {
        const rx = await startReceiver();
        const server = await startServer(servers.edge('uws', { id: 'edge-uws-delivery', extraEnv: { PLATFORM_EDGE_WEBHOOK_CONCURRENCY: String(CONCURRENCY) } }));
        try {
          await withTable(server);
          await api(server, 'POST', '/webhooks', { url: rx.url, events: ['insert'], table: 'bench_hooks' });
          // A short warm-up of both paths, then the measured runs, bare first.
          await barePerSecond(rx, 200);
          await deliveriesPerSecond(server, rx, 200);
          const c0 = rx.connections;
          const bare = await barePerSecond(rx, DELIVERIES);
          const c1 = rx.connections;
          const edge = await deliveriesPerSecond(server, rx, DELIVERIES);
          const ratio = edge / bare;
          log(`  bare ${bare.toFixed(0)}/s (${c1 - c0} new connections), webhooks ${edge.toFixed(0)}/s (${rx.connections - c1} new connections), ratio ${ratio.toFixed(2)}`);
          return [
            { metric: 'bare fetch (undici) POST loop to the receiver', value: `${bare.toFixed(0)} /s`, target: 'baseline', pass: null },
            { metric: 'webhook deliveries, import to last delivery received', value: `${edge.toFixed(0)} /s`, target: 'report', pass: null },
            { metric: 'ratio deliveries / bare', value: ratio.toFixed(2), target: '≥ 0.50', pass: ratio >= 0.5 },
          ];
        } finally {
          await server.stop();
          await rx.close();
        }
      },
    },
  ],
};
