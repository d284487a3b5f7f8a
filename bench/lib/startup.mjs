// Startup time (spawn → JSON line) and idle RSS of a server process.
import { setTimeout as sleep } from 'node:timers/promises';
import { rssMb, startServer } from './server.mjs';
import { median } from './stats.mjs';

/** A bare Node process that prints a JSON line at once and idles: context for the figures. */
export const bareNodeProcess = {
  id: 'node-noop',
  label: 'bare node process',
  cmd: [process.execPath, '-e', 'process.stdout.write(JSON.stringify({port:0})+"\\n");setInterval(()=>{},1e6)'],
};

/**
 * Starts `spec` `runs` times in a row; each time records spawn → JSON line (ms) and,
 * after `idleMs` without traffic, VmRSS (MB). Returns medians and all samples.
 */
export async function measureStartup(spec, { runs = Number(process.env.BENCH_STARTUP_RUNS || 10), idleMs = 1000, log = () => {} } = {}) {
  const ready = [];
  const rss = [];
  for (let i = 0; i < runs; i++) {
    const s = await startServer(spec);
    ready.push(s.readyMs);
    await sleep(idleMs);
    rss.push(rssMb(s.pid));
    await s.stop();
  }
  log(`  ${spec.label}: ready ${ready.map((x) => x.toFixed(0)).join(' ')} ms; rss ${rss.map((x) => x?.toFixed(1)).join(' ')} MB`);
  return { readyMs: median(ready), rssMb: median(rss), ready, rss };
}
