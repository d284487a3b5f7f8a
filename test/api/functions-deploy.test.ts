import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, deploy, invoke } from '../helpers/functions.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
const svc = () => ({ key: s.keys.service });
const sha = (t: string) => createHash('sha256').update(t).digest('hex');

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

describe('deploy', () => {
  it('JSON deploy: 201 with the pinned shape, then 200 and version 2; invoke answers result, logs, version, duration_ms', async () => {
    const src = 'export default async (args) => ({ sum: args.a + args.b });';
    const r = await call(s, 'PUT', '/functions/add', { source: src }, svc());
    expect(r.status, r.text).toBe(201);
    expect(r.body).toEqual({
      name: 'add',
      version: 1,
      language: 'js',
      size: Buffer.byteLength(src),
      sha256: sha(src),
      options: { timeout_ms: 5000, memory_mb: 64, access: 'key', secrets: [] },
      created_at: expect.any(String),
    });
    const i = await invoke(s, 'add', { a: 2, b: 3 });
    expect(i.status, i.text).toBe(200);
    expect(i.body).toEqual({ result: { sum: 5 }, logs: [], version: 1, duration_ms: expect.any(Number) });

    const src2 = 'export async function handler(args) { console.log("two", args.a); return args.a * args.b; }';
    const r2 = await call(s, 'PUT', '/functions/add', { code: src2, timeout_ms: 1000 }, svc());
    expect(r2.status, r2.text).toBe(200);
    expect(r2.body.version).toBe(2);
    expect(r2.body.options.timeout_ms).toBe(1000);
    const i2 = await invoke(s, 'add', { a: 2, b: 3 });
    expect(i2.body.result).toBe(6);
    expect(i2.body.version).toBe(2);
    expect(i2.body.logs).toEqual([{ level: 'info', message: 'two 2', at: expect.any(String) }]);
    // versions are immutable: version 1 still runs as deployed
    const old = await invoke(s, 'add', { a: 2, b: 3 }, {}, '?version=1');
    expect(old.body).toMatchObject({ result: { sum: 5 }, version: 1 });
    expect((await invoke(s, 'add', {}, {}, '?version=9')).status).toBe(404);
    expect((await invoke(s, 'add', {}, {}, '?version=x')).status).toBe(400);
  });

  it('raw JavaScript and TypeScript sources; TypeScript goes through esbuild', async () => {
    const js = await s.req('/functions/rawjs', { method: 'PUT', key: s.keys.service, headers: { 'content-type': 'application/javascript' }, body: 'export default () => "raw";' });
    expect(js.status).toBe(201);
    expect(((await js.json()) as { language: string }).language).toBe('js');
    const tsSrc = 'interface A { n: number }\nexport default async (a: A): Promise<number> => a.n * 2;';
    const ts = await s.req('/functions/rawts', { method: 'PUT', key: s.keys.service, headers: { 'content-type': 'application/typescript' }, body: tsSrc });
    expect(ts.status).toBe(201);
    expect(await ts.json()).toMatchObject({ language: 'ts', sha256: sha(tsSrc), size: Buffer.byteLength(tsSrc) });
    expect((await invoke(s, 'rawts', { n: 21 })).body.result).toBe(42);
    const tsJson = await call(s, 'PUT', '/functions/jsonts', { source: 'export default (): string => "typed";', language: 'ts' }, svc());
    expect(tsJson.status, tsJson.text).toBe(201);
    expect((await invoke(s, 'jsonts')).body.result).toBe('typed');
    const other = await s.req('/functions/x', { method: 'PUT', key: s.keys.service, headers: { 'content-type': 'text/plain' }, body: 'x' });
    expect(other.status).toBe(415);
  });

  it('a syntax error is 400 invalid_source with line and column, and the old version keeps serving', async () => {
    await deploy(s, 'stable', 'export default () => "v1";');
    const bad = await call(s, 'PUT', '/functions/stable', { source: 'export default () => {\n  let x = ;\n};' }, svc());
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_source');
    expect(bad.body.error.details).toEqual({ line: 2, column: 11 });
    expect(bad.body.error.message).toContain('line 2, column 11');
    const badTs = await call(s, 'PUT', '/functions/stable', { source: 'const a: number = ;\nexport default () => a;', language: 'ts' }, svc());
    expect(badTs.status).toBe(400);
    expect(badTs.body.error).toMatchObject({ code: 'invalid_source', details: { line: 1, column: 19 } });
    const i = await invoke(s, 'stable');
    expect(i.body).toMatchObject({ result: 'v1', version: 1 });
    expect((await call(s, 'GET', '/functions/stable', undefined, svc())).body.versions).toHaveLength(1);
  });

  it('imports, a missing handler and a stuck top level are refused at deploy', async () => {
    const imp = await call(s, 'PUT', '/functions/imp', { source: 'import fs from "node:fs";\nexport default () => fs;' }, svc());
    expect(imp.status).toBe(400);
    expect(imp.body.error.code).toBe('invalid_source');
    expect(imp.body.error.message).toContain('import is not allowed');
    const none = await call(s, 'PUT', '/functions/none', { source: 'export const x = 1;' }, svc());
    expect(none.body.error.code).toBe('invalid_source');
    const loop = await call(s, 'PUT', '/functions/loop', { source: 'while (true) {}\nexport default () => 1;' }, svc());
    expect(loop.status).toBe(400);
    expect(loop.body.error.code).toBe('invalid_source');
    expect((await call(s, 'GET', '/functions/imp', undefined, svc())).status).toBe(404);
  });

  it('names, reserved names, options and sizes are checked', async () => {
    for (const name of ['Bad', '1a', 'a'.repeat(64)]) {
      const r = await call(s, 'PUT', `/functions/${name}`, { source: 'export default () => 1' }, svc());
      expect(r.status, name).toBe(400);
      expect(r.body.error.details).toEqual({ field: 'name' });
    }
    expect((await call(s, 'PUT', '/functions/jobs', { source: 'export default () => 1' }, svc())).status).toBe(400);
    const cases: [Record<string, unknown>, string][] = [
      [{ timeout_ms: 30_001 }, 'timeout_ms'],
      [{ timeout_ms: 0 }, 'timeout_ms'],
      [{ memory_mb: 257 }, 'memory_mb'],
      [{ access: 'public' }, 'access'],
      [{ secrets: ['has space'] }, 'secrets'],
      [{ language: 'py' }, 'language'],
      [{ nope: 1 }, 'nope'],
    ];
    for (const [opt, field] of cases) {
      const r = await call(s, 'PUT', '/functions/opts', { source: 'export default () => 1', ...opt }, svc());
      expect(r.status, field).toBe(400);
      expect(r.body.error.details).toEqual({ field });
    }
    const big = 'export default () => 1;\n//' + 'x'.repeat(1024 * 1024);
    const r = await s.req('/functions/big', { method: 'PUT', key: s.keys.service, headers: { 'content-type': 'application/javascript' }, body: big });
    expect(r.status).toBe(413);
    const rj = await call(s, 'PUT', '/functions/big', { source: big }, svc());
    expect(rj.status).toBe(413);
  });

  it('deploy, list, get and delete need the service role; invoke needs functions:invoke', async () => {
    expect((await call(s, 'PUT', '/functions/pub', { source: 'export default () => 1' })).status).toBe(403);
    expect((await call(s, 'GET', '/functions')).status).toBe(403);
    expect((await call(s, 'DELETE', '/functions/add')).status).toBe(403);
    expect((await call(s, 'POST', '/functions/add', {}, { key: null })).status).toBe(401);
  });
});

