import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../helpers/raw.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// The protocol edges of the HTTP backends (issue 11, items 4, 5, 6 and 11): pipelining,
// header and URL limits, slow clients and connection caps, body limits on every route.

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
  const mk = await s.req('/db/tables', { method: 'POST', key: s.keys.service, body: JSON.stringify({ name: 'pp' }), headers: { 'content-type': 'application/json' } });
  expect(mk.status).toBe(201);
  const rel = { name: 'pq', type: 'relational', columns: [{ name: 'tag', type: 'text' }] };
  expect((await s.req('/db/tables', { method: 'POST', key: s.keys.service, body: JSON.stringify(rel), headers: { 'content-type': 'application/json' } })).status).toBe(201);
});
afterAll(() => s.close());

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Splits a raw HTTP/1.1 byte stream into its responses (Content-Length framed, as both backends send them). */
function answers(raw: string): Answer[] {
  const out: Answer[] = [];
  let at = 0;
  while (at < raw.length) {
    const end = raw.indexOf('\r\n\r\n', at);
    if (end === -1) throw new Error(`a truncated response: ${JSON.stringify(raw.slice(at))}`);
    const [statusLine, ...lines] = raw.slice(at, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(':');
      headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    out.push({ status: Number(statusLine!.split(' ')[1]), headers, body: raw.slice(end + 4, end + 4 + length) });
    at = end + 4 + length;
  }
  return out;
}

const key = (k: string): string => `X-Service-Key: ${k}\r\n`;
const post = (path: string, body: string, id: string, k = s.keys.publishable): string =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\n${key(k)}X-Request-Id: ${id}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const get = (path: string, id: string, extra = ''): string => `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${id}\r\n${extra}\r\n`;

const rowsWith = async (tag: string): Promise<unknown[]> => {
  const res = await s.req(`/db/tables/pp/rows?limit=100`);
  expect(res.status).toBe(200);
  const { rows } = (await res.json()) as { rows: { data: { tag?: string } }[] };
  return rows.filter((r) => r.data.tag === tag);
};
const usersCount = async (): Promise<number> => {
  const res = await s.req('/auth/users?limit=1', { key: s.keys.service });
  expect(res.status).toBe(200);
  return ((await res.json()) as { total: number }).total;
};

describe('HTTP/1.1 pipelining (item 4)', () => {
  it('answers three pipelined GET /health in order on one connection', async () => {
    const raw = await rawRequest(s.url, ['one', 'two', 'three'].map((id) => get('/health', id)).join(''), 1000);
    const got = answers(raw);
    expect(got.map((a) => [a.status, a.headers['x-request-id']])).toEqual([
      [200, 'one'],
      [200, 'two'],
      [200, 'three'],
    ]);
    expect(JSON.parse(got[2]!.body)).toMatchObject({ status: 'ok' });
  });

  it('answers two pipelined row inserts in order, and stores each once', async () => {
    const raw = await rawRequest(s.url, post('/db/tables/pp/rows', '{"data":{"tag":"pipe2","n":1}}', 'a') + post('/db/tables/pp/rows', '{"data":{"tag":"pipe2","n":2}}', 'b'), 1000);
    const got = answers(raw);
    expect(got.map((a) => [a.status, a.headers['x-request-id']])).toEqual([
      [201, 'a'],
      [201, 'b'],
    ]);
    expect(got.map((a) => (JSON.parse(a.body) as { data: unknown }).data)).toEqual([
      { tag: 'pipe2', n: 1 },
      { tag: 'pipe2', n: 2 },
    ]);
    expect(await rowsWith('pipe2')).toHaveLength(2);
  });

  it('answers a request that awaits when it is the last of a pipelined write', async () => {
    const before = await usersCount();
    const raw = await rawRequest(s.url, post('/db/tables/pp/rows', '{"data":{"tag":"pipe3"}}', 'a') + post('/auth/anonymous', '', 'b'), 1000);
    const got = answers(raw);
    expect(got.map((a) => [a.status, a.headers['x-request-id']])).toEqual([
      [201, 'a'],
      [200, 'b'],
    ]);
    expect(await rowsWith('pipe3')).toHaveLength(1);
    expect(await usersCount()).toBe(before + 1);
  });

  it('a request pipelined behind one that awaits: node answers both; uWS closes the connection and runs neither', async () => {
    // A raw SQL insert goes to the worker pool (it awaits); a row insert is pipelined behind it.
    const sql = JSON.stringify({ sql: "insert into pq (id, tag, created_at, updated_at) values (gen_random_uuid(), 'pipe4', now(), now())" });
    const raw = await rawRequest(s.url, post('/db/query', sql, 'a', s.keys.service) + post('/db/tables/pp/rows', '{"data":{"tag":"pipe4"}}', 'b'), 1000);
    const inPq = async (): Promise<number> => {
      const res = await s.req('/db/query', { method: 'POST', key: s.keys.service, body: JSON.stringify({ sql: "select count(*)::int as n from pq where tag = 'pipe4'" }), headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(200);
      return ((await res.json()) as { rows: { n: number }[] }).rows[0]!.n;
    };
    if (s.backend === 'node') {
      expect(answers(raw).map((a) => [a.status, a.headers['x-request-id']])).toEqual([
        [200, 'a'],
        [201, 'b'],
      ]);
      expect(await rowsWith('pipe4')).toHaveLength(1);
      expect(await inPq()).toBe(1);
    } else {
      // The pinned uWS closes a connection on which a request arrives while an answer is pending
      // (docs/api.md, "HTTP/1.1 pipelining"): nothing is answered, so nothing may have run.
      expect(raw).toBe('');
      expect(await rowsWith('pipe4')).toHaveLength(0);
      expect(await inPq()).toBe(0);
    }
  });
});

describe('a body limit on every route (item 11)', () => {
  const big = '{"pad":"' + 'x'.repeat(2 * 1024 * 1024) + '"}';

  it('a 2 MB POST /auth/anonymous (a route that reads no body) is 413 and creates no user', async () => {
    const before = await usersCount();
    const res = await s.req('/auth/anonymous', { method: 'POST', body: big, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: { code: 'payload_too_large', message: 'request body exceeds the limit of 1024 bytes' } });
    expect(await usersCount()).toBe(before);
  });

  it('the same body sent chunked (no Content-Length) is cut off with 413 too', async () => {
    const before = await usersCount();
    const chunk = Buffer.byteLength(big).toString(16);
    const raw = await rawRequest(s.url, `POST /auth/anonymous HTTP/1.1\r\nHost: x\r\n${key(s.keys.publishable)}Transfer-Encoding: chunked\r\n\r\n${chunk}\r\n${big}\r\n0\r\n\r\n`, 1000);
    const [first] = answers(raw);
    expect(first!.status).toBe(413);
    expect(JSON.parse(first!.body)).toEqual({ error: { code: 'payload_too_large', message: 'request body exceeds the limit of 1024 bytes' } });
    expect(await usersCount()).toBe(before);
  });

  it('a small body on a route that reads none is still accepted and ignored', async () => {
    const res = await s.req('/auth/anonymous', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ user: { is_anonymous: true } });
  });

  it('a GET with a body over the limit is 413', async () => {
    const raw = await rawRequest(s.url, `GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 2048\r\n\r\n${'x'.repeat(2048)}`, 1000);
    const [first] = answers(raw);
    expect(first!.status).toBe(413);
    expect(JSON.parse(first!.body)).toEqual({ error: { code: 'payload_too_large', message: 'request body exceeds the limit of 1024 bytes' } });
  });

  it('a JSON route keeps its own limit: 1 MiB on rows', async () => {
    const res = await s.req('/db/tables/pp/rows', { method: 'POST', body: big, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: { code: 'payload_too_large', message: 'request body exceeds the limit of 1048576 bytes' } });
  });
});
