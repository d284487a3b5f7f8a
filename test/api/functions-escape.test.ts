import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, deploy, invoke } from '../helpers/functions.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// The escape corpus of issue 16 ("Security and bad input"): each case ends in its error, or
// proves it reached nothing of the host, while the host and other projects keep answering.
// This server allows no loopback for functions (the default).
let s: TestServer;
let other: { key: string };

beforeAll(async () => {
  s = await startTestServer();
  const p = s.server.projects.create('other');
  other = { key: p.publishable };
  const r = await call(s, 'PUT', '/functions/calm', { source: 'export default () => "calm";' }, { key: p.service });
  expect(r.status, r.text).toBe(201);
});
afterAll(() => s.close());

/** Runs `hostile` and, while it runs, /health and the other project's function; both answer first. */
async function whileHostile(hostile: Promise<{ status: number }>): Promise<void> {
  let hostileDone = false;
  void hostile.then(() => (hostileDone = true));
  const health = await fetch(`${s.url}/health`);
  expect(health.status).toBe(200);
  const calm = await invoke(s, 'calm', null, other);
  expect(calm.body.result).toBe('calm');
  expect(hostileDone).toBe(false);
}

describe('reaching the host from inside', () => {
  it('no process, require, host globals; Function constructors reach only the isolate', async () => {
    const src = `export default () => {
      const out = {};
      out.process = typeof process;
      out.require = typeof require;
      out.module = typeof module;
      out.globals = ['Buffer', 'setTimeout', 'fetch', 'WebAssembly', '_ivm', 'ivm', 'hostLog', 'hostStart', 'hostSecret'].filter((k) => typeof globalThis[k] !== 'undefined');
      out.ctorProcess = (() => { try { return ({}).constructor.constructor('return typeof process')(); } catch (e) { return 'threw ' + e.message; } })();
      out.ctorThis = (() => { try { const g = (function () { return this; }).constructor('return this')(); return typeof g.process + typeof g.require; } catch (e) { return 'threw'; } })();
      out.asyncCtor = (() => { try { return typeof (async function () {}).constructor('return process'); } catch (e) { return 'threw'; } })();
      return out;
    };`;
    await deploy(s, 'probe', src);
    const r = await invoke(s, 'probe');
    expect(r.status, r.text).toBe(200);
    expect(r.body.result).toEqual({
      process: 'undefined',
      require: 'undefined',
      module: 'undefined',
      globals: [],
      ctorProcess: 'undefined',
      ctorThis: 'undefinedundefined',
      asyncCtor: 'function',
    });
    await deploy(s, 'useprocess', 'export default () => process.env;');
    const p = await invoke(s, 'useprocess');
    expect(p.status).toBe(500);
    expect(p.body.error).toEqual({ code: 'function_error', message: 'process is not defined' });
    await deploy(s, 'ctorcall', 'export default () => ({}).constructor.constructor("return process")().mainModule;');
    expect((await invoke(s, 'ctorcall')).body.error).toEqual({ code: 'function_error', message: 'process is not defined' });
  });

  it('Error.prepareStackTrace and CallSite walks see only isolate frames', async () => {
    const src = `export default async (a, ctx) => {
      const found = [];
      Error.prepareStackTrace = (err, frames) => {
        for (const f of frames) {
          try { const t = f.getThis(); if (t && typeof t.constructor.constructor('return typeof process')() !== 'string') found.push('odd'); if (t && t.constructor.constructor('return typeof process')() !== 'undefined') found.push('process via this'); } catch {}
          try { const fn = f.getFunction(); if (fn && fn.constructor('return typeof process')() !== 'undefined') found.push('process via fn'); } catch {}
        }
        return 'walked';
      };
      try { await ctx.db.get('nope', '1'); } catch (e) { found.push(String(e.stack)); }
      try { null.x; } catch (e) { found.push(String(e.stack)); }
      return found;
    };`;
    await deploy(s, 'stackwalk', src);
    const r = await invoke(s, 'stackwalk');
    expect(r.status, r.text).toBe(200);
    expect(r.body.result).toEqual(['walked', 'walked']);
  });

  it('Proxy and async-generator tricks of the vm2 advisories find no host object', async () => {
    const src = `export default async (a, ctx) => {
      const hits = [];
      let probing = false;
      const probe = (v) => {
        if (probing) return;
        probing = true;
        try { if (v && v.constructor && v.constructor.constructor('return typeof process')() !== 'undefined') hits.push('host'); } catch {}
        probing = false;
      };
      // CVE-2023-30547 style: a thrown Proxy whose traps inspect what the host passes in
      const trap = new Proxy({}, { get(t, k, r) { probe(r); return () => {}; }, getPrototypeOf(t) { probe(t); return null; }, has(t, k) { probe(k); return false; } });
      try { await ctx.db.insert(trap, trap); } catch (e) { probe(e); }
      try { ctx.log(trap); } catch (e) { probe(e); }
      try { await ctx.fetch(trap, trap); } catch (e) { probe(e); }
      // CVE-2023-37466 style: Promise subclass / then-hijack to catch host errors
      const origThen = Promise.prototype.then;
      Promise.prototype.then = function (f, r) { return origThen.call(this, (v) => { probe(v); return f && f(v); }, (e) => { probe(e); return r ? r(e) : Promise.reject(e); }); };
      try { await ctx.db.list('missing'); } catch (e) { probe(e); }
      Promise.prototype.then = origThen;
      // async generator throw/return with a host error inside
      async function* g() { try { yield await ctx.db.get('missing', 'x'); } catch (e) { probe(e); yield e; } }
      const it = g();
      try { const v = await it.next(); probe(v.value); await it.return(1); } catch (e) { probe(e); }
      // Symbol.species and Error.captureStackTrace on host-built errors
      try { await ctx.db.query(42); } catch (e) { probe(e); probe(Object.getPrototypeOf(e)); Error.captureStackTrace(e); probe(e.constructor); }
      return hits;
    };`;
    await deploy(s, 'vm2', src);
    const r = await invoke(s, 'vm2');
    expect(r.status, r.text).toBe(200);
    expect(r.body.result).toEqual([]);
  });

  it('prototype walks from every ctx function reach only isolate constructors; ctx is frozen', async () => {
    const src = `export default (a, ctx) => {
      const fns = { list: ctx.db.list, get: ctx.db.get, insert: ctx.db.insert, update: ctx.db.update, delete: ctx.db.delete, query: ctx.db.query, fetch: ctx.fetch, log: ctx.log, secret: ctx.secrets.get };
      const out = {};
      for (const [k, f] of Object.entries(fns)) {
        const seen = [];
        let p = f;
        for (let i = 0; p && i < 6; i++) {
          try { seen.push(p.constructor('return typeof process + typeof require')()); } catch (e) {}
          p = Object.getPrototypeOf(p);
        }
        out[k] = [...new Set(seen)];
      }
      out.frozen = [Object.isFrozen(ctx), Object.isFrozen(ctx.db), Object.isFrozen(ctx.secrets)];
      try { ctx.db.list = () => 1; out.assign = 'assigned'; } catch (e) { out.assign = e.constructor.name; }
      out.keys = Object.keys(ctx).sort();
      return out;
    };`;
    await deploy(s, 'walks', src);
    const r = await invoke(s, 'walks');
    expect(r.status, r.text).toBe(200);
    const only = ['undefinedundefined'];
    expect(r.body.result).toEqual({
      list: only,
      get: only,
      insert: only,
      update: only,
      delete: only,
      query: only,
      fetch: only,
      log: only,
      secret: only,
      frozen: [true, true, true],
      assign: 'TypeError',
      keys: ['db', 'fetch', 'log', 'secrets', 'user'],
    });
  });

  it('dynamic import() is refused', async () => {
    await deploy(s, 'dynimport', 'export default async () => { const m = await import("node:fs"); return typeof m; };');
    const r = await invoke(s, 'dynimport');
    expect(r.status).toBe(500);
    expect(r.body.error.code).toBe('function_error');
  });
});

