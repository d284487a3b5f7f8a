import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, deploy, invoke } from '../helpers/functions.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
// A local server whose requests wait until the test releases them (a call that holds its slot).
const held: ServerResponse[] = [];
let seen = 0;
let hold: Server;
let holdUrl = '';

beforeAll(async () => {
  s = await startTestServer({ functionsConcurrency: 2, functionsQueue: 1, outboundLoopback: ['function'] });
  hold = createServer((_req: IncomingMessage, res: ServerResponse) => {
    seen++;
    held.push(res);
  });
  await new Promise<void>((r) => hold.listen(0, '127.0.0.1', r));
  holdUrl = `http://127.0.0.1:${(hold.address() as { port: number }).port}/`;
});
afterAll(async () => {
  for (const r of held) r.end('late');
  await new Promise((r) => hold.close(r));
  await s.close();
});

describe('invoke', () => {
  it('an empty body is null; undefined is null; module state persists across warm calls of one version only', async () => {
    await deploy(s, 'echo', 'let n = 0; export default (args) => ({ args, n: ++n });');
    const empty = await s.req('/functions/echo', { method: 'POST' });
    expect(empty.status).toBe(200);
    expect(((await empty.json()) as { result: unknown }).result).toEqual({ args: null, n: 1 });
    expect((await invoke(s, 'echo', [1, 'two'])).body.result).toEqual({ args: [1, 'two'], n: 2 });
    await deploy(s, 'echo', 'let n = 100; export default () => ++n;');
    expect((await invoke(s, 'echo')).body.result).toBe(101);
    expect((await invoke(s, 'echo', null, {}, '?version=1')).body.result).toEqual({ args: null, n: 3 });
    await deploy(s, 'undef', 'export default () => {};');
    expect((await invoke(s, 'undef')).body.result).toBeNull();
  });

  it('a throw is 500 function_error with the thrown message (no stack) and the logs beside the error', async () => {
    await deploy(s, 'thrower', 'export default (a, ctx) => { console.warn("about to fail"); ctx.log("ctx", { n: 1 }); throw new TypeError("boom " + a.x); };');
    const r = await invoke(s, 'thrower', { x: 7 });
    expect(r.status).toBe(500);
    expect(r.body).toEqual({
      error: { code: 'function_error', message: 'boom 7' },
      logs: [
        { level: 'warn', message: 'about to fail', at: expect.any(String) },
        { level: 'info', message: 'ctx {"n":1}', at: expect.any(String) },
      ],
    });
    expect(r.text).not.toContain('at ');
    await deploy(s, 'throwstr', 'export default async () => { throw "plain"; };');
    expect((await invoke(s, 'throwstr')).body.error).toEqual({ code: 'function_error', message: 'plain' });
  });

  it('a result that is not JSON, or over 1 MiB, is 500 function_error', async () => {
    await deploy(s, 'bigint', 'export default () => 10n;');
    const b = await invoke(s, 'bigint');
    expect(b.status).toBe(500);
    expect(b.body.error.code).toBe('function_error');
    await deploy(s, 'fnres', 'export default () => () => 1;');
    expect((await invoke(s, 'fnres')).body.error).toEqual({ code: 'function_error', message: 'the result is not JSON' });
    await deploy(s, 'cyclic', 'export default () => { const a = {}; a.a = a; return a; };');
    expect((await invoke(s, 'cyclic')).body.error.code).toBe('function_error');
    await deploy(s, 'huge', 'export default () => "x".repeat(1024 * 1024 + 1);');
    const h = await invoke(s, 'huge');
    expect(h.status).toBe(500);
    expect(h.body.error.message).toBe('the result is over 1048576 bytes of JSON');
  });

  it('time over is 504 function_timeout (sync loop and a promise that never settles); the function runs again after', async () => {
    await deploy(s, 'slow', 'export default async (a) => { if (a === "sync") for (;;) {} if (a === "async") await new Promise(() => {}); return "ok"; };', { timeout_ms: 200 });
    const sync = await invoke(s, 'slow', 'sync');
    expect(sync.status).toBe(504);
    expect(sync.body.error).toEqual({ code: 'function_timeout', message: 'the function ran longer than its limit of 200 ms' });
    expect(sync.body.logs).toEqual([]);
    const never = await invoke(s, 'slow', 'async');
    expect(never.status).toBe(504);
    expect(never.body.error.code).toBe('function_timeout');
    expect((await invoke(s, 'slow', 'fine')).body.result).toBe('ok');
  });

  it('memory over is 500 function_out_of_memory; the function runs again after', async () => {
    await deploy(s, 'hog', 'export default (a) => { if (!a) return "ok"; const k = []; for (;;) k.push(new Array(100000).fill(1.5)); };', { memory_mb: 16 });
    const r = await invoke(s, 'hog', true);
    expect(r.status).toBe(500);
    expect(r.body.error).toEqual({ code: 'function_out_of_memory', message: 'the function used more than its memory limit of 16 MB' });
    expect((await invoke(s, 'hog', false)).body.result).toBe('ok');
  });

  it('logs keep 100 lines; the last says how many were dropped', async () => {
    await deploy(s, 'chatty', 'export default () => { for (let i = 0; i < 150; i++) console.log("line", i); return 1; };');
    const r = await invoke(s, 'chatty');
    expect(r.body.logs).toHaveLength(100);
    expect(r.body.logs[0].message).toBe('line 0');
    expect(r.body.logs[98].message).toBe('line 98');
    expect(r.body.logs[99]).toEqual({ level: 'warn', message: '51 more log lines dropped (at most 100 lines and 65536 bytes)', at: expect.any(String) });
  });
});

