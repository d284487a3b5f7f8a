// Storage media benchmarks (issue 14, "Performance", image resizing): a first (uncached)
// 12 MP JPEG → 800 px WebP through the server against sharp alone in this process on the same
// file (p50/p99, interleaved), and a cached variant against a small-object GET, same server.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import sharp from 'sharp';
import { apiCall, median, oncePerServer, rssMb, servers, startServer } from '../lib/index.mjs';

const RUNS = Number(process.env.BENCH_RESIZE_RUNS || 12);
const MULTIPART_MB = Number(process.env.BENCH_MULTIPART_MB || 1024);
const PART_MB = 64;
const svc = (info) => ({ 'x-service-key': info.keys.service });

/** A 4000×3000 JPEG of noise (it compresses about as badly as a photo), made once. */
let photo;
async function photoBytes() {
  photo ??= await sharp({ create: { width: 4000, height: 3000, channels: 3, noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
    .jpeg({ quality: 85 })
    .toBuffer();
  return photo;
}

async function putObject(server, key, body, type) {
  const res = await fetch(`${server.url}/storage/objects/bench/${key}`, { method: 'PUT', headers: { ...svc(server.info), 'content-type': type }, body });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`PUT ${key} answered ${res.status}: ${JSON.stringify(json).slice(0, 200)}`);
  return json.id;
}

/** One public bucket with a 4 KiB object and the 12 MP photo; their short ids. */
const seed = oncePerServer(async (server) => {
  await apiCall(server, 'POST', '/storage/buckets', { name: 'bench', public: true }, { ...svc(server.info), 'content-type': 'application/json' });
  const small = await putObject(server, 'small.bin', Buffer.alloc(4096, 7), 'application/octet-stream');
  const big = await putObject(server, 'photo.jpg', await photoBytes(), 'image/jpeg');
  return { small, big };
});

const cachedScenario = (http) => ({
  name: `GET a cached 800 px WebP variant vs GET a 4 KiB object, by short id (${http === 'uws' ? 'uWS' : 'node:http'})`,
  baseline: { server: servers.edge(http), path: '/', setup: async (s) => ({ path: `/${(await seed(s)).small}` }) },
  // note: the sanity request before measuring makes the variant; every measured request is a cache hit.
  target: { server: servers.edge(http), path: '/', setup: async (s) => ({ path: `/${(await seed(s)).big}?w=800&format=webp` }) },
  targets: { minRatio: 0.8 },
});

/** The same with a ~2 KB variant: the read path's own cost, without the 800 px variant's extra bytes (information). */
const smallVariantScenario = (http) => ({
  name: `GET a cached 100 px WebP variant vs GET a 4 KiB object, by short id (${http === 'uws' ? 'uWS' : 'node:http'})`,
  baseline: { server: servers.edge(http), path: '/', setup: async (s) => ({ path: `/${(await seed(s)).small}` }) },
  target: { server: servers.edge(http), path: '/', setup: async (s) => ({ path: `/${(await seed(s)).big}?w=100&format=webp` }) },
  targets: {},
});

/** A bare uWS server sending `bytes` from memory with an object read's headers (bench/bare-uws-bytes.mjs). */
const bareBytes = (bytes, label) => ({ id: `bare-uws-bytes-${bytes}`, label, cmd: [process.execPath, 'bench/bare-uws-bytes.mjs', '0', String(bytes)] });
/** About the size of the cached 800 px WebP variant (≈ 49-52 KB; the noise differs per run). */
const VARIANT_BYTES = Number(process.env.BENCH_VARIANT_BYTES || 51200);

/**
 * The ceiling of the cached-variant ratio: bare uWS sending VARIANT_BYTES against bare uWS
 * sending 4 KiB, same headers, no lookup at all (information: what the bytes alone cost).
 */
const bareBytesScenario = {
  name: `bare uWS sending ${(VARIANT_BYTES / 1000).toFixed(0)} KB vs bare uWS sending 4 KiB, both from memory (the bytes alone)`,
  baseline: { server: bareBytes(4096, 'bare uWS, 4 KiB from memory'), path: '/' },
  target: { server: bareBytes(VARIANT_BYTES, `bare uWS, ${(VARIANT_BYTES / 1000).toFixed(0)} KB from memory`), path: '/' },
  targets: {},
};

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
const ms = (x) => `${x.toFixed(1)} ms`;

/** A part of `mb` MiB generated as it is sent (never held whole by this process either). */
function partBody(mb) {
  let left = mb;
  const chunk = Buffer.alloc(1024 * 1024, 0x5a);
  return new ReadableStream({
    pull(c) {
      if (left-- > 0) c.enqueue(chunk);
      else c.close();
    },
  });
}

/** The server's RSS growth over its idle RSS while a MULTIPART_MB multipart upload runs (64 MiB parts, 2 at a time) and completes. */
async function multipartRss({ log }) {
  const server = await startServer(servers.edge('uws'));
  try {
    const h = svc(server.info);
    await apiCall(server, 'POST', '/storage/buckets', { name: 'mp', public: false }, { ...h, 'content-type': 'application/json' });
    const up = await apiCall(server, 'POST', '/storage/multipart', { bucket: 'mp', key: 'big.bin', part_size: PART_MB * 1024 * 1024 }, { ...h, 'content-type': 'application/json' });
    const idle = rssMb(server.pid);
    let peak = idle;
    const t = setInterval(() => (peak = Math.max(peak, rssMb(server.pid) ?? 0)), 100);
    const parts = Math.ceil(MULTIPART_MB / PART_MB);
    const t0 = performance.now();
    try {
      let next = 1;
      const worker = async () => {
        while (next <= parts) {
          const n = next++;
          const mb = Math.min(PART_MB, MULTIPART_MB - (n - 1) * PART_MB);
          const res = await fetch(`${server.url}/storage/multipart/${up.upload_id}/${n}`, { method: 'PUT', headers: h, body: partBody(mb), duplex: 'half' });
          if (res.status !== 200) throw new Error(`part ${n} answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
          await res.arrayBuffer();
        }
      };
      await Promise.all([worker(), worker()]);
      const done = await apiCall(server, 'POST', `/storage/multipart/${up.upload_id}/complete`, undefined, h);
      if (done.size !== MULTIPART_MB * 1024 * 1024) throw new Error(`completed with ${done.size} bytes`);
    } finally {
      clearInterval(t);
    }
    const secs = (performance.now() - t0) / 1000;
    const growth = Math.max(peak, rssMb(server.pid) ?? 0) - idle;
    log(`  ${MULTIPART_MB} MiB multipart: RSS ${idle.toFixed(0)} → peak ${peak.toFixed(0)} MB in ${secs.toFixed(1)} s`);
    return [
      { metric: `RSS growth during a ${MULTIPART_MB} MiB multipart upload (${PART_MB} MiB parts, 2 in parallel, then complete)`, value: `${growth.toFixed(1)} MB`, target: '≤ 64 MiB', pass: growth <= 64 },
      { metric: 'context: multipart upload time, parts and completion (hashing the whole file)', value: `${secs.toFixed(1)} s`, target: '—', pass: null },
    ];
  } finally {
    await server.stop();
  }
}

export default {
  id: 'storage-media',
  title: 'Storage media: image resizing (first and cached variants)',
  scenarios: [cachedScenario('uws'), cachedScenario('node'), smallVariantScenario('uws'), bareBytesScenario],
  checks: [
    { name: `RSS during a ${MULTIPART_MB} MiB multipart upload`, run: multipartRss },
    {
      name: `first (uncached) 12 MP JPEG → 800 px WebP, server vs sharp in-process, ${RUNS} runs each, interleaved`,
      run: async ({ log }) => {
        const dir = mkdtempSync(join(tmpdir(), 'pe-bench-media-'));
        const server = await startServer(servers.edge('uws'));
        try {
          const bytes = await photoBytes();
          const file = join(dir, 'photo.jpg');
          writeFileSync(file, bytes);
          const { big } = await seed(server);
          const viaServer = [];
          const inProcess = [];
          for (let i = 0; i < RUNS; i++) {
            // note: a distinct q per run makes a distinct variant: every server request is a first transform.
            const q = 60 + i;
            let t = performance.now();
            const res = await fetch(`${server.url}/${big}?w=800&format=webp&q=${q}`);
            const body = Buffer.from(await res.arrayBuffer());
            if (res.status !== 200 || body.length === 0) throw new Error(`resize answered ${res.status}`);
            viaServer.push(performance.now() - t);
            t = performance.now();
            await sharp(file).autoOrient().resize({ width: 800, withoutEnlargement: true }).webp({ quality: q, effort: 2 }).toBuffer();
            inProcess.push(performance.now() - t);
          }
          viaServer.sort((a, b) => a - b);
          inProcess.sort((a, b) => a - b);
          const r50 = median(viaServer) / median(inProcess);
          const r99 = pct(viaServer, 0.99) / pct(inProcess, 0.99);
          log(`  server p50 ${ms(median(viaServer))} p99 ${ms(pct(viaServer, 0.99))}; sharp p50 ${ms(median(inProcess))} p99 ${ms(pct(inProcess, 0.99))}`);
          return [
            { metric: 'server: GET ?w=800&format=webp, first transform, p50 / p99', value: `${ms(median(viaServer))} / ${ms(pct(viaServer, 0.99))}`, target: '—', pass: null },
            { metric: 'sharp alone in-process, same file and parameters, p50 / p99', value: `${ms(median(inProcess))} / ${ms(pct(inProcess, 0.99))}`, target: '—', pass: null },
            { metric: 'ratio server / sharp, p50', value: `${r50.toFixed(2)}×`, target: '≤ 1.3×', pass: r50 <= 1.3 },
            { metric: 'ratio server / sharp, p99', value: `${r99.toFixed(2)}×`, target: '≤ 1.3×', pass: r99 <= 1.3 },
            { metric: 'context: source JPEG size', value: `${(bytes.length / 1048576).toFixed(1)} MiB`, target: '—', pass: null },
          ];
        } finally {
          await server.stop();
          rmSync(dir, { recursive: true, force: true });
        }
      },
    },
  ],
};