describe('exhaustion: each ends in its error while /health and another project stay responsive', () => {
  it('while(true) → 504', async () => {
    await deploy(s, 'spin', 'export default () => { while (true) {} };', { timeout_ms: 1500 });
    const hostile = invoke(s, 'spin');
    await whileHostile(hostile);
    const r = await hostile;
    expect(r.status).toBe(504);
    expect(r.body.error.code).toBe('function_timeout');
  });

  it('a microtask loop → 504', async () => {
    await deploy(s, 'micro', 'export default async () => { for (;;) await null; };', { timeout_ms: 1500 });
    const hostile = invoke(s, 'micro');
    await whileHostile(hostile);
    expect((await hostile).body.error.code).toBe('function_timeout');
  });

  it('Atomics.wait → 504', async () => {
    await deploy(s, 'atomics', 'export default () => { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); return "woke"; };', { timeout_ms: 1500 });
    const hostile = invoke(s, 'atomics');
    await whileHostile(hostile);
    expect((await hostile).body.error.code).toBe('function_timeout');
  });

  it("'x'.repeat(2**29) → 500 function_error", async () => {
    await deploy(s, 'longstr', "export default () => 'x'.repeat(2 ** 29).length;");
    const r = await invoke(s, 'longstr');
    expect(r.status).toBe(500);
    expect(r.body.error).toEqual({ code: 'function_error', message: 'Invalid string length' });
  });

  it('an array bomb → 500 function_out_of_memory', async () => {
    await deploy(s, 'bomb', 'export default () => { const a = [a => a]; for (;;) a.push(a.concat(a)); };', { memory_mb: 32 });
    const hostile = invoke(s, 'bomb');
    await whileHostile(hostile);
    const r = await hostile;
    expect(r.status).toBe(500);
    expect(r.body.error.code).toBe('function_out_of_memory');
  });
});

describe('ctx.fetch refuses private addresses (no loopback allowed here)', () => {
  it('127.0.0.1, [::1], 0x7f000001 and 169.254.169.254 are refused with outbound_blocked', async () => {
    const src = `export default async (urls, ctx) => {
      const out = [];
      for (const u of urls) { try { await ctx.fetch(u); out.push('fetched'); } catch (e) { out.push(e.code); } }
      return out;
    };`;
    await deploy(s, 'ssrf', src);
    const urls = ['http://127.0.0.1/', 'http://[::1]/', 'http://0x7f000001/', 'http://169.254.169.254/latest/meta-data/', 'https://10.0.0.1/'];
    const r = await invoke(s, 'ssrf', urls);
    expect(r.status, r.text).toBe(200);
    expect(r.body.result).toEqual(['outbound_blocked', 'outbound_blocked', 'outbound_blocked', 'outbound_blocked', 'outbound_blocked']);
  });
});

describe('isolation between projects', () => {
  it("a function never sees another project's function or isolate", async () => {
    await deploy(s, 'calm', 'globalThis.mark = "project one"; export default () => globalThis.mark;');
    expect((await invoke(s, 'calm')).body.result).toBe('project one');
    const theirs = await invoke(s, 'calm', null, other);
    expect(theirs.body.result).toBe('calm');
  });
});
