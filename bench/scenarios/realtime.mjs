// Realtime benchmarks (issue 13, "Performance"), scaled down by default for a shared machine:
// BENCH_RT_CLIENTS SSE + as many WebSocket subscribers (default 100 + 100; the issue's figure
// is 1,000 + 1,000), BENCH_RT_RATE inserts/s (default 100) for BENCH_DURATION, and
// BENCH_RT_IDLE idle connections for the memory check (default 1,000; the issue's is 10,000).
//
// - commit-to-delivery latency: the change's `at` (the server's commit time) to its arrival at
//   each subscriber, p50/p99 over every delivery; without a policy and under `owner = auth.uid()`.
// - deliveries/s: inserts as fast as 8 concurrent writers go, every subscriber counting what it
//   gets, against a bare uWS server that publish()es each POST to the same clients (the baseline,
//   same run; bench/bare-uws-pubsub.mjs).
// - RSS per idle WebSocket / SSE connection.
// Every client runs in this process against 127.0.0.1 only; every phase is bounded in time.
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';
import { apiCall, cpuMs, DEFAULTS, rssMb, startServer } from '../lib/index.mjs';
import { openInBatches, openTargets, sse, wsClient } from '../lib/realtime-clients.mjs';
import { nativeClients } from '../lib/rt-native.mjs';
import { seconds } from '../lib/wrk.mjs';

const CLIENTS = Number(process.env.BENCH_RT_CLIENTS || 100);
const RATE = Number(process.env.BENCH_RT_RATE || 100);
const IDLE = Number(process.env.BENCH_RT_IDLE || 1000);
const DURATION_S = Math.max(1, seconds(DEFAULTS.duration));
const USERS = 20;
/** Worker threads the latency checks' clients are spread over (0, the default: all in this thread; on 2 cores more threads only compete with the server). */
const THREADS = Number(process.env.BENCH_RT_CLIENT_THREADS ?? 0);
/** BENCH_RT_CLIENT: `native` (default; bench/rt-client.c, built with cc on first use) or `node`. */
const NATIVE = (process.env.BENCH_RT_CLIENT || 'native') !== 'node';
/** PLATFORM_EDGE_REALTIME_MAX_PER_ADDRESS's default. */
const CAP = 1000;
const WRITERS = 8;
const node = process.execPath;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const OWN = "data->>'owner' = auth.uid()";

// note: BENCH_RT_NODE_ARGS (space-separated, e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`) profiles the server;
// BENCH_RT_ONLY (comma-separated check numbers, 1-based) runs only those checks.
const NODE_ARGS = (process.env.BENCH_RT_NODE_ARGS || '').split(' ').filter(Boolean);
const edgeSpec = (http) => ({
  id: `edge-rt-${http}`,
  label: `platform-edge (${http})`,
  // note: `pid` is the server itself (bin/platform-edge.js runs it in this process).
  cmd: [node, ...NODE_ARGS, 'bin/platform-edge.js', 'serve', '--ephemeral', '--port', '0', '--json'],
  env: { PLATFORM_EDGE_HTTP: http, PLATFORM_EDGE_RATE_LIMIT: 'off', PLATFORM_EDGE_REALTIME_MAX_PER_ADDRESS: '0', PLATFORM_EDGE_REALTIME_MAX_PER_PROJECT: '0' },
});
const bareSpec = { id: 'bare-uws-pubsub', label: 'bare uWS publish', cmd: [node, 'bench/bare-uws-pubsub.mjs', '0'] };

/** The ms a process's main thread spent runnable but waiting for a CPU (/proc/PID/schedstat), or NaN. */
function queuedMs(pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return NaN;
  }
}

function pct(sorted, p) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : NaN;
}

