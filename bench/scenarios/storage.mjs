// Storage benchmarks (issue 14, "Performance"): GET of a 4 KiB public object by short id, and its
// 304 revalidation, against a bare uWS server sending the same bytes from memory
// (bench/bare-uws-bytes.mjs) measured in the same run.
import { createHash } from 'node:crypto';
import { oncePerServer, rssMb, servers, startServer } from '../lib/index.mjs';
import { objectBody } from '../lib/object-body.mjs';

const bareBytes = { id: 'bare-uws-bytes', label: 'bare uWS, 4 KiB from memory', cmd: [process.execPath, 'bench/bare-uws-bytes.mjs', '0'] };
const edge = servers.edge('uws');
const body = objectBody();
const etag = `"${createHash('sha256').update(body).digest('hex')}"`;

/** A public bucket and one 4 KiB object, once per server; returns the object's short id. */
const seed = oncePerServer(async (server) => {
  const svc = { 'x-service-key': server.info.keys.service };
  const mk = await fetch(`${server.url}/storage/buckets`, { method: 'POST', headers: { ...svc, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench', public: true }) });
  if (mk.status !== 201) throw new Error(`bucket: ${mk.status} ${await mk.text()}`);
  const put = await fetch(`${server.url}/storage/objects/bench/object.bin`, { method: 'PUT', headers: { ...svc, 'content-type': 'application/octet-stream' }, body });
  const rec = await put.json();
  if (put.status !== 201 || rec.etag !== etag) throw new Error(`object: ${put.status} ${JSON.stringify(rec)}`);
  return rec.id;
});

/** Size of the big-body check, MiB (1 GiB by default; lower it on a busy machine). */
const BIG_MB = Number(process.env.BENCH_STORAGE_BIG_MB || 1024);
const MiB = 1024 * 1024;

/** Samples a process's RSS every 100 ms while `work` runs; returns the work's result and the peak. */
async function peakRss(pid, work) {
  let peak = rssMb(pid) ?? 0;
  const t = setInterval(() => (peak = Math.max(peak, rssMb(pid) ?? 0)), 100);
  try {
    const result = await work();
    return { result, peak: Math.max(peak, rssMb(pid) ?? 0) };
  } finally {
    clearInterval(t);
  }
}

/**
 * RSS while a BIG_MB object is PUT (streamed, chunked, generated on the fly) and read back
 * (streamed, discarded): the growth over the idle RSS before each.
 */
async function bigBody({ log }) {
  // note: its own server, with no request timeout (a 1 GiB body on a busy machine takes longer than 30 s).
  const server = await startServer(servers.edge('uws', { id: 'edge-uws-big', extraEnv: { PLATFORM_EDGE_REQUEST_TIMEOUT_MS: '0' } }));
  try {
    const svc = { 'x-service-key': server.info.keys.service };
    const mk = await fetch(`${server.url}/storage/buckets`, { method: 'POST', headers: { ...svc, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'big', public: false }) });
    if (mk.status !== 201) throw new Error(`bucket: ${mk.status}`);
    const chunk = Buffer.alloc(MiB, 0x5a);
    let sent = 0;
    const body = new ReadableStream({
      pull(c) {
        if (sent >= BIG_MB) return c.close();
        sent++;
        c.enqueue(chunk);
      },
    });
    const idlePut = rssMb(server.pid);
    const put = await peakRss(server.pid, async () => {
      const res = await fetch(`${server.url}/storage/objects/big/blob.bin`, { method: 'PUT', headers: { ...svc, 'content-type': 'application/octet-stream' }, body, duplex: 'half' });
      return { status: res.status, rec: await res.json() };
    });
    if (put.result.status !== 201 || put.result.rec.size !== BIG_MB * MiB) throw new Error(`PUT answered ${put.result.status}: ${JSON.stringify(put.result.rec)}`);
    const idleGet = rssMb(server.pid);
    const get = await peakRss(server.pid, async () => {
      const res = await fetch(`${server.url}/storage/objects/big/blob.bin`, { headers: svc });
      let n = 0;
      for await (const c of res.body) n += c.length;
      return n;
    });
    if (get.result !== BIG_MB * MiB) throw new Error(`GET read ${get.result} bytes`);
    const putGrowth = put.peak - idlePut;
    const getGrowth = get.peak - idleGet;
    log(`  ${BIG_MB} MiB: PUT RSS ${idlePut.toFixed(0)} → peak ${put.peak.toFixed(0)} MB; GET ${idleGet.toFixed(0)} → ${get.peak.toFixed(0)} MB`);
    return [
      { metric: `RSS growth during a ${BIG_MB} MiB PUT (streamed, chunked)`, value: `${putGrowth.toFixed(1)} MB`, target: '≤ 64 MiB', pass: putGrowth <= 64 },
      { metric: `RSS growth during a ${BIG_MB} MiB GET (file answer)`, value: `${getGrowth.toFixed(1)} MB`, target: '≤ 64 MiB', pass: getGrowth <= 64 },
    ];
  } finally {
    await server.stop();
  }
}

export default {
  id: 'storage',
  title: 'Storage: public object reads by short id',
  scenarios: [
    {
      name: 'GET /{shortId} of a 4 KiB public object (uWS) vs bare uWS sending the same bytes',
      baseline: { server: bareBytes, path: '/object' },
      target: { server: edge, setup: async (s) => ({ path: `/${await seed(s)}` }) },
      targets: { minRatio: 0.5 },
    },
    {
      name: 'GET /storage/objects/{bucket}/{shortId}, 4 KiB, no credentials (uWS) vs bare uWS',
      baseline: { server: bareBytes, path: '/object' },
      target: { server: edge, setup: async (s) => ({ path: `/storage/objects/bench/${await seed(s)}` }) },
      targets: {},
    },
    {
      name: '304 revalidation (If-None-Match) of that object (uWS) vs bare uWS answering 304',
      baseline: { server: bareBytes, path: '/object', headers: { 'if-none-match': etag }, expectStatus: 304 },
      target: { server: edge, headers: { 'if-none-match': etag }, expectStatus: 304, setup: async (s) => ({ path: `/${await seed(s)}` }) },
      targets: { minRatio: 0.6, notModified: true },
    },
  ],
  checks: [{ name: 'memory during a big object PUT and GET', run: bigBody }],
};
