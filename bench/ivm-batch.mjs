// What batching saves at the isolated-vm boundary (issue 16, docs/benchmarks.md "Functions"):
// process CPU time (all threads) and wall time per call of a trivial entry that answers
// `batch` calls in one async apply, with `in flight` applies outstanding, each apply issued from
// a fresh event-loop turn (setImmediate, as the sandbox does). In-process, no HTTP.
//   node --no-node-snapshot bench/ivm-batch.mjs
import ivm from 'isolated-vm';
const isolate = new ivm.Isolate({ memoryLimit: 64 });
const context = await isolate.createContext();
const fn = await context.eval(`(function(){ const a = arguments; let out=''; for (let i=0;i<a.length;i+=3){ const o='R1'; out += a[i]+':'+o.length+':'+o; } return out; })`, { reference: true });
const cpu = () => { const u = process.cpuUsage(); return u.user + u.system; };
for (const [k, conc] of [[1, 4], [4, 1], [1, 50], [16, 1]]) {
  const args = []; for (let i = 0; i < k; i++) args.push(i + 1, 'null', 'null');
  const n = 40000 / k;
  let done = 0;
  const c0 = cpu(), t0 = performance.now();
  await Promise.all(Array.from({ length: conc }, async () => { while (done < n) { done++; await new Promise((r) => setImmediate(r)); await fn.apply(undefined, args, { timeout: 5000 }); } }));
  const c1 = cpu(), t1 = performance.now();
  console.log(`batch ${k} x ${conc} in flight: ${( (c1 - c0) / (done * k)).toFixed(1)} µs CPU/call, ${((t1 - t0) * 1000 / (done * k)).toFixed(1)} µs wall/call`);
}
