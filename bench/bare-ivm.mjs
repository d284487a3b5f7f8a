// The bare baseline of the functions benchmark (issue 16): the same trivial function
// (`export default () => 1`) called in a warm isolated-vm isolate, in-process, with no HTTP,
// no ctx and no JSON. Run with --no-node-snapshot. Prints one JSON line:
// {calls, seconds, calls_per_s, us_per_call} for `concurrency` calls kept in flight.
//   node --no-node-snapshot bench/bare-ivm.mjs [seconds=3] [concurrency=50]
import ivm from 'isolated-vm';

const seconds = Number(process.argv[2] ?? 3);
const concurrency = Number(process.argv[3] ?? 50);
const isolate = new ivm.Isolate({ memoryLimit: 64 });
const context = await isolate.createContext();
const mod = await isolate.compileModule('export default () => 1;');
await mod.instantiate(context, () => {
  throw new Error('no imports');
});
await mod.evaluate();
const fn = await mod.namespace.get('default', { reference: true });
const call = () => fn.apply(undefined, [], { result: { promise: true, copy: true }, timeout: 5000 });

for (let i = 0; i < 2000; i++) await call();
let calls = 0;
const end = performance.now() + seconds * 1000;
const t0 = performance.now();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      if ((await call()) !== 1) throw new Error('wrong result');
      calls++;
    }
  }),
);
const wall = (performance.now() - t0) / 1000;
process.stdout.write(`${JSON.stringify({ calls, seconds: wall, calls_per_s: calls / wall, us_per_call: (wall * 1e6) / calls })}\n`);
isolate.dispose();
