import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, deploy, invoke } from '../helpers/functions.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Memory exhaustion that V8 cannot stop inside an isolate: a plain object or a Map grown in a
// loop past the limit makes V8 end the whole process. The isolates run
// in a sandbox process of their own (docs/api.md "Sandbox"), so that ends the sandbox process:
// the server, the other projects and the function's later calls go on.
let s: TestServer;
let other: { key: string };
// note: a local server that answers after ?ms=N: a call waiting on ctx.fetch holds its turn
// without using a core (functions may reach loopback on this test server).
let slowServer: Server;
let slowUrl: string;
/** Requests the local server holds now (calls waiting on ctx.fetch), by their `ms`. */
const holding = new Map<number, number>();
const SLOW = (url: string): string => `export default async (a, ctx) => { if (!a) return "warm"; const r = await ctx.fetch("${url}?ms=" + a); return r.status === 200 ? "done" : "no"; };`;

const DICT = 'export default (a) => { if (!a) return "ok"; const o = {}; for (let i = 0; ; i++) o["k" + i] = i; };';
const MAP = 'export default (a) => { if (!a) return "ok"; const m = new Map(); for (let i = 0; ; i++) m.set(i, { i }); };';

beforeAll(async () => {
  slowServer = createServer((req, res) => {
    const ms = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('ms') ?? 0);
    holding.set(ms, (holding.get(ms) ?? 0) + 1);
    setTimeout(() => {
      holding.set(ms, holding.get(ms)! - 1);
      res.end('ok');
    }, ms);
  });
  await new Promise<void>((r) => slowServer.listen(0, '127.0.0.1', r));
  slowUrl = `http://127.0.0.1:${(slowServer.address() as AddressInfo).port}/`;
  s = await startTestServer({ outboundLoopback: ['function'] });
  const p = s.createProject('other');
  other = { key: p.publishable };
  const r = await call(s, 'PUT', '/functions/calm', { source: 'export default () => "calm";' }, { key: p.service });
  expect(r.status, r.text).toBe(201);
});
afterAll(async () => {
  await s.close();
  slowServer.closeAllConnections();
  slowServer.close();
});

