// CPU profile of our server under wrk load, summarized as the top frames by self time.
// Usage: node bench/profile.mjs [uws|node] [PATH] [--key] [--duration 5s] [--top 25] [--lines] [--root DIR]
//   --key sends the publishable key as X-Service-Key (for key-authenticated routes).
//   --lines adds the hottest lines of build/platform-edge.cjs; --root DIR profiles another
//   checkout (a patched copy with its own build/).
// The server runs with `node --cpu-prof`; the .cpuprofile is kept in a temp folder
// (printed) so it can be opened in Chrome DevTools. Load only on 127.0.0.1, time-bounded.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireWrk, runWrk, servers, startServer } from './lib/index.mjs';

const argv = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = argv.indexOf(name);
  return i === -1 ? dflt : argv.splice(i, 2)[1];
};
const duration = flag('--duration', '5s');
const top = Number(flag('--top', '25'));
const cwd = flag('--root', undefined);
const useKey = argv.includes('--key');
const showLines = argv.includes('--lines');
const [http = 'uws', path = '/health'] = argv.filter((a) => !a.startsWith('--'));

requireWrk();
const dir = mkdtempSync(join(tmpdir(), 'edge-prof-'));
const spec = servers.edge(http, { id: `edge-${http}-prof`, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`], cwd });
const server = await startServer(spec);
const headers = useKey ? { 'x-service-key': server.info.keys.publishable } : {};
await runWrk(server.url, { path, headers, duration: '1s' });
const r = await runWrk(server.url, { path, headers, duration });
await server.stop();
process.stdout.write(`${r.command}\n${Math.round(r.rps)} req/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, non-2xx ${r.non2xx}\n`);

const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
if (!file) {
  process.stderr.write(`no .cpuprofile in ${dir} (did the server exit cleanly on SIGTERM?)\n`);
  process.exit(1);
}
const prof = JSON.parse(readFileSync(join(dir, file), 'utf8'));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const self = new Map();
const dt = prof.timeDeltas;
for (let i = 0; i < prof.samples.length; i++) self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + (dt[i] ?? 0));
const total = [...self.values()].reduce((a, b) => a + b, 0);
const agg = new Map();
function label(cf) {
  const url = cf.url.replace(/^file:\/\/.*?\/(node_modules|build|src)\//, '$1/');
  return `${cf.functionName || '(anonymous)'}  ${url}${cf.url ? `:${cf.lineNumber + 1}` : ''}`;
}
for (const [id, t] of self) {
  const key = label(byId.get(id).callFrame);
  agg.set(key, (agg.get(key) ?? 0) + t);
}
process.stdout.write(`\nprofile: ${join(dir, file)}\ntop ${top} frames by self time:\n`);
for (const [k, t] of [...agg].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  process.stdout.write(`${((t / total) * 100).toFixed(1).padStart(5)} %  ${k}\n`);
}

// Inclusive ("total") time: a frame's self time plus its callees', counted once per stack.
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const incl = new Map();
for (const [id, t] of self) {
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const k = label(byId.get(cur).callFrame);
    if (seen.has(k)) continue;
    seen.add(k);
    incl.set(k, (incl.get(k) ?? 0) + t);
  }
}
process.stdout.write(`\ntop ${top} frames by total (inclusive) time:\n`);
for (const [k, t] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  process.stdout.write(`${((t / total) * 100).toFixed(1).padStart(5)} %  ${k}\n`);
}

// Hot lines inside our bundle (build/platform-edge.cjs; map them to src/ with the sourcemap or by reading the bundle).
if (showLines) {
  const lines = new Map();
  for (const n of prof.nodes) {
    if (!n.callFrame.url.includes('/build/') || !n.positionTicks) continue;
    for (const pt of n.positionTicks) {
      const k = `${n.callFrame.functionName || '(anonymous)'}  build/platform-edge.cjs:${pt.line}`;
      lines.set(k, (lines.get(k) ?? 0) + pt.ticks);
    }
  }
  const ticks = prof.samples.length;
  process.stdout.write(`\nhot lines in build/ (share of all samples):\n`);
  for (const [k, t] of [...lines].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${((t / ticks) * 100).toFixed(1).padStart(5)} %  ${k}\n`);
  }
}
