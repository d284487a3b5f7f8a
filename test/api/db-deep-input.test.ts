import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Issue 17 "Bad input": input nested 5,000 deep is a clear 400 on every door that parses
// it (raw SQL, GraphQL, JSON-RPC), never a stack overflow or a 500.
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
}, 60_000);
afterAll(async () => {
  await s.close();
});

const post = (path: string, body: string) => s.req(path, { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body });
const DEPTH = 5000;

describe('input nested 5,000 deep', () => {
  it('is a 400 naming the nesting on /db/query, and the server still answers', async () => {
    let e = '1';
    for (let i = 0; i < DEPTH; i++) e = `(${e} + 1)`;
    const res = await post('/db/query', JSON.stringify({ sql: `select ${e} as x` }));
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error).toMatchObject({ code: 'unsupported_sql', message: 'not supported: expressions nested deeper than 200 levels' });
    let f = 'true';
    for (let i = 0; i < DEPTH; i++) f = `not (${f})`;
    const res2 = await post('/db/query', JSON.stringify({ sql: `select ${f} as x` }));
    expect(res2.status).toBe(400);
    expect(((await res2.json()) as { error: { details: { sqlstate: string } } }).error.details.sqlstate).toBe('42601');
    const ok = await post('/db/query', JSON.stringify({ sql: 'select 1 as x' }));
    expect(await ok.json()).toMatchObject({ rows: [{ x: 1 }] });
  });

  it('is a 400 on /db/graphql before graphql parses it', async () => {
    for (const query of [`{ ${'a { '.repeat(DEPTH)}b${' }'.repeat(DEPTH)} }`, `{ t(where: ${'{ _or: ['.repeat(DEPTH)}{}${'] }'.repeat(DEPTH)}) { id } }`]) {
      const res = await post('/db/graphql', JSON.stringify({ query }));
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ errors: [{ message: 'the query nests deeper than 64 levels', extensions: { code: 'invalid_request' } }] });
    }
    // brackets inside strings and comments do not count
    const fine = await post('/db/graphql', JSON.stringify({ query: `# ${'{'.repeat(100)}\n{ __typename }` }));
    expect(await fine.json()).toEqual({ data: { __typename: 'Query' } });
  });

  it('is a JSON-RPC parse error on /db/rpc', async () => {
    const res = await post('/db/rpc', `{"jsonrpc":"2.0","id":1,"method":"db.list","params":{"table":"x","filter":${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}}}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error: request body nests deeper than 64 levels' } });
  });
});