/** Our server with a `bench` table (no policy) and an `owned` table (owner policy), and USERS anonymous users. */
async function edgeWithTables(http) {
  const server = await startServer(edgeSpec(http));
  const svc = { 'x-service-key': server.info.keys.service, 'content-type': 'application/json' };
  await apiCall(server, 'POST', '/db/tables', { name: 'bench' }, svc);
  await apiCall(server, 'POST', '/db/tables', { name: 'owned' }, svc);
  await apiCall(server, 'PUT', '/db/tables/owned/rls', { enabled: true, policies: { select: OWN } }, svc);
  return { server, svc };
}

async function users(server, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const s = await apiCall(server, 'POST', '/auth/anonymous', {}, { 'x-service-key': server.info.keys.publishable, 'content-type': 'application/json' });
    out.push({ id: s.user.id, token: s.access_token });
  }
  return out;
}

/**
 * CLIENTS SSE + CLIENTS WS subscribers of `table`, RATE inserts/s for DURATION_S: commit-to-delivery latencies.
 * `owners` (users) set: each subscriber signs in as one of them, each insert is owned by the next one.
 */
async function latency(server, svc, table, owners) {
  const key = server.info.keys.publishable;
  const base = server.url.replace('http', 'ws');
  const targets = [];
  for (let i = 0; i < CLIENTS; i++) {
    const tok = owners ? `&access_token=${owners[i % owners.length].token}` : '';
    targets.push({ kind: 'sse', url: `${server.url}/realtime/stream?table=${table}&apikey=${key}${tok}` });
  }
  for (let i = 0; i < CLIENTS; i++) {
    const protocols = ['platform-edge.v1', `key.${key}`, ...(owners ? [`bearer.${owners[i % owners.length].token}`] : [])];
    targets.push({ kind: 'ws', url: `${base}/realtime/ws?table=${table}`, protocols });
  }
  return measureLatency(
    targets,
    (i) => {
      const data = owners ? { owner: owners[i % owners.length].id, n: i } : { n: i };
      return fetch(`${server.url}/db/tables/${table}/rows`, { method: 'POST', headers: svc, body: JSON.stringify({ data }) }).then((r) => r.text());
    },
    owners ? owners.length : 1,
    server.pid,
  );
}

/**
 * "10,000 sockets from one address" with the default caps: the per-address realtime cap (1,000) lets
 * that many in and answers the next WebSocket upgrade and SSE stream 429 `rate_limited` (then one more
 * opens once one closes). Returns what the over-cap attempts got.
 */
async function perAddressCap(http) {
  const spec = edgeSpec(http);
  const env = { ...spec.env };
  delete env.PLATFORM_EDGE_REALTIME_MAX_PER_ADDRESS;
  const server = await startServer({ ...spec, env, id: `edge-rt-cap-${http}` });
  const clients = [];
  try {
    const svc = { 'x-service-key': server.info.keys.service, 'content-type': 'application/json' };
    await apiCall(server, 'POST', '/db/tables', { name: 'idle' }, svc);
    const key = server.info.keys.publishable;
    const wsUrl = `${server.url.replace('http', 'ws')}/realtime/ws?table=idle&apikey=${key}`;
    await openInBatches(CAP, (i) => (i % 2 ? wsClient(wsUrl, () => {}, clients) : sse(`${server.url}/realtime/stream?table=idle&apikey=${key}`, () => {}, clients)));
    const ws = await wsClient(wsUrl, () => {}, clients).then(
      () => 'opened',
      (e) => e.message,
    );
    const res = await fetch(`${server.url}/realtime/stream?table=idle&apikey=${key}`);
    const body = await res.text();
    return { ws, sse: `${res.status} ${JSON.parse(body).error?.code}` };
  } finally {
    for (const c of clients) c.close();
    await server.stop();
  }
}

/** The same clients and load against the bare uWS publish() server: each message's `at` is its send time. */
async function bareLatency(bare) {
  const targets = [
    ...Array.from({ length: CLIENTS }, () => ({ kind: 'sse', url: `${bare.url}/sse` })),
    ...Array.from({ length: CLIENTS }, () => ({ kind: 'ws', url: `${bare.url.replace('http', 'ws')}/ws` })),
  ];
  return measureLatency(
    targets,
    (i) => fetch(`${bare.url}/publish`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: bareMsg(i) }).then((r) => r.text()),
    1,
    bare.pid,
  );
}

