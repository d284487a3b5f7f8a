// Storage benchmarks (issue 14, "Performance"): GET of a 4 KiB public object by short id, and its
// 304 revalidation, against a bare uWS server sending the same bytes from memory
// (bench/bare-uws-bytes.mjs) measured in the same run.
import { createHash } from 'node:crypto';
import { oncePerServer, servers } from '../lib/index.mjs';
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
};