describe('list, get and delete', () => {
  it('lists functions with their current version; get adds versions; delete is 204 then 404', async () => {
    await deploy(s, 'listed', 'export default () => 1;', { memory_mb: 32 });
    await deploy(s, 'listed', 'export default () => 2;', { memory_mb: 32 });
    const list = await call(s, 'GET', '/functions', undefined, svc());
    expect(list.status).toBe(200);
    const listed = list.body.functions.find((f: { name: string }) => f.name === 'listed');
    expect(listed).toEqual({ name: 'listed', version: 2, language: 'js', options: { timeout_ms: 5000, memory_mb: 32, access: 'key', secrets: [] }, updated_at: expect.any(String) });
    const names = list.body.functions.map((f: { name: string }) => f.name);
    expect(names).toEqual([...names].sort());
    const g = await call(s, 'GET', '/functions/listed', undefined, svc());
    expect(g.body).toMatchObject({ name: 'listed', version: 2, language: 'js' });
    expect(g.body.versions.map((v: { version: number }) => v.version)).toEqual([2, 1]);
    expect(g.body.versions[0]).toEqual({ version: 2, language: 'js', size: 23, sha256: sha('export default () => 2;'), created_at: expect.any(String) });
    expect((await invoke(s, 'listed')).body.result).toBe(2);
    expect((await call(s, 'DELETE', '/functions/listed', undefined, svc())).status).toBe(204);
    expect((await call(s, 'DELETE', '/functions/listed', undefined, svc())).status).toBe(404);
    expect((await invoke(s, 'listed')).status).toBe(404);
    expect((await call(s, 'GET', '/functions/listed', undefined, svc())).status).toBe(404);
    // deployed again: a new version 1 with fresh module state
    await deploy(s, 'listed', 'let n = 0; export default () => ++n;');
    expect((await invoke(s, 'listed')).body).toMatchObject({ result: 1, version: 1 });
    expect((await invoke(s, 'listed')).body.result).toBe(2);
  });
});

describe('runtime', () => {
  it('GET /functions/runtime answers the engine, languages, limits and ctx names', async () => {
    const r = await call(s, 'GET', '/functions/runtime');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      engine: 'isolated-vm',
      node: process.versions.node,
      v8: expect.any(String),
      platform_edge: expect.any(String),
      languages: ['js', 'ts'],
      limits: {
        timeout_ms: { default: 5000, max: 30000 },
        memory_mb: { default: 64, min: 8, max: 256 },
        payload_bytes: 1048576,
        source_bytes: 1048576,
        fetch_calls: 10,
        fetch_response_bytes: 5242880,
        log_lines: 100,
        log_bytes: 65536,
        concurrent_calls: 4,
      },
      ctx: ['user', 'db.list', 'db.get', 'db.insert', 'db.update', 'db.delete', 'db.query', 'secrets.get', 'fetch', 'log'],
    });
  });
});