/**
 * The clients of `targets`: by default one native epoll process (bench/rt-client.c: a Node client
 * process for 2,000 streams saturates its core and measures itself); BENCH_RT_CLIENT=node: Node
 * clients spread over THREADS worker threads (or in this one). count() → deliveries so far;
 * stop() → { n, p50, p99 } of the commit-to-delivery latencies; cpuMs() → the clients' CPU.
 */
async function clientPool(targets) {
  if (NATIVE) {
    const c = await nativeClients(targets);
    return {
      count: async () => (await c.count()).delivered,
      closed: async () => (await c.count()).closed,
      stop: () => c.stop(),
      kill: () => c.kill(),
      cpuMs: () => cpuMs(c.pid),
      pid: c.pid,
    };
  }
  const summary = (lat) => {
    lat.sort((a, b) => a - b);
    return { n: lat.length, p50: pct(lat, 0.5), p99: pct(lat, 0.99) };
  };
  const own = () => {
    const c = process.cpuUsage();
    return (c.user + c.system) / 1000;
  };
  if (THREADS === 0) {
    const lat = [];
    const clients = [];
    await openTargets(targets, (text) => lat.push(Date.now() - Date.parse(JSON.parse(text).at)), clients);
    return {
      count: async () => lat.length,
      stop: async () => {
        for (const c of clients) c.close();
        return summary(lat);
      },
      kill: () => {
        for (const c of clients) c.close();
      },
      cpuMs: own,
    };
  }
  const workers = Array.from({ length: THREADS }, (_, w) => {
    const worker = new Worker(new URL('../lib/realtime-clients.mjs', import.meta.url), { workerData: { targets: targets.filter((_, i) => i % THREADS === w) } });
    worker.setMaxListeners(0);
    const next = () => new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    return { worker, next };
  });
  const started = await Promise.all(workers.map((w) => w.next()));
  const failed = started.find((m) => m.error);
  const ask = (msg) => Promise.all(workers.map((w) => {
    const p = w.next();
    w.worker.postMessage(msg);
    return p;
  }));
  if (failed) {
    await Promise.all(workers.map((w) => w.worker.terminate()));
    throw new Error(failed.error);
  }
  return {
    count: async () => (await ask('count')).reduce((n, m) => n + m.count, 0),
    stop: async () => {
      const out = (await ask('stop')).flatMap((m) => m.lat);
      await Promise.all(workers.map((w) => w.worker.terminate()));
      return summary(out);
    },
    kill: () => void Promise.all(workers.map((w) => w.worker.terminate())),
    cpuMs: own,
  };
}

// note: a change message of the same size as ours; the bare server sets `at` to when it got the publish
// (as ours is the commit time, after the request arrived), so a request queued in this process does not count.
const bareMsg = (i) => JSON.stringify({ type: 'change', op: 'insert', table: 'bench', id: '019ac0de-0000-7000-8000-000000000000', data: { n: i }, old: null, seq: i, at: '0000-00-00T00:00:00.000Z' });

/**
 * Opens the clients, writes RATE/s for DURATION_S, collects every delivery's latency. Also the CPU
 * (share of one core) the server and this process (every client) used meanwhile: on 2 shared cores,
 * a client process near 100 % is the bottleneck, whatever the server.
 */