describe('access', () => {
  it('key (default) lets any key in; user needs a Bearer token; service needs the service role', async () => {
    await deploy(s, 'foruser', 'export default (a, ctx) => ctx.user;', { access: 'user' });
    await deploy(s, 'forsvc', 'export default () => "svc";', { access: 'service' });
    const noUser = await invoke(s, 'foruser');
    expect(noUser.status).toBe(401);
    expect(noUser.body.error.code).toBe('unauthorized');
    const reg = await call(s, 'POST', '/auth/register', { email: 'fn-access@example.com', password: 'correct horse battery staple 1' });
    const ok = await invoke(s, 'foruser', null, { token: reg.body.access_token });
    expect(ok.status).toBe(200);
    expect(ok.body.result).toEqual({ id: reg.body.user.id, role: 'authenticated' });
    const pub = await invoke(s, 'forsvc');
    expect(pub.status).toBe(403);
    expect(pub.body.error.code).toBe('forbidden');
    expect((await invoke(s, 'forsvc', null, { key: s.keys.service })).body.result).toBe('svc');
  });
});

describe('concurrency', () => {
  it('at most 2 calls run (as configured), 1 waits, the next is 429 rate_limited; all finish once released', async () => {
    await deploy(s, 'waits', `export default async (a, ctx) => (await ctx.fetch(${JSON.stringify(holdUrl)})).text();`);
    seen = 0;
    const calls = [0, 1, 2, 3].map(() => invoke(s, 'waits'));
    const first = await Promise.race(calls);
    expect(first.status).toBe(429);
    expect(first.body.error.code).toBe('rate_limited');
    expect(first.headers.get('retry-after')).toBe('1');
    while (seen < 2) await new Promise((r) => setTimeout(r, 10));
    expect(seen).toBe(2);
    // release the two running calls, then the one that waited
    let settled = false;
    const done = Promise.all(calls).finally(() => (settled = true));
    while (!settled) {
      for (const r of held.splice(0)) r.end('done');
      await new Promise((r) => setTimeout(r, 10));
    }
    const all = await done;
    expect(all.map((a) => a.status).sort()).toEqual([200, 200, 200, 429]);
    expect(seen).toBe(3);
  });
});
