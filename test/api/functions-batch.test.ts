import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, invoke, type Answer } from '../helpers/functions.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Many calls of one version at once: the sandbox sends the calls waiting for a warm isolate
// into it together (docs/api.md "Sandbox"). Whatever the grouping, each caller sees its own
// result, logs and error, and one call that times out or runs out of memory fails alone.
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ functionsConcurrency: 16, functionsQueue: 64 });
});
afterAll(() => s.close());

const all = (n: number, f: (i: number) => Promise<Answer>): Promise<Answer[]> => Promise.all(Array.from({ length: n }, (_, i) => f(i)));
const lines = (r: Answer): [string, string][] => (r.body.logs as { level: string; message: string }[]).map((l) => [l.level, l.message]);

describe('concurrent invokes of one version', () => {
  it('50 at once: each gets its own result, logs and error; module state is shared within the version only', async () => {
    const src = `let n = 0;
      export default async (a, ctx) => {
        const mine = ++n;
        console.log('sync', a.i);
        if (a.i % 7 === 3) throw new Error('bad ' + a.i);
        if (a.i % 2 === 0) { await null; ctx.log('after await', a.i); }
        else ctx.log('ctx', a.i);
        return { i: a.i, n: mine };
      };`;
    await deploy(s, 'many', src);
    const rs = await all(50, (i) => invoke(s, 'many', { i }));
    const seen: number[] = [];
    rs.forEach((r, i) => {
      if (i % 7 === 3) {
        expect(r.status).toBe(500);
        expect(r.body.error).toEqual({ code: 'function_error', message: `bad ${i}` });
        expect(lines(r)).toEqual([['info', `sync ${i}`]]);
        return;
      }
      expect(r.status).toBe(200);
      expect(r.body.result.i).toBe(i);
      seen.push(r.body.result.n);
      expect(lines(r)).toEqual([
        ['info', `sync ${i}`],
        ['info', i % 2 === 0 ? `after await ${i}` : `ctx ${i}`],
      ]);
    });
    // every call ran once in the same warm isolate: the counter went 1..50, each value once
    expect(new Set(seen).size).toBe(seen.length);
    expect(Math.max(...seen)).toBeLessThanOrEqual(50);
    const next = await invoke(s, 'many', { i: 1 });
    expect(next.body.result.n).toBe(51);
    // a new version starts from its own module state
    await deploy(s, 'many', src);
    expect((await invoke(s, 'many', { i: 1 })).body.result.n).toBe(1);
  });

  it('one call that never ends among 30 good ones: it alone is 504 function_timeout', async () => {
    await deploy(s, 'spin', `export default (a) => { if (a.spin) for (;;) {} if (a.i % 3 === 0) console.log('good', a.i); return a.i; };`, { timeout_ms: 400 });
    expect((await invoke(s, 'spin', { i: 0 })).status).toBe(200);
    const rs = await all(31, (i) => invoke(s, 'spin', i === 15 ? { spin: true } : { i }));
    rs.forEach((r, i) => {
      if (i === 15) {
        expect(r.status).toBe(504);
        expect(r.body.error.code).toBe('function_timeout');
        return;
      }
      expect(r.status).toBe(200);
      expect(r.body.result).toBe(i);
      expect(lines(r)).toEqual(i % 3 === 0 ? [['info', `good ${i}`]] : []);
    });
    expect((await invoke(s, 'spin', { i: 7 })).body.result).toBe(7);
  });

  it('one call that runs out of memory among 20 good ones: it alone is 500 function_out_of_memory', async () => {
    await deploy(s, 'bomb', `export default (a) => { if (a.bomb) { const xs = []; for (;;) xs.push(new Array(1e5).fill(a)); } return a.i * 2; };`, { memory_mb: 16 });
    const rs = await all(21, (i) => invoke(s, 'bomb', i === 10 ? { bomb: true } : { i }));
    rs.forEach((r, i) => {
      if (i === 10) {
        expect(r.status).toBe(500);
        expect(r.body.error.code).toBe('function_out_of_memory');
        return;
      }
      expect(r.status).toBe(200);
      expect(r.body.result).toBe(i * 2);
    });
    expect((await invoke(s, 'bomb', { i: 4 })).body.result).toBe(8);
  });
});
