// Edge benchmarks (issue 2, "Performance"): the cost of our pipeline over a bare server,
// and how fast `serve --ephemeral` is ready and how much memory it holds idle.
import { readdirSync, rmSync } from 'node:fs';
import { bareNodeProcess, measureStartup, servers } from '../lib/index.mjs';

/** Deletes the CLI's V8 code cache (bin/platform-edge.js writes it 2 s after a serve started). */
function dropCodeCache() {
  const dir = new URL('../../build/', import.meta.url);
  for (const f of readdirSync(dir)) if (f.endsWith('.cache')) rmSync(new URL(f, dir));
}

const keyHeaders = (info) => ({ 'x-service-key': info.keys.publishable });
// The baseline gets the same header, so both sides parse requests of the same size.
const sameHeader = { 'x-service-key': 'svc_live_' + 'x'.repeat(32) };

const fmtMs = (x) => `${x.toFixed(0)} ms`;
const fmtMb = (x) => `${x.toFixed(1)} MB`;

export default {
  id: 'edge',
  title: 'Edge: /health and a key-authenticated route',
  scenarios: [
    {
      name: 'GET /health (uWS)',
      baseline: { server: servers.bareUws, path: '/health' },
      target: { server: servers.edge('uws'), path: '/health' },
      targets: { minRatio: 0.8 },
    },
    {
      name: 'GET /health/key + X-Service-Key (uWS)',
      baseline: { server: servers.bareUws, path: '/health/key', headers: sameHeader },
      target: { server: servers.edge('uws'), path: '/health/key', headers: keyHeaders },
      targets: { minRatio: 0.7 },
    },
    {
      name: 'GET /health (node:http)',
      baseline: { server: servers.bareNode, path: '/health' },
      target: { server: servers.edge('node'), path: '/health' },
      targets: {},
    },
    {
      name: 'GET /health/key + X-Service-Key (node:http)',
      baseline: { server: servers.bareNode, path: '/health/key', headers: sameHeader },
      target: { server: servers.edge('node'), path: '/health/key', headers: keyHeaders },
      targets: {},
    },
  ],
  checks: [
    {
      name: 'startup and idle memory',
      run: async ({ log }) => {
        // note: the first start after a build has no code cache yet (it writes one 2 s in): measured
        // once as information; the ten that follow start as a user's every later start does.
        dropCodeCache();
        const first = await measureStartup(servers.edge('uws'), { log, runs: 1, idleMs: 3000 });
        const uws = await measureStartup(servers.edge('uws'), { log });
        const node = await measureStartup(servers.edge('node'), { log });
        const bare = await measureStartup(bareNodeProcess, { log });
        const n = uws.ready.length;
        return [
          { metric: `\`serve --ephemeral --port 0 --json\` (uWS): spawn → JSON line, median of ${n}`, value: fmtMs(uws.readyMs), target: '< 300 ms', pass: uws.readyMs < 300 },
          { metric: 'idle RSS after startup (uWS), median', value: fmtMb(uws.rssMb), target: '< 80 MB', pass: uws.rssMb < 80 },
          { metric: 'the first start after a build (no code cache yet), uWS', value: fmtMs(first.readyMs), target: '—', pass: null },
          { metric: `same on the node:http backend: spawn → JSON line, median of ${n}`, value: fmtMs(node.readyMs), target: '< 300 ms', pass: null },
          { metric: 'idle RSS after startup (node:http), median', value: fmtMb(node.rssMb), target: '< 80 MB', pass: null },
          { metric: 'context: a bare `node -e` process, spawn → first line', value: fmtMs(bare.readyMs), target: '—', pass: null },
          { metric: 'context: RSS of that bare node process', value: fmtMb(bare.rssMb), target: '—', pass: null },
        ];
      },
    },
  ],
};