async function measureLatency(targets, write, share, pid) {
  const pool = await clientPool(targets);
  let lat = null;
  try {
    const total = Math.round(RATE * DURATION_S);
    const pending = [];
    let failedWrites = 0;
    const t0 = performance.now();
    const cpu0 = pool.cpuMs();
    const srv0 = cpuMs(pid);
    const q0 = [queuedMs(pid), queuedMs(pool.pid)];
    for (let i = 0; i < total; i++) {
      const wait = t0 + (i * 1000) / RATE - performance.now();
      if (wait > 0) await sleep(wait);
      // note: a write that fails (a starved server's connect timeout) is counted, not thrown: it must not end the bench.
      pending.push(write(i).catch(() => void failedWrites++));
    }
    await Promise.all(pending);
    const expected = Math.round(((total - failedWrites) * 2 * CLIENTS) / share);
    // note: deliveries still queued (in the server or in the clients) are waited for until none came for a second.
    for (let n = await pool.count(), last = -1; n < expected && n !== last; n = await pool.count()) {
      last = n;
      await sleep(1000);
    }
    const wall = performance.now() - t0;
    const closedN = pool.closed ? await pool.closed() : 0;
    const srvMs = cpuMs(pid) - srv0;
    const q = [queuedMs(pid) - q0[0], queuedMs(pool.pid) - q0[1]].map((x) => Math.round((100 * x) / wall));
    const starved = pool.pid === undefined ? '' : `; waiting for a CPU while runnable: server ${q[0]} %, clients ${q[1]} % of the run`;
    const cpu = `server CPU ${((srvMs * 1000) / Math.max(1, await pool.count())).toFixed(2)} µs per delivery; CPU over the run: server ${Math.round((100 * srvMs) / wall)} %, clients (${NATIVE ? 'native' : 'node'}) ${Math.round((100 * (pool.cpuMs() - cpu0)) / wall)} % of a core, load average ${loadavg()[0].toFixed(2)}`;
    lat = await pool.stop();
    const kinds = lat.sse ? `; p99 SSE ${lat.sse.p99.toFixed(1)} ms (${lat.sse.n} delivered), WS ${lat.ws.p99.toFixed(1)} ms (${lat.ws.n})` : '';
    const lost = `${failedWrites ? `; ${failedWrites} writes failed` : ''}${closedN ? `; ${closedN} subscribers closed by the server (slow consumer)` : ''}`;
    return { p50: lat.p50, p99: lat.p99, delivered: lat.n, expected, cpu: cpu + starved + kinds + lost };
  } finally {
    if (lat === null) pool.kill();
  }
}

/** Deliveries/s with WRITERS concurrent writers for DURATION_S, the subscribers of `targets`. */
async function throughput(targets, write, pid) {
  const pool = await clientPool(targets);
  let delivered = 0;
  try {
    const cpu0 = cpuMs(pid);
    const end = performance.now() + DURATION_S * 1000;
    let writes = 0;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (performance.now() < end) {
          await write(writes++).catch(() => {});
        }
      }),
    );
    const t = performance.now();
    // note: deliveries still in flight when the writers stop count, for at most a second.
    let last = -1;
    while (delivered !== last && performance.now() - t < 1000) {
      last = delivered;
      delivered = await pool.count();
      await sleep(100);
    }
    const s = (performance.now() - (end - DURATION_S * 1000)) / 1000;
    return { perS: delivered / s, writes, usPer: ((cpuMs(pid) - cpu0) * 1000) / Math.max(1, delivered) };
  } finally {
    pool.kill();
  }
}