/** Waits until `n` calls wait `ms` on the local server (they have started in the sandbox process). */
async function holdingReaches(ms: number, n: number): Promise<void> {
  const end = Date.now() + 10_000;
  while ((holding.get(ms) ?? 0) < n) {
    if (Date.now() > end) throw new Error(`only ${holding.get(ms) ?? 0} of ${n} calls reached the local server`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('a function that ends the sandbox process', () => {
  it('an object grown past memory_mb is 500 function_out_of_memory; the server, other projects and the next calls answer', async () => {
    await deploy(s, 'dict', DICT, { memory_mb: 16 });
    expect((await invoke(s, 'dict', false)).body.result).toBe('ok');
    const r = await invoke(s, 'dict', true);
    expect(r.status, r.text).toBe(500);
    expect(r.body).toEqual({ error: { code: 'function_out_of_memory', message: 'the function used more than its memory limit of 16 MB' }, logs: [] });
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    expect((await invoke(s, 'calm', null, other)).body.result).toBe('calm');
    // note: now run one at a time in the quarantine: it ends that process again, alone.
    expect((await invoke(s, 'dict', false)).body.result).toBe('ok');
    const again = await invoke(s, 'dict', true);
    expect(again.status).toBe(500);
    expect(again.body.error.code).toBe('function_out_of_memory');
    expect((await invoke(s, 'dict', false)).body.result).toBe('ok');
    expect((await invoke(s, 'calm', null, other)).body.result).toBe('calm');
  });

  it('a Map grown in a loop too; rows written before it stay written', async () => {
    const t = await call(s, 'POST', '/db/tables', { name: 'marks', type: 'relational', columns: [{ name: 'n', type: 'int8' }] }, { key: s.keys.service });
    expect(t.status, t.text).toBe(201);
    const src = "export default async (a, ctx) => { await ctx.db.insert('marks', { n: 1 }); const m = new Map(); for (let i = 0; ; i++) m.set(i, { i }); };";
    await deploy(s, 'mapper', src, { memory_mb: 16 });
    const r = await invoke(s, 'mapper', true, { key: s.keys.service });
    expect(r.status, r.text).toBe(500);
    expect(r.body.error.code).toBe('function_out_of_memory');
    const rows = await call(s, 'GET', '/db/tables/marks/rows', undefined, { key: s.keys.service });
    expect(rows.body.rows.map((x: { data: { n: number } }) => x.data.n)).toEqual([1]);
  });

  it('a call of another project in the process when it ends is 503 unavailable with Retry-After; run again, it answers, and the cause alone is 500', async () => {
    const p = s.createProject('bystander');
    const slow = await call(s, 'PUT', '/functions/slow', { source: SLOW(slowUrl) }, { key: p.service });
    expect(slow.status, slow.text).toBe(201);
    await deploy(s, 'bomb', MAP, { memory_mb: 16 });
    // note: both warm in the sandbox process first, so both calls below are in it at once.
    expect((await invoke(s, 'slow', false, { key: p.publishable })).body.result).toBe('warm');
    expect((await invoke(s, 'bomb', false)).body.result).toBe('ok');
    const bystander = invoke(s, 'slow', 3000, { key: p.publishable });
    await holdingReaches(3000, 1);
    const cause = await invoke(s, 'bomb', true);
    const b = await bystander;
    expect(b.status, b.text).toBe(503);
    expect(b.body).toEqual({ error: { code: 'unavailable', message: 'the function sandbox was restarted under this call (another call ended it); retry' }, logs: [] });
    expect(b.headers.get('retry-after')).toBe('1');
    // note: two calls had started in it, so neither is known to be the cause.
    expect(cause.status).toBe(503);
    expect((await invoke(s, 'slow', 10, { key: p.publishable })).body.result).toBe('done');
    const alone = await invoke(s, 'bomb', true);
    expect(alone.status).toBe(500);
    expect(alone.body.error.code).toBe('function_out_of_memory');
    expect((await invoke(s, 'calm', null, other)).body.result).toBe('calm');
  });

  it("calls still waiting for their project's turn when the process ends are sent again and answer", async () => {
    const p = s.createProject('queued');
    expect((await call(s, 'PUT', '/functions/wait', { source: SLOW(slowUrl) }, { key: p.service })).status).toBe(201);
    await deploy(s, 'bomb2', MAP, { memory_mb: 16 });
    expect((await invoke(s, 'wait', false, { key: p.publishable })).body.result).toBe('warm');
    expect((await invoke(s, 'bomb2', false)).body.result).toBe('ok');
    // note: 4 calls of a project run at once (the default); the 5th and 6th wait in the sandbox process.
    const calls = Array.from({ length: 6 }, () => invoke(s, 'wait', 2000, { key: p.publishable }));
    // note: the 5th and 6th wait in the sandbox process, or have not reached it yet: either way
    // they had not started, and they answer.
    await holdingReaches(2000, 4);
    expect((await invoke(s, 'bomb2', true)).status).toBe(503);
    const rs = await Promise.all(calls);
    expect(rs.map((r) => r.status).sort()).toEqual([200, 200, 503, 503, 503, 503]);
    expect(rs.filter((r) => r.status === 200).map((r) => r.body.result)).toEqual(['done', 'done']);
  });

  // note: a Map of small arrays: the fastest of these to fill 32 MB (well within the top level's
  // 1 s on a loaded machine), and V8 ends the process for it every time.
  it("a module whose top level grows a Map past the deploy check's memory is refused with 400 invalid_source; the next deploy works", async () => {
    const r = await call(s, 'PUT', '/functions/toplevel', { source: 'const m = new Map(); for (let i = 0; ; i++) m.set(i, [i, i, i, i]); export default () => 1;' }, { key: s.keys.service });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error).toEqual({ code: 'invalid_source', message: "the module's top level used more than 32 MB of memory" });
    expect((await call(s, 'GET', '/functions/toplevel', undefined, { key: s.keys.service })).status).toBe(404);
    await deploy(s, 'fine', 'export default () => "fine";');
    expect((await invoke(s, 'fine')).body.result).toBe('fine');
  });
});