async function idleRss(http, kind) {
  // note: node:http's connection caps (10,000 in all, 4,096 per address) answer 503 past them and the
  // realtime caps are off in edgeSpec: the memory figure needs IDLE + 2 connections from this one address.
  const spec = edgeSpec(http);
  const env = { ...spec.env, PLATFORM_EDGE_MAX_CONNECTIONS: '0', PLATFORM_EDGE_MAX_CONNECTIONS_PER_IP: '0' };
  const server = await startServer({ ...spec, env, id: `edge-rt-idle-${http}-${kind}` });
  const clients = [];
  let native = null;
  try {
    const svc = { 'x-service-key': server.info.keys.service, 'content-type': 'application/json' };
    await apiCall(server, 'POST', '/db/tables', { name: 'idle' }, svc);
    const key = server.info.keys.publishable;
    // note: one of each first, so the first-use allocations do not count per connection.
    await sse(`${server.url}/realtime/stream?table=idle&apikey=${key}`, () => {}, clients);
    await wsClient(`${server.url.replace('http', 'ws')}/realtime/ws?table=idle&apikey=${key}`, () => {}, clients);
    await sleep(500);
    const before = rssMb(server.pid);
    const url = kind === 'ws' ? `${server.url.replace('http', 'ws')}/realtime/ws?table=idle&apikey=${key}` : `${server.url}/realtime/stream?table=idle&apikey=${key}`;
    if (NATIVE) native = await nativeClients(Array.from({ length: IDLE }, () => ({ kind, url })));
    else await openInBatches(IDLE, () => (kind === 'ws' ? wsClient(url, () => {}, clients) : sse(url, () => {}, clients)));
    await sleep(1000);
    const after = rssMb(server.pid);
    return ((after - before) * 1024) / IDLE;
  } finally {
    native?.kill();
    for (const c of clients) c.close();
    await server.stop();
  }
}

const ONLY = (process.env.BENCH_RT_ONLY || '').split(',').filter(Boolean).map(Number);
const fmt = (x) => `${x.toFixed(1)} ms`;
const scale = `${CLIENTS} SSE + ${CLIENTS} WS, ${RATE} inserts/s for ${DURATION_S} s`;

export default {
  id: 'realtime',
  title: 'Realtime: commit-to-delivery, fan-out, idle memory',
  scenarios: [],
  checks: ([
    {
      name: `commit-to-delivery latency (uWS; ${scale})`,
      run: async ({ log }) => {
        const { server, svc } = await edgeWithTables('uws');
        try {
          const open = await latency(server, svc, 'bench', null);
          log(`  no policy: ${open.delivered}/${open.expected} delivered`);
          const owners = await users(server, USERS);
          const own = await latency(server, svc, 'owned', owners);
          log(`  owner policy: ${own.delivered}/${own.expected} delivered`);
          await server.stop();
          // note: the same clients and load against the bare uWS publish() server, in the same run: what the
          // clients (one process, on the server's cores) can take at all, so the figure above says what our server costs.
          const bare = await startServer(bareSpec);
          let b;
          try {
            b = await bareLatency(bare);
          } finally {
            await bare.stop();
          }
          log(`  bare uWS publish(): ${b.delivered}/${b.expected} delivered`);
          return [
            { metric: 'p99, no policy', value: fmt(open.p99), target: '≤ 50 ms', pass: open.p99 <= 50 && open.delivered === open.expected, note: `p50 ${fmt(open.p50)}; ${open.delivered}/${open.expected} delivered; ${open.cpu}` },
            { metric: `p99, owner = auth.uid() (${USERS} users)`, value: fmt(own.p99), target: '≤ 100 ms', pass: own.p99 <= 100 && own.delivered === own.expected, note: `p50 ${fmt(own.p50)}; ${own.delivered}/${own.expected} delivered; ${own.cpu}` },
            { metric: 'p99, bare uWS publish() (same clients, same load)', value: fmt(b.p99), target: '—', pass: null, note: `p50 ${fmt(b.p50)}; ${b.delivered}/${b.expected} delivered; ${b.cpu}` },
          ];
        } finally {
          await server.stop();
        }
      },
    },
    {
      name: `commit-to-delivery latency (node:http; ${scale})`,
      run: async () => {
        const { server, svc } = await edgeWithTables('node');
        try {
          const open = await latency(server, svc, 'bench', null);
          return [{ metric: 'p99, no policy (node:http)', value: fmt(open.p99), target: '—', pass: null, note: `p50 ${fmt(open.p50)}; ${open.delivered}/${open.expected} delivered; ${open.cpu}` }];
        } finally {
          await server.stop();
        }
      },
    },
    {
      name: `deliveries/s vs a bare uWS publish() server (${CLIENTS} SSE + ${CLIENTS} WS, ${WRITERS} writers, ${DURATION_S} s)`,
      run: async () => {
        const { server, svc } = await edgeWithTables('uws');
        let edge;
        try {
          const key = server.info.keys.publishable;
          edge = await throughput(
            [
              ...Array.from({ length: CLIENTS }, () => ({ kind: 'sse', url: `${server.url}/realtime/stream?table=bench&apikey=${key}` })),
              ...Array.from({ length: CLIENTS }, () => ({ kind: 'ws', url: `${server.url.replace('http', 'ws')}/realtime/ws?table=bench&apikey=${key}` })),
            ],
            (i) => fetch(`${server.url}/db/tables/bench/rows`, { method: 'POST', headers: svc, body: JSON.stringify({ data: { n: i } }) }).then((r) => r.text()),
            server.pid,
          );
        } finally {
          await server.stop();
        }
        const bare = await startServer(bareSpec);
        let base;
        try {
          base = await throughput(
            [
              ...Array.from({ length: CLIENTS }, () => ({ kind: 'sse', url: `${bare.url}/sse` })),
              ...Array.from({ length: CLIENTS }, () => ({ kind: 'ws', url: `${bare.url.replace('http', 'ws')}/ws` })),
            ],
            (i) => fetch(`${bare.url}/publish`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: bareMsg(i) }).then((r) => r.text()),
            bare.pid,
          );
        } finally {
          await bare.stop();
        }
        const ratio = edge.perS / base.perS;
        return [
          { metric: 'deliveries/s, platform-edge (uWS)', value: edge.perS.toFixed(0), target: '—', pass: null, note: `${edge.writes} inserts; server CPU ${edge.usPer.toFixed(2)} µs per delivery; load average ${loadavg()[0].toFixed(2)}` },
          { metric: 'deliveries/s, bare uWS publish()', value: base.perS.toFixed(0), target: '—', pass: null, note: `${base.writes} publishes; server CPU ${base.usPer.toFixed(2)} µs per delivery` },
          { metric: 'ratio edge / bare', value: ratio.toFixed(2), target: '≥ 0.50', pass: ratio >= 0.5, note: `CPU per delivery, bare ÷ edge: ${(base.usPer / edge.usPer).toFixed(2)}` },
        ];
      },
    },
    {
      name: `RSS per idle connection (${IDLE} connections)`,
      run: async () => {
        const rows = [];
        for (const http of ['uws', 'node']) {
          const ws = await idleRss(http, 'ws');
          const sseKb = await idleRss(http, 'sse');
          rows.push({ metric: `WebSocket (${http})`, value: `${ws.toFixed(1)} KiB`, target: http === 'uws' ? '≤ 16 KiB' : '—', pass: http === 'uws' ? ws <= 16 : null });
          rows.push({ metric: `SSE (${http})`, value: `${sseKb.toFixed(1)} KiB`, target: http === 'uws' ? '≤ 32 KiB' : '—', pass: http === 'uws' ? sseKb <= 32 : null });
        }
        const cap = await perAddressCap('uws');
        rows.push({
          metric: `stream ${CAP + 1} from one address, default caps (uWS)`,
          value: `WS: ${cap.ws}; SSE: ${cap.sse}`,
          target: '429 rate_limited',
          pass: cap.ws === 'WS answered 429' && cap.sse === '429 rate_limited',
          note: `the memory rows above raise the caps (PLATFORM_EDGE_REALTIME_MAX_PER_ADDRESS=0, node:http's PLATFORM_EDGE_MAX_CONNECTIONS[_PER_IP]=0) to hold ${IDLE} from one address`,
        });
        return rows;
      },
    },
  ]).filter((_, i) => ONLY.length === 0 || ONLY.includes(i + 1)),
};

